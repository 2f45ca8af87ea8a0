package serve

import (
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
// a small device with two regions: no panic, and on success one response
// line per read line and one sequence number per transaction.
func FuzzTransact(f *testing.F) {
	seed := []*pb.TransactRequest{
		{Ops: []*pb.Op{{Op: &pb.Op_Write{Write: &pb.Write{Addr: 0, Data: make([]byte, 128)}}}, {Op: &pb.Op_Read{Read: &pb.Read{Addr: 0, Lines: 2}}}}},
		{Ops: []*pb.Op{{Op: &pb.Op_SetMode{SetMode: &pb.SetMode{Region: 1, Mode: pb.Mode_MODE_G_TERNARY}}}, {Op: &pb.Op_Read{Read: &pb.Read{Addr: 4096 + 256, Lines: 3, Tag: 65535}}}}},
		{Ops: []*pb.Op{{Op: &pb.Op_Read{Read: &pb.Read{Addr: 3, Lines: 1}}}, {Op: &pb.Op_Write{Write: &pb.Write{Addr: 1 << 63, Data: []byte{1}}}}}},
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
		steps, reads, _, err := decodeOps(req.GetOps(), 1<<12, 1<<12)
		if err != nil {
			return
		}
		out, _ := d.run(steps, reads)
		n := 0
		for _, s := range steps {
			n += s.n
		}
		if len(out.GetData()) != reads*cxl.LineBytes || len(out.GetReadModes()) != reads || out.GetTransactions() != uint64(n) || dev.Seq() != uint64(n) {
			t.Fatalf("%d reads, %d transactions: response %d bytes, %d modes, %d transactions, seq %d", reads, n, len(out.GetData()), len(out.GetReadModes()), out.GetTransactions(), dev.Seq())
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
