package train

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// TestLatchedFP32LoopEqualsRun drives a Loop over a latched aggregator
// whose latches stay on FP32 bypass (what an always-FP32 pilot runs) and
// checks that its weights and velocities equal, bit for bit, those Run
// writes to its checkpoint for the FP32 policy.
func TestLatchedFP32LoopEqualsRun(t *testing.T) {
	sets := synthSets(320, 5)
	cfg := baseConfig()
	cfg.Workers, cfg.DiagEpochs = 8, nil
	cfg.Policy = Uniform(RuleSpec{Rule: FormatRule(lowbit.FP32)})
	cfg.Checkpoint = filepath.Join(t.TempDir(), "run.ckpt")
	if _, err := Run(context.Background(), cfg, sets); err != nil {
		t.Fatal(err)
	}
	ck, err := nn.LoadCheckpoint(cfg.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	l := latchedLoop(t, cfg, sets)
	m := l.Stepper.Model
	if err := l.Run(context.Background(), 1, cfg.Epochs); err != nil {
		t.Fatal(err)
	}
	for _, prm := range m.Params {
		want := ck.Tensor(prm.Name)
		if want == nil {
			t.Fatalf("checkpoint lacks %s", prm.Name)
		}
		for j, v := range prm.Value {
			if math.Float32bits(v) != math.Float32bits(want.Data[j]) {
				t.Fatalf("%s[%d] = %v; Run's is %v", prm.Name, j, v, want.Data[j])
			}
		}
	}
	if l.VelocityResets != 0 {
		t.Errorf("%d velocity resets on a fixed policy", l.VelocityResets)
	}
}

// TestVelocityResetOnSwitch switches the backbone's latches to G-Binary
// before step 3 and back to FP32 before step 6: each switch clears the
// backbone's velocity (so right after the step it equals that step's
// update direction plus weight decay, by SGD's v ← μ·v + d + λ·w with
// v = 0), and the head's velocity is left alone.
func TestVelocityResetOnSwitch(t *testing.T) {
	sets := synthSets(320, 6)
	cfg := baseConfig()
	cfg.Workers, cfg.DiagEpochs, cfg.Epochs = 8, nil, 1
	cfg.Policy = Uniform(RuleSpec{Rule: FormatRule(lowbit.FP32)})
	l := latchedLoop(t, cfg, sets)
	m := l.Stepper.Model
	lw, regions := l.Agg.Latches()
	var before [][]float32 // weights before the step
	var checked int
	l.Hooks = Hooks{
		BeforeStep: func(s *Step) error {
			before = before[:0]
			for _, prm := range m.Params {
				before = append(before, append([]float32(nil), prm.Value...))
			}
			mode := map[int]cxl.Mode{3: cxl.Aggregate(lowbit.Binary), 6: cxl.FP32Bypass}
			if md, ok := mode[s.Index]; ok {
				for _, id := range regions[nn.Backbone.String()] {
					if err := lw.SetMode(id, md, 0); err != nil {
						return err
					}
				}
			}
			return nil
		},
		AfterAggregate: func(s *Step) error {
			if s.Index != 3 && s.Index != 6 {
				return nil
			}
			want := map[int]Rule{3: FormatRule(lowbit.Binary), 6: FormatRule(lowbit.FP32)}[s.Index]
			if s.Policy[nn.Backbone].Rule != want || s.Policy[nn.Head].Rule != FormatRule(lowbit.FP32) {
				t.Errorf("step %d policy %v", s.Index, s.Policy)
			}
			for i, prm := range m.Params {
				if prm.Group != nn.Backbone {
					continue
				}
				for j, v := range l.Opt.Vel[i] {
					// With v cleared, v = d + λ·w: for G-Binary d is a
					// vote in {-1, 0, +1}, for FP32 the workers' mean.
					d := float64(v - cfg.WeightDecay*before[i][j])
					ok := math.Abs(d-float64(l.Agg.Mean()[i][j])) < 1e-6
					if want == FormatRule(lowbit.Binary) {
						ok = math.Abs(d) < 1e-4 || math.Abs(math.Abs(d)-1) < 1e-4
					}
					if !ok {
						t.Fatalf("step %d %s[%d]: velocity %v is not a fresh step", s.Index, prm.Name, j, v)
					}
				}
			}
			checked++
			return nil
		},
	}
	if err := l.Run(context.Background(), 1, 1); err != nil {
		t.Fatal(err)
	}
	if checked != 2 || l.VelocityResets != 2 {
		t.Errorf("checked %d steps, %d velocity resets; want 2 and 2", checked, l.VelocityResets)
	}
}

// latchedLoop is a Loop of cfg over a latched aggregator (every latch on
// FP32 bypass, the paper's gate), as a pilot builds it.
func latchedLoop(t *testing.T, cfg Config, sets *data.Sets) *Loop {
	t.Helper()
	m, err := NewModel(cfg, sets.Train, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	agg, err := NewLatchedAggregator(m, cfg.Workers, cfg.Layout, lowbit.PaperGate)
	if err != nil {
		t.Fatal(err)
	}
	return NewLoop(cfg, m, agg, sets.Train, sets.Test)
}
