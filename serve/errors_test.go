package serve_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// TestBadInput: each bad request fails with its status code and a message
// that starts with the field's path, and the server keeps serving this
// client and others.
func TestBadInput(t *testing.T) {
	ts := startServer(t, serve.Options{MaxRegions: 3, MaxSessions: 2, MaxDeviceBytes: 1 << 20})
	c := ts.dial(t)
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Map(ctx, &pb.MapRegionRequest{Name: "a", Size: 1024, Mode: pb.Mode_MODE_G_BINARY}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}, Warmup: wrapperspb.Int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Send(ctx, control.Event{Type: control.EvStep, Step: 5}); err != nil {
		t.Fatal(err)
	}
	send := func(ev control.Event) error { _, err := sess.Send(ctx, ev); return err }
	line := make([]byte, cxl.LineBytes)
	cases := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"unaligned read", func() error { _, err := d.Transact(ctx, client.ReadOp(3, 1)); return err }, codes.InvalidArgument, "ops[0].read.addr"},
		{"unaligned write", func() error { return d.Write(ctx, 65, line) }, codes.InvalidArgument, "ops[0].write.addr"},
		{"out of range", func() error { _, err := d.Transact(ctx, client.ReadOp(1<<16, 1)); return err }, codes.InvalidArgument, "ops[0].read.addr"},
		{"short line", func() error { return d.Write(ctx, 2048, line[:10]) }, codes.InvalidArgument, "ops[0].write.data"},
		{"write into a view", func() error {
			_, err := d.Map(ctx, &pb.MapRegionRequest{Name: "wm", Base: 4096, Size: 128, Workers: 2, Layout: pb.Layout_LAYOUT_WORKER_MAJOR})
			if err != nil {
				return err
			}
			_, err = d.Transact(ctx, client.WriteOp(0, line), client.WriteOp(4096+128, line))
			return err
		}, codes.InvalidArgument, "ops[1].write.addr"},
		{"unknown mode", func() error { return d.SetMode(ctx, 0, cxl.Mode(9), 0) }, codes.InvalidArgument, "mode"},
		{"unknown mode in a batch", func() error {
			_, err := d.Transact(ctx, &pb.Op{Op: &pb.Op_SetMode{SetMode: &pb.SetMode{Mode: 0}}})
			return err
		}, codes.InvalidArgument, "ops[0].set_mode.mode"},
		{"empty op", func() error { _, err := d.Transact(ctx, &pb.Op{}); return err }, codes.InvalidArgument, "ops[0]"},
		{"tag too wide", func() error {
			_, err := d.Transact(ctx, &pb.Op{Op: &pb.Op_Read{Read: &pb.Read{Lines: 1, Tag: 1 << 16}}})
			return err
		}, codes.InvalidArgument, "ops[0].read.tag"},
		{"W out of range (device)", func() error {
			_, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 10, Workers: 9})
			return err
		}, codes.InvalidArgument, "workers"},
		{"W out of range (region)", func() error {
			_, err := d.Map(ctx, &pb.MapRegionRequest{Base: 8192, Size: 1 << 12, Workers: 1025, Layout: pb.Layout_LAYOUT_WORKER_MAJOR})
			return err
		}, codes.InvalidArgument, "workers"},
		{"region overlap", func() error { _, err := d.Map(ctx, &pb.MapRegionRequest{Name: "b", Base: 512, Size: 1024}); return err }, codes.InvalidArgument, "base"},
		{"region limit", func() error {
			if _, err := d.Map(ctx, &pb.MapRegionRequest{Base: 1 << 14, Size: 64}); err != nil {
				return err
			}
			_, err := d.Map(ctx, &pb.MapRegionRequest{Base: 1 << 15, Size: 64})
			return err
		}, codes.ResourceExhausted, "device"},
		{"session limit", func() error {
			if _, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "x"}}}); err != nil {
				return err
			}
			_, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "x"}}})
			return err
		}, codes.ResourceExhausted, "the server holds"},
		{"bad gate", func() error {
			_, err := d.Map(ctx, &pb.MapRegionRequest{Base: 1 << 13, Size: 64, Gate: "margin:0"})
			return err
		}, codes.InvalidArgument, "gate"},
		{"bad capacity", func() error { _, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 100}); return err }, codes.InvalidArgument, "capacity_bytes"},
		{"device memory", func() error { _, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 20}); return err }, codes.ResourceExhausted, "capacity_bytes"},
		{"unknown device", func() error { _, err := c.Controller.GetStats(ctx, &pb.GetStatsRequest{Device: 999}); return err }, codes.NotFound, "device 999"},
		{"unknown region", func() error { return d.SetMode(ctx, 7, cxl.Aggregate(lowbit.Binary), 0) }, codes.NotFound, "region"},
		{"event out of order", func() error { return send(control.Event{Type: control.EvStep, Step: 3}) }, codes.InvalidArgument, "event.step.step"},
		{"NaN loss", func() error { return send(control.Event{Type: control.EvLoss, Step: 5, Loss: math.NaN()}) }, codes.InvalidArgument, "event.loss.loss"},
		{"NaN telemetry", func() error {
			return send(control.Event{Type: control.EvTelemetry, Telemetry: control.Telemetry{DemandGBps: math.NaN(), CapacityGBps: 1}})
		}, codes.InvalidArgument, "event.telemetry"},
		{"unknown group", func() error { return send(control.Event{Type: control.EvDiag, Step: 5, Group: "head"}) }, codes.InvalidArgument, "event.diag.group"},
		{"cosine out of range", func() error {
			return send(control.Event{Type: control.EvDiag, Step: 5, Group: "g", Cos: map[lowbit.Format]float64{lowbit.Binary: 0.5, lowbit.Ternary: 2}})
		}, codes.InvalidArgument, "event.diag.cosines"},
		{"no event", func() error { _, err := c.Control.Send(ctx, &pb.SendRequest{Session: sess.ID}); return err }, codes.InvalidArgument, "event"},
		{"bad session config", func() error {
			_, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "a b"}}})
			return err
		}, codes.InvalidArgument, "config"},
		{"low-bit mode not low-bit", func() error {
			_, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "a"}}, LowbitMode: pb.Mode_MODE_IDENTITY})
			return err
		}, codes.InvalidArgument, "config.lowbit_mode"},
		{"unknown model", func() error { _, err := c.Control.Forecast(ctx, &pb.ForecastRequest{Model: "alexnet"}); return err }, codes.InvalidArgument, "model"},
		{"unknown link", func() error {
			_, err := c.Control.Forecast(ctx, &pb.ForecastRequest{Model: "gpt2-xl", Fp32Link: "carrier-pigeon"})
			return err
		}, codes.InvalidArgument, "fp32_link"},
	}
	for _, tc := range cases {
		err := tc.call()
		st := status.Convert(err)
		if st.Code() != tc.code || !strings.HasPrefix(st.Message(), tc.field) {
			t.Errorf("%s: %v %q; want %v naming %q", tc.name, st.Code(), st.Message(), tc.code, tc.field)
		}
		if tc.code == codes.InvalidArgument {
			var br *errdetails.BadRequest
			for _, d := range st.Details() {
				if b, ok := d.(*errdetails.BadRequest); ok {
					br = b
				}
			}
			if br == nil || len(br.GetFieldViolations()) == 0 || !strings.HasPrefix(br.GetFieldViolations()[0].GetField(), tc.field) {
				t.Errorf("%s: BadRequest detail %v", tc.name, br)
			}
		}
	}
	// Still serving: this client, and a new one.
	if _, err := sess.Send(ctx, control.Event{Type: control.EvStep, Step: 6}); err != nil {
		t.Fatal(err)
	}
	c2 := ts.dial(t)
	if _, err := c2.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64}); err != nil {
		t.Fatal(err)
	}
}

// TestErrorTransactionsMatchCxl: bad transactions in a batch are counted
// by kind exactly as the in-process controller counts them, store nothing,
// and do not stop the good ones (the device's semantics).
func TestErrorTransactionsMatchCxl(t *testing.T) { eachPath(t, testErrorTransactions) }

func testErrorTransactions(t *testing.T, path string) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	p := newPair(t, c, 4096, path)
	r := cxl.Region{Name: "err", Size: 2 * cxl.LineBytes, Workers: 2, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate}
	p.mapRegion(r)
	line := make([]byte, cxl.LineBytes)
	line[0] = 0xaa
	ops := []*pb.Op{
		client.ReadOp(1, 1), client.WriteOp(63, line), client.ReadOp(1<<20, 1), client.WriteOp(1<<40, line),
		client.WriteOp(1024, line[:32]), client.ReadOp(r.ViewAddr(0, 1), 1), client.WriteOp(r.ViewAddr(0, 0), line),
		client.WriteOp(2048, line), // good
	}
	p.batch(ops...) // checks the service failed with InvalidArgument
	_, err := p.transact(ops...)
	st := status.Convert(err)
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		if b, ok := d.(*errdetails.BadRequest); ok {
			br = b
		}
	}
	fields := []string{"ops[0].read.addr", "ops[1].write.addr", "ops[2].read.addr", "ops[3].write.addr", "ops[4].write.data", "ops[5].read.addr", "ops[6].write.addr"}
	if path == viaShared { // the same ops as shared ones (a partial line stays a write)
		fields = []string{"ops[0].shared_read.addr", "ops[1].shared_write.addr", "ops[2].shared_read.addr", "ops[3].shared_write.addr", "ops[4].write.data", "ops[5].shared_read.addr", "ops[6].shared_write.addr"}
	}
	if br == nil || len(br.GetFieldViolations()) != len(fields) {
		t.Fatalf("details %v", br)
	}
	for i, f := range fields {
		if br.GetFieldViolations()[i].GetField() != f {
			t.Errorf("violation %d names %q, want %q", i, br.GetFieldViolations()[i].GetField(), f)
		}
	}
	p.runLocal(ops) // the second batch, in process too
	p.sameState()
	got, _, err := p.remote.Read(context.Background(), 2048, 1)
	if err != nil || got[0] != 0xaa {
		t.Fatalf("good write in a bad batch: %v %x", err, got[:1])
	}
	_ = wire.Mode
}

// TestMapByElements: a region mapped by element count gets the size of
// cxl.Region.DataBytes, computed here from the layout by hand.
func TestMapByElements(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 20, Workers: 3, Layout: pb.Layout_LAYOUT_WORKER_MAJOR, Gate: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Map(ctx, &pb.MapRegionRequest{Elements: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// 1000 elements = 2 plane lines (512 per line); 3 sign + 3 gate slabs.
	if r.GetSize() != 2*6*64 || r.GetPayloadLines() != 2 || r.GetElements() != 1024 || r.GetEnd() != 2*6*64+2*2*64 {
		t.Fatalf("region %v", r)
	}
	r2, err := d.Map(ctx, &pb.MapRegionRequest{Base: r.GetEnd(), Elements: 64, Layout: pb.Layout_LAYOUT_ELEMENT_MAJOR, Gate: "pattern"})
	if err != nil || r2.GetSize() != 64 || r2.GetBase() != r.GetEnd() {
		t.Fatalf("second region %v %v", r2, err)
	}
}
