package wire

import (
	"math"
	"reflect"
	"testing"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TestEventRoundTrip: every event kind survives Event then ParseEvent.
func TestEventRoundTrip(t *testing.T) {
	for _, ev := range []control.Event{
		{Type: control.EvStep, Step: 7, TimeNS: 99},
		{Type: control.EvLoss, Step: 7, Loss: math.Inf(1)},
		{Type: control.EvDiag, Step: 8, Group: "head", CosBinary: -0.5, CosTernary: 0.25},
		{Type: control.EvTelemetry, TimeNS: 5, Telemetry: control.Telemetry{TimeNS: 5, DemandGBps: 1, CapacityGBps: 2, LineReads: 3}},
		{Type: control.EvNonFinite, Step: 9, Group: "backbone"},
	} {
		got, err := ParseEvent("event", Event(ev))
		if err != nil || !reflect.DeepEqual(got, ev) {
			t.Errorf("%+v: round trip %+v, %v", ev, got, err)
		}
	}
	if _, err := ParseEvent("event", &pb.Event{}); err == nil {
		t.Error("empty event accepted")
	}
}

// TestModes: the wire values are cxl.Mode + 1 (hand-written table), and
// 0 and out-of-range values are refused with the field's name.
func TestModes(t *testing.T) {
	want := map[cxl.Mode]pb.Mode{cxl.Identity: pb.Mode_MODE_IDENTITY, cxl.FP32Bypass: pb.Mode_MODE_FP32_BYPASS, cxl.GBinary: pb.Mode_MODE_G_BINARY, cxl.GTernary: pb.Mode_MODE_G_TERNARY,
		cxl.Int8Sum: pb.Mode_MODE_INT8_SUM, cxl.BFPSum: pb.Mode_MODE_BFP8_SUM}
	if len(want) != cxl.NumModes || len(pb.Mode_name) != cxl.NumModes+1 {
		t.Fatalf("%d modes in cxl, %d in the proto (with MODE_UNSPECIFIED)", cxl.NumModes, len(pb.Mode_name))
	}
	for m, w := range want {
		if Mode(m) != w {
			t.Errorf("%v -> %v, want %v", m, Mode(m), w)
		}
		if back, err := ParseMode("mode", w); err != nil || back != m {
			t.Errorf("%v -> %v %v", w, back, err)
		}
	}
	for _, bad := range []pb.Mode{0, 7, -1} {
		if _, err := ParseMode("ops[2].set_mode.mode", bad); err == nil || err.(*FieldError).Field != "ops[2].set_mode.mode" {
			t.Errorf("mode %d: %v", bad, err)
		}
	}
	for f, w := range map[lowbit.Format]pb.Format{lowbit.FP32: pb.Format_FORMAT_UNSPECIFIED, lowbit.Int8: pb.Format_FORMAT_INT8, lowbit.BFP8: pb.Format_FORMAT_BFP8} {
		if Format(f) != w {
			t.Errorf("%v -> %v, want %v", f, Format(f), w)
		}
		if back, err := ParseFormat("format", w); err != nil || back != f {
			t.Errorf("%v -> %v %v", w, back, err)
		}
	}
	if _, err := ParseFormat("format", 3); err == nil || err.(*FieldError).Field != "format" {
		t.Errorf("format 3: %v", err)
	}
	if l, err := ParseLayout("layout", pb.Layout_LAYOUT_UNSPECIFIED, lowbit.WorkerMajor); err != nil || l != lowbit.WorkerMajor {
		t.Errorf("unspecified layout: %v %v", l, err)
	}
	if _, err := ParseLayout("layout", 3, lowbit.ElementMajor); err == nil {
		t.Error("layout 3 accepted")
	}
}

// TestSessionConfigRoundTrip: a config with every field changed from the
// defaults survives SessionConfig then ParseSessionConfig; an empty wire
// config is control.DefaultConfig (with its groups).
func TestSessionConfigRoundTrip(t *testing.T) {
	cfg := control.Config{Groups: []string{"a", "b"}, Default: control.LowBitDefault, LowBitMode: cxl.GTernary, WarmupSteps: 3,
		Ladder: control.Ladder{BinaryMin: 0.1, TernaryMin: 0.2}, LossK: 0.3, LossH: 0.4, LossAlpha: 0.5, CooldownSteps: 6, CalibrationSteps: 7,
		Commander: control.CommanderConfig{Enabled: true, RelievePressure: 0.9, ReleasePressure: 0.8, StaleNS: 10, Smooth: 0.5}}
	got, params, err := ParseSessionConfig("config", SessionConfig(cfg, []uint64{11, 12}))
	if err != nil || !reflect.DeepEqual(got, cfg) || !reflect.DeepEqual(params, []uint64{11, 12}) {
		t.Fatalf("round trip %+v %v %v", got, params, err)
	}
	def, _, err := ParseSessionConfig("config", &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}})
	want := control.DefaultConfig("g")
	if err != nil || !reflect.DeepEqual(def, want) {
		t.Fatalf("defaults %+v, want %+v (%v)", def, want, err)
	}
}
