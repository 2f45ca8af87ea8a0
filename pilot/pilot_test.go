package pilot

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

// blobs is a tiny synthetic data set: class c is a Gaussian blob around a
// class-specific mean, so training is fast and deterministic.
func blobs(n, classes int, seed uint64) *data.Dataset { return blobsSized(n, classes, 4, seed) }

// blobsSized is blobs with side×side images.
func blobsSized(n, classes, side int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	px := side * side
	d := &data.Dataset{Name: "blobs", C: 1, H: side, W: side, Classes: classes, Mean: []float32{0.5}, Std: []float32{0.25}}
	centers := make([][]float64, classes)
	for c := range centers {
		centers[c] = make([]float64, px)
		for j := range centers[c] {
			centers[c][j] = 40 + 175*r.Float64()
		}
	}
	for i := 0; i < n; i++ {
		c := i % classes
		for j := 0; j < px; j++ {
			v := centers[c][j] + 25*r.NormFloat64()
			d.Pixels = append(d.Pixels, uint8(min(255, max(0, v))))
		}
		d.Labels = append(d.Labels, c)
	}
	return d
}

func testConfig(sc Scenario) Config {
	cc := control.DefaultConfig()
	cc.WarmupSteps, cc.CooldownSteps, cc.CalibrationSteps = 10, 8, 4
	cc.Ladder = control.Ladder{{Format: lowbit.Binary, Min: 0.2}, {Format: lowbit.Ternary, Min: 0.1}}
	return Config{
		Scenario:  sc,
		Train:     train.Config{Model: "mlp", Hidden: []int{16}, Workers: 8, Batch: 64, Epochs: 4, LR: 0.05, SignLR: 0.002, Momentum: 0.9, Seed: 3},
		Control:   cc,
		Gate:      lowbit.PaperGate,
		DiagEvery: 5,
		Fault:     Fault{StartEpoch: 3, EndEpoch: 3, Rate: 0.9},
	}
}

func TestScenarios(t *testing.T) {
	sets := &data.Sets{Train: blobs(1024, 4, 1), Test: blobs(256, 4, 2)}
	results := map[Scenario]*Result{}
	for _, tr := range Scenarios() {
		res, err := Run(context.Background(), testConfig(tr), sets)
		if err != nil {
			t.Fatalf("%v: %v", tr, err)
		}
		results[tr] = res
		if res.Steps != 4*1024/64 {
			t.Errorf("%v: %d steps", tr, res.Steps)
		}
	}
	if r := results[AlwaysFP32]; r.LowBitSteps != 0 || r.Traffic != 1 {
		t.Errorf("always-fp32: low-bit %v traffic %v", r.LowBitSteps, r.Traffic)
	}
	if r := results[AlwaysGBinary]; r.LowBitSteps != 1 || r.Traffic != 1.0/32 {
		t.Errorf("always-g-binary: low-bit %v traffic %v", r.LowBitSteps, r.Traffic)
	}
	gd := results[GBinaryDefault]
	if gd.Epochs[0].LowBit[nn.Backbone] == 1 {
		t.Error("g-binary-default did not start on FP32 (warm-up)")
	}
	if gd.Alarms == 0 {
		t.Errorf("the injected fault raised no recovery alarm: %+v", gd.Epochs)
	}
	if !(gd.LowBitSteps > 0.3 && gd.LowBitSteps < 1) {
		t.Errorf("g-binary-default low-bit share %v", gd.LowBitSteps)
	}
	// Same seed, same result.
	again, err := Run(context.Background(), testConfig(GBinaryDefault), sets)
	if err != nil {
		t.Fatal(err)
	}
	if again.Final != gd.Final || again.LowBitSteps != gd.LowBitSteps || len(again.Actions) != len(gd.Actions) {
		t.Error("pilot is not deterministic")
	}
	for _, tr := range []Scenario{FP32Default, GBinaryDefault} {
		if results[tr].LatchOps == 0 || len(results[tr].Actions) == 0 {
			t.Errorf("%v: the plane wrote no latch", tr)
		}
	}
}

func TestParseScenario(t *testing.T) {
	for _, sc := range Scenarios() {
		if p, err := ParseScenario(sc.String()); err != nil || p != sc {
			t.Errorf("ParseScenario(%q) = %v, %v", sc, p, err)
		}
	}
	if _, err := ParseScenario("sometimes"); err == nil {
		t.Error("unknown scenario accepted")
	}
}

// TestAlwaysFP32EqualsTrainRun checks that the pilot and train.Run share
// one training loop: an always-FP32 pilot without fault trains exactly as
// train.Run with the FP32 policy, bit for bit in every epoch's training
// loss and validation accuracy, and with the same number of steps.
func TestAlwaysFP32EqualsTrainRun(t *testing.T) {
	sets := &data.Sets{Train: blobs(1024, 4, 1), Test: blobs(256, 4, 2)}
	cfg := testConfig(AlwaysFP32)
	cfg.Fault = Fault{}
	pr, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Train
	tc.Policy = train.Uniform(train.RuleSpec{Rule: train.FormatRule(lowbit.FP32)})
	tr, err := train.Run(context.Background(), tc, sets)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Steps != len(tr.Steps) || len(pr.Epochs) != len(tr.Epochs) {
		t.Fatalf("pilot %d steps %d epochs, train.Run %d steps %d epochs", pr.Steps, len(pr.Epochs), len(tr.Steps), len(tr.Epochs))
	}
	for i, pe := range pr.Epochs {
		te := tr.Epochs[i]
		if math.Float64bits(pe.TrainLoss) != math.Float64bits(te.TrainLoss) || math.Float64bits(pe.ValAcc) != math.Float64bits(te.ValAcc) {
			t.Errorf("epoch %d: pilot loss %v acc %v, train.Run loss %v acc %v", pe.Epoch, pe.TrainLoss, pe.ValAcc, te.TrainLoss, te.ValAcc)
		}
	}
	if pr.Final != tr.Final || pr.VelocityResets != 0 || pr.Traffic != 1 {
		t.Errorf("pilot final %v resets %d traffic %v; train.Run final %v", pr.Final, pr.VelocityResets, pr.Traffic, tr.Final)
	}
}

// TestResultJSONRoundTrip checks that a pilot's result, per-group fields
// included, reads back from its JSON exactly.
func TestResultJSONRoundTrip(t *testing.T) {
	sets := &data.Sets{Train: blobs(512, 4, 1), Test: blobs(128, 4, 2)}
	cfg := testConfig(GBinaryDefault)
	cfg.Train.Epochs = 2
	res, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, res) {
		t.Errorf("round trip changed the result:\n got %+v\nwant %+v", back, *res)
	}
	if !bytes.Contains(b, []byte(`"settled":{"backbone":"`)) {
		t.Errorf("settled modes not keyed by group name: %s", b)
	}
}

func TestModeTimeline(t *testing.T) {
	r := &Result{Actions: []control.Action{
		{Step: 1, Group: "backbone", Mode: cxl.Aggregate(lowbit.Binary)},
		{Step: 3, Group: "head", Mode: cxl.Aggregate(lowbit.Ternary)},
		{Step: 3, Group: "backbone", Mode: cxl.FP32Bypass},
	}}
	want := []string{"fp32-bypass/fp32-bypass", "g-binary/fp32-bypass", "g-binary/fp32-bypass", "fp32-bypass/g-ternary", "fp32-bypass/g-ternary"}
	if got := r.ModeTimeline(5); !reflect.DeepEqual(got, want) {
		t.Errorf("timeline %q; want %q", got, want)
	}
}

// TestDeterministicAcrossGOMAXPROCS runs the recovery pilot with
// GOMAXPROCS 1 and 4 and compares the results' JSON byte for byte, on the
// MLP and on the ResNet stand-in the control block runs (12x12 blobs,
// small enough for a test: its GEMMs split over the cores when a replica
// has them to itself).
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	sets := &data.Sets{Train: blobs(512, 4, 1), Test: blobs(128, 4, 2)}
	big := &data.Sets{Train: blobsSized(256, 4, 12, 1), Test: blobsSized(64, 4, 12, 2)}
	standin := testConfig(GBinaryDefault)
	standin.Train.Model, standin.Train.Workers, standin.Train.Batch, standin.Train.Epochs = "resnet-standin", 2, 32, 3
	for _, tc := range []struct {
		name string
		cfg  Config
		sets *data.Sets
	}{{"mlp", testConfig(GBinaryDefault), sets}, {"resnet-standin", standin, big}} {
		t.Run(tc.name, func(t *testing.T) { deterministic(t, tc.cfg, tc.sets) })
	}
}

func deterministic(t *testing.T, cfg Config, sets *data.Sets) {
	var out [2][]byte
	for i, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		res, err := Run(context.Background(), cfg, sets)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("GOMAXPROCS 1 and 4 give different pilots")
	}
}

// TestRecord checks the recording of a recovery pilot: its actions are the
// ones the pilot applied (Result.Actions), a fresh plane stepped with the
// recorded events returns exactly them, and recording changes nothing in
// the result's JSON.
func TestRecord(t *testing.T) {
	sets := &data.Sets{Train: blobs(512, 4, 1), Test: blobs(128, 4, 2)}
	cfg := testConfig(GBinaryDefault)
	plain, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	var rec Recording
	cfg.Record = &rec
	res, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(res)
	if !bytes.Equal(a, b) {
		t.Error("recording changed the result")
	}
	if res.Alarms == 0 || len(rec.Actions) == 0 || !reflect.DeepEqual(rec.Actions, res.Actions) {
		t.Fatalf("recorded %d actions, result has %d (alarms %d)", len(rec.Actions), len(res.Actions), res.Alarms)
	}
	if want := res.Steps + res.Steps + len(res.Diags)*nn.NumGroups; len(rec.Events) != want {
		t.Errorf("%d events recorded, want %d (a step and a loss per step, diagnostics per group)", len(rec.Events), want)
	}
	plane, err := control.New(rec.Control)
	if err != nil {
		t.Fatal(err)
	}
	var got []control.Action
	for i, ev := range rec.Events {
		acts, err := plane.Step(ev)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		got = append(got, acts...)
	}
	if !reflect.DeepEqual(got, rec.Actions) {
		t.Errorf("replayed actions %v, recorded %v", got, rec.Actions)
	}
	cfg.Scenario, rec = AlwaysFP32, Recording{Events: []control.Event{{}}}
	if _, err := Run(context.Background(), cfg, sets); err != nil || len(rec.Events) != 1 {
		t.Errorf("a fixed scenario touched the recording (%v)", err)
	}
}

// TestLossesAndCalibrate checks the calibration record: the per-step
// losses average to each epoch's training loss (computed by train.Loop on
// its own), always-FP32 records warm-up diagnostics, and the thresholds
// Calibrate derives from a fault-free record let a fresh plane see that
// whole record without a recovery alarm. Calibrating on anything but an
// always-FP32 record, or on more steps than it has, is an error.
func TestLossesAndCalibrate(t *testing.T) {
	sets := &data.Sets{Train: blobs(1024, 4, 1), Test: blobs(256, 4, 2)}
	cfg := testConfig(AlwaysFP32)
	cfg.Fault = Fault{}
	r, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Losses) != r.Steps {
		t.Fatalf("%d losses for %d steps", len(r.Losses), r.Steps)
	}
	spe := r.Steps / len(r.Epochs)
	for i, e := range r.Epochs {
		sum := 0.0
		for _, l := range r.Losses[i*spe : (i+1)*spe] {
			sum += l
		}
		if m := sum / float64(spe); math.Abs(m-e.TrainLoss) > 1e-12 {
			t.Errorf("epoch %d: mean step loss %v, epoch train loss %v", e.Epoch, m, e.TrainLoss)
		}
	}
	if r.Warmup == nil || len(r.Diags) == 0 {
		t.Fatal("always-fp32 recorded no diagnostics")
	}
	cal, err := Calibrate(r, r.Steps, cfg.Control)
	if err != nil {
		t.Fatal(err)
	}
	// The backbone's warm-up cosines floored to 0.05 by hand.
	floor := func(v float64) float64 { return math.Floor(v*20+1e-9) / 20 }
	want := control.Ladder{{Format: lowbit.Binary, Min: floor(r.Warmup.Binary.Groups[nn.Backbone])}, {Format: lowbit.Ternary, Min: floor(r.Warmup.Ternary.Groups[nn.Backbone])}}
	if !slices.Equal(cal.Ladder, want) {
		t.Errorf("ladder %+v, want %+v", cal.Ladder, want)
	}
	cc := control.DefaultConfig("g")
	cc.Default, cc.LossK, cc.LossH, cc.LossAlpha = control.LowBitDefault, cal.Loss.K, cal.Loss.H, cfg.Control.LossAlpha
	plane, err := control.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range r.Losses {
		if _, err := plane.Step(control.Event{Type: control.EvStep, Step: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := plane.Step(control.Event{Type: control.EvLoss, Step: int64(i), Loss: l}); err != nil {
			t.Fatal(err)
		}
	}
	if plane.Alarms() != 0 {
		t.Errorf("the calibration record raised %d alarms with its own K %v, H %v", plane.Alarms(), cal.Loss.K, cal.Loss.H)
	}
	if _, err := Calibrate(r, r.Steps+1, cfg.Control); err == nil {
		t.Error("calibrated on more steps than the record has")
	}
	gd, err := Run(context.Background(), testConfig(GBinaryDefault), sets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Calibrate(gd, gd.Steps, cfg.Control); err == nil {
		t.Error("calibrated on a g-binary-default record")
	}
}

// TestMixedPlan runs the live plane on the four-rung ladder: with the
// G-Binary threshold set between the two groups' G-Binary cosines at the
// diagnostics the warm-up admits on (read off an always-FP32 run, whose
// first steps are the same), G-Ternary's at 1 and INT8's at -1, the
// group with the higher cosine is admitted to G-Binary and the other to
// INT8, and the INT8 group trains through its INT8 latch.
func TestMixedPlan(t *testing.T) {
	sets := &data.Sets{Train: blobs(1024, 4, 1), Test: blobs(256, 4, 2)}
	base := testConfig(AlwaysFP32)
	base.Fault.Rate = 0
	ref, err := Run(context.Background(), base, sets)
	if err != nil {
		t.Fatal(err)
	}
	var at *Diag
	for i := range ref.Diags {
		if d := &ref.Diags[i]; int64(d.Step) < base.Control.WarmupSteps {
			at = d
		}
	}
	if at == nil {
		t.Fatal("no diagnostics before the end of warm-up")
	}
	bb, hd := at.Binary.Groups[nn.Backbone], at.Binary.Groups[nn.Head]
	if bb == hd {
		t.Fatalf("backbone and head measure the same G-Binary cosine %v", bb)
	}
	want := map[string]string{"backbone": "g-binary", "head": "int8"}
	if hd > bb {
		want = map[string]string{"backbone": "int8", "head": "g-binary"}
	}
	cfg := testConfig(FP32Default)
	cfg.Fault.Rate = 0
	cfg.Control.Ladder = control.Ladder{{Format: lowbit.Binary, Min: (bb + hd) / 2}, {Format: lowbit.Ternary, Min: 1}, {Format: lowbit.Int8, Min: -1}}
	res, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range res.Actions {
		if a.Step == cfg.Control.WarmupSteps {
			got[a.Group] = a.Mode.String()
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("admitted %v at the end of warm-up (cosines backbone %.3f, head %.3f), want %v; actions %v", got, bb, hd, want, res.Actions)
	}
	if m := res.Epochs[1].Modes; res.Alarms == 0 && (m[nn.Backbone] != want["backbone"] || m[nn.Head] != want["head"]) {
		t.Errorf("epoch 2 modes %v, want %v", m, want)
	}
	t.Logf("cosines backbone %.3f head %.3f: %v; traffic %.4f, final accuracy %.3f, alarms %d", bb, hd, got, res.Traffic, res.Final, res.Alarms)
}
