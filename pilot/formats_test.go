package pilot

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"runtime"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

func formatTestConfig(r control.Ladder) FormatConfig {
	return FormatConfig{
		Train:        train.Config{Model: "mlp", Hidden: []int{16}, Workers: 4, Batch: 64, Epochs: 3, LR: 0.05, SignLR: 0.002, Momentum: 0.9, Seed: 3},
		WarmupEpochs: 1, DiagSteps: 4, Ladder: r,
	}
}

// TestRunFormats checks the pilot against independent paths: its warm-up
// epoch is an FP32 train.Run's first epoch bit for bit, its warm-up
// cosines are WarmupCosines', and its plan is what Ladder.Admit says on
// those cosines, for ladders whose answer is known without running: a
// rung at -1 passes any cosine, no rung keeps FP32.
func TestRunFormats(t *testing.T) {
	sets := &data.Sets{Train: blobs(1024, 4, 1), Test: blobs(256, 4, 2)}
	ctx := context.Background()
	base := formatTestConfig(nil)
	tc := base.Train
	tc.Policy, tc.Epochs = train.Uniform(train.RuleSpec{Rule: train.FormatRule(lowbit.FP32)}), 1
	fp, err := train.Run(ctx, tc, sets)
	if err != nil {
		t.Fatal(err)
	}
	cal, n, err := WarmupCosines(ctx, base.Train, 1, 4, sets)
	if err != nil || n != 4 {
		t.Fatalf("WarmupCosines: %d steps, %v", n, err)
	}
	for _, tt := range []struct {
		name   string
		rungs  control.Ladder
		plan   string
		resets int
	}{
		{"binary passes anything", control.Ladder{{Format: lowbit.Binary, Min: -1}, {Format: lowbit.Int8, Min: -1}}, "g-binary", 2},
		{"int8 only", control.Ladder{{Format: lowbit.Int8, Min: 0.95}}, "int8", 0}, // Int8 trains with the FP32 rate: no velocity reset
		{"no rungs", control.Ladder{}, "fp32", 0},
	} {
		res, err := RunFormats(ctx, formatTestConfig(tt.rungs), sets)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if res.Plan != tt.plan || res.VelocityResets != tt.resets {
			t.Errorf("%s: plan %s with %d velocity resets; want %s, %d", tt.name, res.Plan, res.VelocityResets, tt.plan, tt.resets)
		}
		if res.Warmup != cal || res.WarmupSteps != 4 {
			t.Errorf("%s: warm-up cosines %+v differ from WarmupCosines' %+v", tt.name, res.Warmup, cal)
		}
		e := res.Epochs[0]
		if math.Float64bits(e.TrainLoss) != math.Float64bits(fp.Epochs[0].TrainLoss) || e.ValAcc != fp.Epochs[0].ValAcc {
			t.Errorf("%s: warm-up epoch %+v differs from FP32 train.Run's %+v", tt.name, e, fp.Epochs[0])
		}
		for _, g := range nn.Groups() {
			var cos [lowbit.NumFormats]float64
			for f := range cos {
				cos[f] = cal[f].Groups[g]
			}
			f, why := tt.rungs.Admit(cos)
			if res.Admitted[g] != f.String() || res.Reasons[g] != why {
				t.Errorf("%s: %v admitted %s (%s); the ladder says %v (%s)", tt.name, g, res.Admitted[g], res.Reasons[g], f, why)
			}
		}
		p, err := train.ParsePolicy(res.Plan)
		if err != nil {
			t.Fatal(err)
		}
		if tr := train.PolicyTraffic(sets2model(t, base.Train, sets), p); tr.Paper.Ratio != res.Traffic.Paper.Ratio {
			t.Errorf("%s: traffic %v; want %v", tt.name, res.Traffic.Paper.Ratio, tr.Paper.Ratio)
		}
		if len(res.Epochs) != 3 || res.Final != res.Epochs[2].ValAcc {
			t.Errorf("%s: %d epochs, final %v", tt.name, len(res.Epochs), res.Final)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var back FormatResult
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) {
			t.Errorf("%s: JSON round trip differs:\n%s\n%s", tt.name, b, b2)
		}
	}
}

func sets2model(t *testing.T, tc train.Config, sets *data.Sets) *nn.Model {
	t.Helper()
	m, err := train.NewModel(tc, sets.Train, tc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRunFormatsErrors(t *testing.T) {
	sets := &data.Sets{Train: blobs(256, 4, 1), Test: blobs(64, 4, 2)}
	for name, mod := range map[string]func(*FormatConfig){
		"no warm-up":         func(c *FormatConfig) { c.WarmupEpochs = 0 },
		"warm-up to the end": func(c *FormatConfig) { c.WarmupEpochs = 3 },
		"no diagnostics":     func(c *FormatConfig) { c.DiagSteps = 0 },
		"fp32 rung":          func(c *FormatConfig) { c.Ladder = control.Ladder{{Format: lowbit.FP32, Min: 0.5}} },
		"bad threshold":      func(c *FormatConfig) { c.Ladder = control.Ladder{{Format: lowbit.Int8, Min: math.NaN()}} },
	} {
		cfg := formatTestConfig(control.ExtendedLadder())
		mod(&cfg)
		if _, err := RunFormats(context.Background(), cfg, sets); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, _, err := WarmupCosines(context.Background(), formatTestConfig(nil).Train, 0, 4, sets); err == nil {
		t.Error("WarmupCosines with no warm-up accepted")
	}
}

func TestRunFormatsDeterministicAcrossGOMAXPROCS(t *testing.T) {
	sets := &data.Sets{Train: blobs(512, 4, 1), Test: blobs(128, 4, 2)}
	cfg := formatTestConfig(control.Ladder{{Format: lowbit.Binary, Min: 0}, {Format: lowbit.BFP8, Min: 0.9}})
	var out [2][]byte
	for i, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		res, err := RunFormats(context.Background(), cfg, sets)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Error("GOMAXPROCS 1 and 4 give different format pilots")
	}
}
