package control

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/workload"
)

// TestScripts runs the scenario scripts in testdata (the format is
// ScriptLine's): each line is an event or an expectation. After every step
// the plane's invariants are checked: between steps a recovery alarm has
// changed a phase but not yet the latch, which changes at the next step
// boundary.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

func runScript(t *testing.T, path string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lines, err := ParseScript(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var p *Plane
	for _, l := range lines {
		where := fmt.Sprintf("%s:%d: %s", path, l.Line, l.Text)
		switch l.Op {
		case "config":
			if p, err = New(l.Config); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case "expect", "expect-phase", "expect-alarms":
			if err := checkExpectation(p, l); err != nil {
				t.Errorf("%s: %v", where, err)
			}
		case "expect-error":
			before := fmt.Sprint(p.Status())
			if _, err := p.Step(l.Event); err == nil {
				t.Errorf("%s: accepted", where)
			}
			if l.Event.Type != EvTelemetry && fmt.Sprint(p.Status()) != before {
				t.Errorf("%s: a rejected event changed the plane", where)
			}
		default:
			if _, err := p.Step(l.Event); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if p != nil && l.Event.Type == EvStep {
				checkInvariants(t, where, p)
			}
		}
	}
}

// checkExpectation judges one expectation line of a script against the
// plane: the mode or the phase of a group that must exist, or the number
// of recovery alarms.
func checkExpectation(p *Plane, l ScriptLine) error {
	switch l.Op {
	case "expect":
		m, ok := p.Mode(l.Args[0])
		if !ok {
			return fmt.Errorf("no group %q", l.Args[0])
		}
		if m.String() != l.Args[1] {
			return fmt.Errorf("mode is %v", m)
		}
	case "expect-phase":
		for _, s := range p.Status() {
			if s.Group != l.Args[0] {
				continue
			}
			if s.Phase.String() != l.Args[1] {
				return fmt.Errorf("phase is %v", s.Phase)
			}
			return nil
		}
		return fmt.Errorf("no group %q", l.Args[0])
	case "expect-alarms":
		n, err := strconv.Atoi(l.Args[0])
		if err != nil {
			return err
		}
		if p.Alarms() != n {
			return fmt.Errorf("%d alarms", p.Alarms())
		}
	default:
		return fmt.Errorf("%q is not an expectation", l.Op)
	}
	return nil
}

// TestExpectationsCanFail: each kind of expectation fails when the plane
// says otherwise, and on a group the plane does not have, so a script
// that names a misspelled group cannot pass.
func TestExpectationsCanFail(t *testing.T) {
	p, err := New(DefaultConfig("backbone"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Step(Event{Type: EvStep, Step: 0}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"expect backbone fp32-bypass", true},
		{"expect backbone g-binary", false},
		{"expect head fp32-bypass", false},
		{"expect-phase backbone warmup", true},
		{"expect-phase backbone admitted", false},
		{"expect-phase head warmup", false},
		{"expect-alarms 0", true},
		{"expect-alarms 1", false},
	} {
		ls, err := ParseScript(strings.NewReader(tc.line))
		if err != nil || len(ls) != 1 {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if err := checkExpectation(p, ls[0]); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.line, err, tc.ok)
		}
	}
}

// checkInvariants: a group runs low-bit only while admitted, every phase
// but admitted runs FP32 bypass, and warm-up never ends early.
func checkInvariants(t *testing.T, where string, p *Plane) {
	t.Helper()
	for _, s := range p.Status() {
		if s.Mode != cxl.FP32Bypass && s.Phase != Admitted {
			t.Errorf("%s: %s runs %v in phase %v", where, s.Group, s.Mode, s.Phase)
		}
		if s.Mode != cxl.FP32Bypass && !s.Mode.LowBit() {
			t.Errorf("%s: %s runs %v", where, s.Group, s.Mode)
		}
		if p.step < p.cfg.WarmupSteps && s.Phase != Warmup {
			t.Errorf("%s: %s left warm-up at step %d", where, s.Group, p.step)
		}
	}
}

// TestParseScriptErrors: malformed lines are errors naming the line.
func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{"config bogus=1", "line 1"},
		{"config warmup=x", "warmup"},
		{"step 1\nfly 2", "line 2"},
		{"diag 3 backbone 0.5", "diag"},
		{"loss 1 much", "line 1"},
		{"expect backbone", "expect"},
		{"expect-alarms two", "line 1"},
		{"expect-error", "expect-error"},
		{"nonfinite 4", "nonfinite"},
	} {
		if _, err := ParseScript(strings.NewReader(tc.script)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one naming %q", tc.script, err, tc.want)
		}
	}
	lines, err := ParseScript(strings.NewReader("# c\n\nconfig groups=a,b warmup=3\ndiag 4 a 0.5 0.25\nexpect-error step -1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ScriptLine{{Line: 3, Op: "config"}, {Line: 4, Op: "event", Event: Event{Type: EvDiag, Step: 4, Group: "a", Cos: paperCos(0.5, 0.25)}},
		{Line: 5, Op: "expect-error", Event: Event{Type: EvStep, Step: -1}}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		if g := lines[i]; g.Line != w.Line || g.Op != w.Op || (w.Op != "config" && !reflect.DeepEqual(g.Event, w.Event)) {
			t.Errorf("line %d: %+v, want %+v", i, g, w)
		}
	}
	if c := lines[0].Config; c.WarmupSteps != 3 || strings.Join(c.Groups, ",") != "a,b" {
		t.Errorf("config %+v, want groups a,b warmup 3", c)
	}
}

// FuzzParseScript: any text parses or fails, never panics.
func FuzzParseScript(f *testing.F) {
	f.Add("config groups=a warmup=2\nstep 1\nexpect a fp32")
	f.Add("expect-error diag 1 a x 0")
	f.Add("config groups=a warmup=1 demote=on rungs=int8:0.95,g-binary:0.7\ndiag 0 a 0.5 0.4 int8=0.97 bfp8=0.99\nstep 1")
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseScript(strings.NewReader(s)) })
}

// TestCUSUMHandComputed checks S_t = max(0, S_{t-1} + x_t - K) against a
// sequence worked by hand with K = 0.5, H = 2.
func TestCUSUMHandComputed(t *testing.T) {
	c := CUSUM{K: 0.5, H: 2}
	xs := []float64{0, 1, 1.5, 2, -1, -3, 4}
	wantS := []float64{0, 0.5, 1.5, 3, 1.5, 0, 3.5}
	wantAlarm := []bool{false, false, false, true, false, false, true}
	for i, x := range xs {
		alarm, err := c.Observe(x)
		if err != nil {
			t.Fatal(err)
		}
		if c.S() != wantS[i] || alarm != wantAlarm[i] {
			t.Errorf("step %d: x=%v: S=%v alarm=%v; want S=%v alarm=%v", i, x, c.S(), alarm, wantS[i], wantAlarm[i])
		}
	}
	if _, err := c.Observe(math.NaN()); err == nil || c.S() != 3.5 {
		t.Errorf("NaN: err=%v S=%v", err, c.S())
	}
}

// TestApplyOnlyWritesModes drives a real controller holding payload lines:
// the plane's actions change mode latches and nothing else.
func TestApplyOnlyWritesModes(t *testing.T) {
	ctrl, err := cxl.New(cxl.Config{Capacity: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]cxl.RegionID{}
	for i, g := range []string{"backbone", "head"} {
		id, err := ctrl.Map(cxl.Region{Name: g, Base: uint64(i) * 4096, Size: 4096, Mode: cxl.FP32Bypass, Workers: 8, Layout: 0})
		if err != nil {
			t.Fatal(err)
		}
		ids[g] = []cxl.RegionID{id}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for addr := uint64(0); addr < 8192; addr += 64 {
		line := make([]byte, 64)
		for i := range line {
			line[i] = byte(r.Uint32())
		}
		if _, err := ctrl.WriteLine(0, addr, line); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() []byte {
		var b bytes.Buffer
		for addr := uint64(0); addr < 8192; addr += 64 {
			l, _ := ctrl.Peek(addr)
			b.Write(l[:])
		}
		return b.Bytes()
	}
	before, statsBefore := snapshot(), ctrl.Stats()
	cfg := DefaultConfig("backbone", "head")
	cfg.WarmupSteps = 2
	p, _ := New(cfg)
	p.Step(Event{Type: EvDiag, Group: "backbone", Cos: paperCos(0.9, 0.8)})
	p.Step(Event{Type: EvDiag, Group: "head", Cos: paperCos(0.6, 0.6)})
	var all []Action
	for s := int64(0); s < 5; s++ {
		acts, err := p.Step(Event{Type: EvStep, Step: s})
		if err != nil {
			t.Fatal(err)
		}
		if err := Apply(ctrl, ids, acts); err != nil {
			t.Fatal(err)
		}
		all = append(all, acts...)
	}
	if len(all) != 2 {
		t.Fatalf("actions %v; want backbone and head admitted", all)
	}
	if m, _ := ctrl.Mode(ids["backbone"][0]); m != cxl.Aggregate(lowbit.Binary) {
		t.Errorf("backbone latch %v", m)
	}
	if m, _ := ctrl.Mode(ids["head"][0]); m != cxl.Aggregate(lowbit.Ternary) {
		t.Errorf("head latch %v", m)
	}
	if !bytes.Equal(before, snapshot()) {
		t.Error("stored payload bytes changed")
	}
	sb, sa := statsBefore, ctrl.Stats()
	if fmt.Sprint(sb.Modes) != fmt.Sprint(sa.Modes) {
		t.Errorf("control traffic reached the datapath: stats %+v -> %+v", sb, sa)
	}
	if got := len(ctrl.ModeChanges()); got != 2 {
		t.Errorf("%d mode changes logged; want 2", got)
	}
	if err := Apply(ctrl, ids, []Action{{Group: "nohead", Mode: cxl.Aggregate(lowbit.Binary)}}); err == nil {
		t.Error("an action for an unknown group was applied")
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Groups = nil },
		func(c *Config) { c.Groups = []string{"a", "a"} },
		func(c *Config) { c.Groups = []string{"a b"} },
		func(c *Config) { c.LowBitMode = cxl.FP32Bypass },
		func(c *Config) { c.WarmupSteps = -1 },
		func(c *Config) { c.LossH = math.NaN() },
		func(c *Config) { c.LossAlpha = 0 },
		func(c *Config) { c.Ladder = c.Ladder.With(lowbit.Binary, 2) },
		func(c *Config) { c.Commander.ReleasePressure = 0.9 },
	}
	for i, mut := range bad {
		c := DefaultConfig("a")
		mut(&c)
		if _, err := New(c); err == nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
}

func TestTelemetryRoundTripAndErrors(t *testing.T) {
	ts, err := CongestedScenario().Generate(1e9, 1e6, 7)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTelemetry(&buf, ts); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTelemetry(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back) != fmt.Sprint(ts) {
		t.Error("telemetry does not round-trip")
	}
	again, _ := CongestedScenario().Generate(1e9, 1e6, 7)
	if fmt.Sprint(again) != fmt.Sprint(ts) {
		t.Error("generator is not deterministic")
	}
	var over int
	for _, s := range ts {
		if s.Pressure() > 1 {
			over++
		}
	}
	if over == 0 {
		t.Error("the congested scenario never oversubscribes the link")
	}
	for _, bad := range []string{
		"", "time,demand\n", TelemetryHeader + "\n1,2,3\n", TelemetryHeader + "\nx,1,1,1\n",
		TelemetryHeader + "\n5,1,1,1\n4,1,1,1\n", TelemetryHeader + "\n1,NaN,1,1\n", TelemetryHeader + "\n1,1,0,1\n",
	} {
		if _, err := ReadTelemetry(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadTelemetry(%q) accepted", bad)
		}
	}
}

func FuzzReadTelemetry(f *testing.F) {
	f.Add(TelemetryHeader + "\n0,1,2,3\n10,4.5,6,7e9\n")
	f.Add("# c\n" + TelemetryHeader + "\n\n1,1,1,1\n")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ReadTelemetry(strings.NewReader(s))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		WriteTelemetry(&buf, ts)
		back, err := ReadTelemetry(&buf)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(ts) {
			t.Fatalf("round trip: %v", err)
		}
		p, _ := New(DefaultConfig("g"))
		for _, s := range ts {
			if _, err := p.Step(Event{Type: EvTelemetry, Telemetry: s}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestPredictorResNet18(t *testing.T) {
	prof := workload.ResNet18CIFAR(10)
	cxlLink, _ := collective.LookupLink("cxl", nil)
	ib := collective.Link{Name: "test", Bandwidth: 25e9, Latency: 5e-6}
	in := PredictorInput{
		Profile:  prof,
		Schedule: workload.Schedule{Accel: workload.A100, Batch: 16},
		FP32:     collective.AlphaBeta{Alg: collective.Ring, N: 8, Link: ib},
		CXL:      collective.CXLPath{Link: cxlLink, Workers: 8},
	}
	f, err := Predict(in)
	if err != nil {
		t.Fatal(err)
	}
	const params = 11_173_962
	if f.GradientBytes != 4*params {
		t.Errorf("gradient bytes %d; want %d", f.GradientBytes, 4*params)
	}
	if f.ShardBytesPerGPU != 4*params/8.0 {
		t.Errorf("shard %v", f.ShardBytesPerGPU)
	}
	// Ring All-Reduce: 2(n-1) steps of S/n bytes plus 2(n-1) latencies.
	want := 2*7*(4*params/8.0)/25e9 + 2*7*5e-6
	if math.Abs(f.AllReduceS-want)/want > 1e-9 {
		t.Errorf("All-Reduce %v s; want %v", f.AllReduceS, want)
	}
	if f.CacheLineReads != 8*((4*params+63)/64) || f.LowBitCacheLineReads["g-binary"] != 8*((params+63)/64) {
		t.Errorf("line reads %d / %v", f.CacheLineReads, f.LowBitCacheLineReads)
	}
	if !(f.LowBitS["g-binary"] < f.LowBitS["g-ternary"]) || !(f.ForwardS > 0 && f.BackwardS > f.ForwardS) {
		t.Errorf("forecast %+v", f)
	}
	if !(f.PeakCXLBytesPerS > 0) || f.Pressure != f.PeakCXLBytesPerS/cxlLink.Bandwidth {
		t.Errorf("peak %v pressure %v", f.PeakCXLBytesPerS, f.Pressure)
	}
	if _, err := Predict(PredictorInput{}); err == nil {
		t.Error("no profile accepted")
	}
}

// paperCos is the diagnostics of the paper's two rungs.
func paperCos(bin, ter float64) map[lowbit.Format]float64 {
	return map[lowbit.Format]float64{lowbit.Binary: bin, lowbit.Ternary: ter}
}

// TestDemoteReason: the action of a demotion says which rung failed and
// what the ladder above it chose (hand-written sentences).
func TestDemoteReason(t *testing.T) {
	cfg := DefaultConfig("head")
	cfg.WarmupSteps, cfg.Demote, cfg.Ladder = 1, true, ExtendedLadder()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	steps := []Event{
		{Type: EvDiag, Step: 0, Group: "head", Cos: map[lowbit.Format]float64{lowbit.Binary: 0.3, lowbit.Ternary: 0.2, lowbit.Int8: 0.96, lowbit.BFP8: 0.99}},
		{Type: EvStep, Step: 0}, {Type: EvStep, Step: 1}, {Type: EvStep, Step: 2},
		{Type: EvDiag, Step: 2, Group: "head", Cos: map[lowbit.Format]float64{lowbit.Binary: 0.3, lowbit.Ternary: 0.2, lowbit.Int8: 0.9, lowbit.BFP8: 0.97}},
		{Type: EvStep, Step: 3}, {Type: EvStep, Step: 4},
		{Type: EvDiag, Step: 4, Group: "head", Cos: map[lowbit.Format]float64{lowbit.Binary: 0.3, lowbit.Ternary: 0.2, lowbit.Int8: 0.9, lowbit.BFP8: 0.5}},
		{Type: EvStep, Step: 5},
	}
	for _, ev := range steps {
		if _, err := p.Step(ev); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"step 1: head -> int8 (warm-up over: ladder: G-Binary cosine 0.300 < 0.750, G-Ternary cosine 0.200 < 0.500, INT8 cosine 0.960 >= 0.950)",
		"step 3: head -> bfp8 (new diagnostics: INT8 cosine 0.900 < 0.950, fall back; ladder: BFP8 cosine 0.970 >= 0.950)",
		"step 5: head -> fp32-bypass (new diagnostics: BFP8 cosine 0.500 < 0.950, fall back; ladder: no rungs, keep FP32)",
	}
	got := p.Log()
	if len(got) != len(want) {
		t.Fatalf("actions %v, want %d", got, len(want))
	}
	for i, a := range got {
		if a.String() != want[i] {
			t.Errorf("action %d:\n got %s\nwant %s", i, a, want[i])
		}
	}
}

// TestDemoteOnlyUp drives planes on random diagnostics and losses and
// checks every latch write against the ladder's order (bits per element
// under the paper's accounting, lowbit's table): a group moves from one
// rung straight to another only by demotion, only with Demote on, and only
// to a rung of more traffic; with Demote off it leaves a rung only for FP32.
func TestDemoteOnlyUp(t *testing.T) {
	bits := func(m cxl.Mode) float64 { return m.BitsPerElement(lowbit.PaperGate, lowbit.PaperAccounting) }
	for _, demote := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, 9))
		moves := 0
		for run := 0; run < 50; run++ {
			cfg := DefaultConfig("a", "b", "c")
			cfg.WarmupSteps, cfg.CooldownSteps, cfg.CalibrationSteps, cfg.Demote, cfg.Ladder = 2, 3, 2, demote, ExtendedLadder()
			cfg.LossH = 0.3
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			last := map[string]cxl.Mode{"a": cxl.FP32Bypass, "b": cxl.FP32Bypass, "c": cxl.FP32Bypass}
			for s := int64(0); s < 80; s++ {
				acts, err := p.Step(Event{Type: EvStep, Step: s})
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acts {
					from := last[a.Group]
					if from.LowBit() && a.Mode.LowBit() {
						moves++
						if !demote || bits(a.Mode) <= bits(from) || !strings.Contains(a.Reason, "fall back") {
							t.Fatalf("demote %v: %v -> %v (%s)", demote, from, a.Mode, a.Reason)
						}
					}
					last[a.Group] = a.Mode
				}
				for _, g := range []string{"a", "b", "c"} {
					if rng.IntN(3) == 0 {
						c := map[lowbit.Format]float64{}
						for _, f := range []lowbit.Format{lowbit.Binary, lowbit.Ternary, lowbit.Int8, lowbit.BFP8} {
							c[f] = 0.4 + 0.6*rng.Float64()
						}
						if _, err := p.Step(Event{Type: EvDiag, Step: s, Group: g, Cos: c}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, err := p.Step(Event{Type: EvLoss, Step: s, Loss: 1 + rng.Float64()}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if demote && moves == 0 {
			t.Error("no demotion happened: the test exercised nothing")
		}
	}
}

// TestDiagErrors: diagnostics with no cosine, an FP32 cosine, an unknown
// format or a cosine outside [-1, 1] are refused and change nothing.
func TestDiagErrors(t *testing.T) {
	for _, cos := range []map[lowbit.Format]float64{
		nil,
		{lowbit.FP32: 1},
		{lowbit.Format(lowbit.NumFormats): 0.5},
		{lowbit.Binary: 0.5, lowbit.Int8: math.NaN()},
		{lowbit.BFP8: -1.5},
	} {
		p, _ := New(DefaultConfig("g"))
		before := fmt.Sprint(p.Status())
		if _, err := p.Step(Event{Type: EvDiag, Group: "g", Cos: cos}); err == nil {
			t.Errorf("%v accepted", cos)
		}
		if p.byName["g"].diag.ok || fmt.Sprint(p.Status()) != before {
			t.Errorf("%v: a refused diagnostic changed the plane", cos)
		}
	}
}
