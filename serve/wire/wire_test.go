package wire

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestEventRoundTrip: every event kind survives Event then ParseEvent.
func TestEventRoundTrip(t *testing.T) {
	for _, ev := range []control.Event{
		{Type: control.EvStep, Step: 7, TimeNS: 99},
		{Type: control.EvLoss, Step: 7, Loss: math.Inf(1)},
		{Type: control.EvDiag, Step: 8, Group: "head", Cos: map[lowbit.Format]float64{lowbit.Binary: -0.5, lowbit.Ternary: 0.25}},
		{Type: control.EvDiag, Step: 9, Group: "head", Cos: map[lowbit.Format]float64{lowbit.Binary: 0.5, lowbit.Ternary: 0.25, lowbit.Int8: 0.97, lowbit.BFP8: -0.125}},
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

// TestParseDiagCosines: cosines carries every rung's cosine; a mode that is
// no rung, a mode given twice or an unknown mode is an error naming the
// entry, and the paper's two modes come through as any other.
func TestParseDiagCosines(t *testing.T) {
	mc := func(m pb.Mode) *pb.ModeCosine { return &pb.ModeCosine{Mode: m, Cosine: 0.5} }
	for _, c := range []struct {
		name    string
		cosines []*pb.ModeCosine
		field   string
	}{
		{"fp32", []*pb.ModeCosine{mc(pb.Mode_MODE_FP32_BYPASS)}, "event.diag.cosines[0].mode"},
		{"identity", []*pb.ModeCosine{mc(pb.Mode_MODE_IDENTITY)}, "event.diag.cosines[0].mode"},
		{"g-binary twice", []*pb.ModeCosine{mc(pb.Mode_MODE_G_BINARY), mc(pb.Mode_MODE_INT8), mc(pb.Mode_MODE_G_BINARY)}, "event.diag.cosines[2].mode"},
		{"twice", []*pb.ModeCosine{mc(pb.Mode_MODE_BFP8), mc(pb.Mode_MODE_BFP8)}, "event.diag.cosines[1].mode"},
		{"unknown", []*pb.ModeCosine{mc(99)}, "event.diag.cosines[0].mode"},
	} {
		e := &pb.Event{Event: &pb.Event_Diag{Diag: &pb.DiagEvent{Group: "g", Cosines: c.cosines}}}
		_, err := ParseEvent("event", e)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.field)
		}
	}
	// Every rung's cosine, the paper's two included, round-trips through
	// cosines.
	ev := control.Event{Type: control.EvDiag, Step: 4, Group: "g", Cos: map[lowbit.Format]float64{lowbit.Binary: 0.7, lowbit.Ternary: 0.5, lowbit.BFP8: -0.25}}
	w := Event(ev)
	if n := len(w.GetDiag().GetCosines()); n != 3 {
		t.Errorf("%d wire cosines, want 3", n)
	}
	if back, err := ParseEvent("event", w); err != nil || !reflect.DeepEqual(back, ev) {
		t.Errorf("diag round trip: %+v, %v; want %+v", back, err, ev)
	}
	// EventField names the cosines of a bad cosine, whichever rung's.
	known := func(string) bool { return true }
	for _, c := range []struct {
		cos   map[lowbit.Format]float64
		field string
	}{
		{map[lowbit.Format]float64{lowbit.Binary: math.NaN(), lowbit.Ternary: 0}, "event.diag.cosines"},
		{map[lowbit.Format]float64{lowbit.Binary: 0, lowbit.Ternary: 2}, "event.diag.cosines"},
		{map[lowbit.Format]float64{lowbit.Binary: 0, lowbit.Ternary: 0, lowbit.Int8: math.Inf(1)}, "event.diag.cosines"},
	} {
		if f := EventField("event", control.Event{Type: control.EvDiag, Group: "g", Cos: c.cos}, known); f != c.field {
			t.Errorf("%v: field %s, want %s", c.cos, f, c.field)
		}
	}
}

// TestModes: the wire values are cxl.Mode + 1 (hand-written table), and
// 0 and out-of-range values are refused with the field's name.
func TestModes(t *testing.T) {
	want := map[cxl.Mode]pb.Mode{cxl.Identity: pb.Mode_MODE_IDENTITY, cxl.FP32Bypass: pb.Mode_MODE_FP32_BYPASS, cxl.Aggregate(lowbit.Binary): pb.Mode_MODE_G_BINARY, cxl.Aggregate(lowbit.Ternary): pb.Mode_MODE_G_TERNARY,
		cxl.Aggregate(lowbit.Int8): pb.Mode_MODE_INT8, cxl.Aggregate(lowbit.BFP8): pb.Mode_MODE_BFP8}
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
	// Every integer-sum format of lowbit's registry has its own wire
	// value: a format added there without one in the proto fails here.
	seen := map[pb.Format]bool{}
	for _, f := range lowbit.Formats() {
		if !f.Sum() {
			continue
		}
		w := Format(f)
		if w == pb.Format_FORMAT_UNSPECIFIED || seen[w] {
			t.Errorf("%v has no wire value of its own (%v)", f, w)
		}
		seen[w] = true
	}
	if len(seen)+1 != len(pb.Format_name) {
		t.Errorf("%d sum formats, %d proto formats besides FORMAT_UNSPECIFIED", len(seen), len(pb.Format_name)-1)
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
	cfg := control.Config{Groups: []string{"a", "b"}, Default: control.LowBitDefault, LowBitMode: cxl.Aggregate(lowbit.Ternary), WarmupSteps: 3,
		Ladder: control.Ladder{{Format: lowbit.Binary, Min: 0.1}, {Format: lowbit.Ternary, Min: 0.2}}, LossK: 0.3, LossH: 0.4, LossAlpha: 0.5, CooldownSteps: 6, CalibrationSteps: 7,
		Commander: control.CommanderConfig{Enabled: true, RelievePressure: 0.9, ReleasePressure: 0.8, StaleNS: 10, Smooth: 0.5}}
	got, params, err := ParseSessionConfig("config", SessionConfig(cfg, []uint64{11, 12}))
	if err != nil || !reflect.DeepEqual(got, cfg) || !reflect.DeepEqual(params, []uint64{11, 12}) {
		t.Fatalf("round trip %+v %v %v", got, params, err)
	}
	// A four-rung ladder with demotion; the ladder comes back in ladder
	// order, as ParseLadder reads ladder_rungs.
	cfg.Ladder, cfg.Demote = control.Ladder{{Format: lowbit.BFP8, Min: 0.9}, {Format: lowbit.Int8, Min: 0.95}, {Format: lowbit.Binary, Min: 0.7}}, true
	got, _, err = ParseSessionConfig("config", SessionConfig(cfg, nil))
	if want := (control.Ladder{{Format: lowbit.Binary, Min: 0.7}, {Format: lowbit.Int8, Min: 0.95}, {Format: lowbit.BFP8, Min: 0.9}}); err != nil || !reflect.DeepEqual(got.Ladder, want) || !got.Demote {
		t.Fatalf("rungs round trip %v demote %v, want %v (%v)", got.Ladder, got.Demote, want, err)
	}
	// ladder_rungs is the whole ladder; a bad one names the field.
	wc := SessionConfig(cfg, nil)
	wc.LadderRungs = wrapperspb.String("int8:0.9")
	got, _, err = ParseSessionConfig("config", wc)
	if want := (control.Ladder{{Format: lowbit.Int8, Min: 0.9}}); err != nil || !reflect.DeepEqual(got.Ladder, want) {
		t.Errorf("ladder_rungs int8:0.9: %v, want %v (%v)", got.Ladder, want, err)
	}
	for _, bad := range []string{"fp32:0.5", "int8:2", "int8", "fp9:0.5"} {
		wc.LadderRungs = wrapperspb.String(bad)
		if _, _, err := ParseSessionConfig("config", wc); err == nil || err.(*FieldError).Field != "config.ladder_rungs" {
			t.Errorf("ladder_rungs %q: %v", bad, err)
		}
	}
	def, _, err := ParseSessionConfig("config", &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}})
	want := control.DefaultConfig("g")
	if err != nil || !reflect.DeepEqual(def, want) {
		t.Fatalf("defaults %+v, want %+v (%v)", def, want, err)
	}
}

// TestParseReadSpans: hand-written span lists against the per-line values
// they stand for, and every malformed list an error (never a panic).
func TestParseReadSpans(t *testing.T) {
	sp := func(n uint32, m pb.Mode, tr bool) *pb.ReadSpan {
		return &pb.ReadSpan{Lines: n, Mode: m, Transformed: tr}
	}
	B, I := pb.Mode_MODE_G_BINARY, pb.Mode_MODE_IDENTITY
	for _, c := range []struct {
		name  string
		spans []*pb.ReadSpan
		lines int
		modes []cxl.Mode
		trans []bool
		err   string
	}{
		{"none", nil, 0, []cxl.Mode{}, []bool{}, ""},
		{"one", []*pb.ReadSpan{sp(3, B, true)}, 3, []cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Binary)}, []bool{true, true, true}, ""},
		{"three", []*pb.ReadSpan{sp(1, B, true), sp(2, I, false), sp(1, B, false)}, 4,
			[]cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Identity, cxl.Identity, cxl.Aggregate(lowbit.Binary)}, []bool{true, false, false, false}, ""},
		{"split run", []*pb.ReadSpan{sp(1, I, false), sp(1, I, false)}, 2, []cxl.Mode{cxl.Identity, cxl.Identity}, []bool{false, false}, ""},
		{"short", []*pb.ReadSpan{sp(2, B, true)}, 3, nil, nil, "read_spans: spans cover 2 lines, want the 3 read lines"},
		{"none for lines", nil, 1, nil, nil, "read_spans: spans cover 0 lines, want the 1 read lines"},
		{"long", []*pb.ReadSpan{sp(2, B, true), sp(2, B, true)}, 3, nil, nil, "read_spans[1].lines: spans cover more than the 3 read lines"},
		{"huge", []*pb.ReadSpan{sp(1, B, true), sp(1<<32-1, B, true)}, 3, nil, nil, "read_spans[1].lines: spans cover more than the 3 read lines"},
		{"zero", []*pb.ReadSpan{sp(0, B, true), sp(1, B, true)}, 1, nil, nil, "read_spans[0].lines: zero lines (a span has at least one)"},
		{"unspecified mode", []*pb.ReadSpan{sp(1, pb.Mode_MODE_UNSPECIFIED, false)}, 1, nil, nil, "read_spans[0].mode"},
		{"unknown mode", []*pb.ReadSpan{sp(1, B, true), sp(1, pb.Mode(99), false)}, 2, nil, nil, "read_spans[1].mode"},
	} {
		modes, trans, err := ParseReadSpans("read_spans", c.spans, c.lines)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) || modes != nil || trans != nil {
				t.Errorf("%s: %v, %v, %v; want error %q", c.name, modes, trans, err, c.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(modes) != fmt.Sprint(c.modes) || fmt.Sprint(trans) != fmt.Sprint(c.trans) {
			t.Errorf("%s: %v %v %v; want %v %v", c.name, modes, trans, err, c.modes, c.trans)
		}
	}
}

// FuzzParseReadSpans: any span list and line count gives an error or
// exactly lines values, each the mode and flag of the span covering it.
func FuzzParseReadSpans(f *testing.F) {
	f.Add([]byte{1, 5, 0, 2, 1, 1}, 3)
	f.Add([]byte{0, 5, 0}, 0)
	f.Add([]byte{255, 99, 1}, 255)
	f.Fuzz(func(t *testing.T, b []byte, lines int) {
		if lines < 0 || lines > 1<<16 {
			return
		}
		var spans []*pb.ReadSpan
		for i := 0; i+2 < len(b); i += 3 {
			spans = append(spans, &pb.ReadSpan{Lines: uint32(b[i]), Mode: pb.Mode(b[i+1] % 12), Transformed: b[i+2]&1 == 1})
		}
		modes, trans, err := ParseReadSpans("read_spans", spans, lines)
		if err != nil {
			return
		}
		if len(modes) != lines || len(trans) != lines {
			t.Fatalf("%d lines: %d modes, %d flags", lines, len(modes), len(trans))
		}
		k := 0
		for _, sp := range spans {
			for j := 0; j < int(sp.GetLines()); j++ {
				if Mode(modes[k]) != sp.GetMode() || trans[k] != sp.GetTransformed() {
					t.Fatalf("line %d: %v %v, span %v", k, modes[k], trans[k], sp)
				}
				k++
			}
		}
	})
}
