package serve

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// FuzzTransact decodes arbitrary bytes as a TransactRequest and runs it on
// a small device with two regions and a 4 KiB shared buffer (id 1): no
// panic, and on success one response line per read line, one mode per
// read and shared read line, one sequence number per transaction, and
// every shared read's lines in the buffer equal to the same reads run
// again with their data in the response.
func FuzzTransact(f *testing.F) {
	seed := []*pb.TransactRequest{
		{Ops: []*pb.Op{{Op: &pb.Op_Write{Write: &pb.Write{Addr: 0, Data: make([]byte, 128)}}}, {Op: &pb.Op_Read{Read: &pb.Read{Addr: 0, Lines: 2}}}}},
		{Ops: []*pb.Op{{Op: &pb.Op_SetMode{SetMode: &pb.SetMode{Region: 1, Mode: pb.Mode_MODE_G_TERNARY}}}, {Op: &pb.Op_Read{Read: &pb.Read{Addr: 4096 + 256, Lines: 3, Tag: 65535}}}}},
		{Ops: []*pb.Op{{Op: &pb.Op_Read{Read: &pb.Read{Addr: 3, Lines: 1}}}, {Op: &pb.Op_Write{Write: &pb.Write{Addr: 1 << 63, Data: []byte{1}}}}}},
		{Ops: []*pb.Op{{Op: &pb.Op_SharedWrite{SharedWrite: &pb.SharedWrite{Buffer: 1, Offset: 64, Addr: 0, Lines: 4}}}, {Op: &pb.Op_SharedRead{SharedRead: &pb.SharedRead{Buffer: 1, Offset: 1024, Addr: 0, Lines: 4, Tag: 7}}}}},
		{Ops: []*pb.Op{{Op: &pb.Op_SharedRead{SharedRead: &pb.SharedRead{Buffer: 1, Offset: 4032, Addr: 4096 + 512, Lines: 2}}}, {Op: &pb.Op_SharedWrite{SharedWrite: &pb.SharedWrite{Buffer: 2, Lines: 1}}}}},
	}
	for _, r := range seed {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req pb.TransactRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		dev, _ := host.Open(host.Config{Workers: 8, Capacity: 1 << 14})
		dev.MapRegion(cxl.Region{Name: "em", Size: 1024, Workers: 8, Gate: lowbit.PaperGate})
		dev.MapRegion(cxl.Region{Name: "wm", Base: 4096, Size: 4 * 128, Workers: 4, Layout: lowbit.WorkerMajor, Gate: lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 2}})
		d := &device{capacity: 1 << 14, dev: dev}
		steps, cnt, err := decodeOps(req.GetOps(), 1<<12, 1<<12, 1<<12)
		if err != nil {
			return
		}
		buf := &sharedBuf{id: 1, bytes: 4096, mem: make([]byte, 4096)}
		for i := range buf.mem {
			buf.mem[i] = byte(i * 7)
		}
		if _, err := bindShared(steps, map[uint64]*sharedBuf{1: buf}, new([]byte)); err != nil {
			return
		}
		out, _ := d.run(steps, cnt)
		n := 0
		for _, s := range steps {
			n += s.n
		}
		modes, _, err := wire.ParseReadSpans("read_spans", out.GetReadSpans(), cnt.reads+cnt.sharedReads)
		if err != nil || len(out.GetData()) != cnt.reads*cxl.LineBytes || out.GetTransactions() != uint64(n) || dev.Seq() != uint64(n) {
			t.Fatalf("%+v, %d transactions: response %d bytes, spans %v (%v), %d transactions, seq %d", cnt, n, len(out.GetData()), modes, err, out.GetTransactions(), dev.Seq())
		}
		// Spans are maximal: neighbours differ in mode or flag.
		for k := 1; k < len(out.GetReadSpans()); k++ {
			a, b := out.GetReadSpans()[k-1], out.GetReadSpans()[k]
			if a.GetMode() == b.GetMode() && a.GetTransformed() == b.GetTransformed() {
				t.Fatalf("spans %d and %d not merged: %v", k-1, k, out.GetReadSpans())
			}
		}
		// A batch that ends in a shared read: the same lines read again
		// as a plain read (reads change nothing) must equal the buffer's,
		// unless the batch's ops overlap in the buffer.
		if k := len(steps) - 1; k >= 0 && steps[k].shared && steps[k].op == cxl.MemRd && len(steps) == 1 {
			last := &steps[k]
			got := append([]byte(nil), last.dst...)
			again, _ := d.run([]step{{op: cxl.MemRd, addr: last.addr, n: last.n, tag: last.tag}}, counts{reads: last.n})
			if !bytes.Equal(got, again.GetData()) {
				t.Fatalf("shared read at %#x: buffer %x, read again %x", last.addr, got, again.GetData())
			}
		}
	})
}

// FuzzSession decodes arbitrary bytes as a SessionConfig and a few events
// and runs them through a session: no panic, a bad event is recorded with
// its error, and the dump replays to the same outcome.
func FuzzSession(f *testing.F) {
	cfg := &pb.SessionConfig{Groups: []*pb.Group{{Name: "g", Parameters: 9}, {Name: "h"}}, Default: pb.Default_DEFAULT_LOWBIT, Warmup: wrapperspb.Int64(1)}
	cb, _ := proto.Marshal(cfg)
	evs := &pb.SessionDump{Events: []*pb.RecordedEvent{
		{Event: &pb.Event{Event: &pb.Event_Step{Step: &pb.StepEvent{Step: 1}}}},
		{Event: &pb.Event{Event: &pb.Event_Loss{Loss: &pb.LossEvent{Step: 1, Loss: 2}}}},
		{Event: &pb.Event{Event: &pb.Event_NonFinite{NonFinite: &pb.NonFiniteEvent{Group: "g"}}}},
		{Event: &pb.Event{Event: &pb.Event_Telemetry{Telemetry: &pb.TelemetryEvent{DemandGbps: -1}}}},
	}}
	eb, _ := proto.Marshal(evs)
	f.Add(cb, eb)
	f.Add([]byte{}, []byte{})
	// A four-rung ladder with demotion, and diagnostics of every rung.
	rc := &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}, Warmup: wrapperspb.Int64(1), LadderDemote: true,
		LadderRungs: wrapperspb.String("g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95")}
	rb, _ := proto.Marshal(rc)
	diag := func(step int64, i8, b8 float64) *pb.RecordedEvent {
		return &pb.RecordedEvent{Event: &pb.Event{Event: &pb.Event_Diag{Diag: &pb.DiagEvent{Step: step, Group: "g",
			Cosines: []*pb.ModeCosine{{Mode: pb.Mode_MODE_G_BINARY, Cosine: 0.1}, {Mode: pb.Mode_MODE_G_TERNARY, Cosine: 0.1}, {Mode: pb.Mode_MODE_INT8, Cosine: i8}, {Mode: pb.Mode_MODE_BFP8, Cosine: b8}}}}}}
	}
	step := func(s int64) *pb.RecordedEvent {
		return &pb.RecordedEvent{Event: &pb.Event{Event: &pb.Event_Step{Step: &pb.StepEvent{Step: s}}}}
	}
	reb, _ := proto.Marshal(&pb.SessionDump{Events: []*pb.RecordedEvent{diag(0, 0.99, 0.99), step(0), step(1), step(2), diag(2, 0.5, 0.99), step(3)}})
	f.Add(rb, reb)
	f.Fuzz(func(t *testing.T, cb, eb []byte) {
		var c pb.SessionConfig
		var d pb.SessionDump
		if proto.Unmarshal(cb, &c) != nil || proto.Unmarshal(eb, &d) != nil {
			return
		}
		ss, err := newSession(&c)
		if err != nil {
			return
		}
		for i, rec := range d.GetEvents() {
			if i == 64 {
				break
			}
			ss.step("event", rec.GetEvent(), recordLimits{events: 1 << 10, bytes: 1 << 20})
		}
		dump := &pb.SessionDump{Config: ss.cfg, Events: ss.events}
		for _, a := range ss.plane.Log() {
			dump.Actions = append(dump.Actions, wire.Action(a))
		}
		rep, err := Replay(dump)
		if err != nil || !rep.GetMatches() {
			t.Fatalf("replay of a fresh dump: %v %s", err, rep.GetMismatch())
		}
	})
}
