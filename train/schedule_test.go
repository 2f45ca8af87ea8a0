package train

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/usage"
)

// TestScheduleFactorHandComputed checks Factor against values worked out
// by hand from the formulas in Schedule's doc comment.
func TestScheduleFactorHandComputed(t *testing.T) {
	cos := func(x float64) float64 { return math.Cos(x) }
	for _, tt := range []struct {
		s       string
		step    int
		batches int
		epochs  int
		want    float64
	}{
		{"constant", 7, 4, 3, 1},
		{"constant:warmup=1", 0, 4, 3, 0.25},
		{"constant:warmup=1", 3, 4, 3, 1},
		{"constant:warmup=1", 11, 4, 3, 1},
		// cosine without warm-up over T = 12 steps: 1 at step 0, 1/2 half
		// way, (1 + cos(11π/12))/2 on the last step.
		{"cosine", 0, 4, 3, 1},
		{"cosine", 6, 4, 3, 0.5},
		{"cosine", 11, 4, 3, (1 + cos(11*math.Pi/12)) / 2},
		// one epoch (4 steps) of warm-up: 1/4, 2/4, 3/4, 4/4; then the
		// cosine over the remaining 8 steps starts at 1.
		{"cosine:warmup=1", 0, 4, 3, 0.25},
		{"cosine:warmup=1", 2, 4, 3, 0.75},
		{"cosine:warmup=1", 3, 4, 3, 1},
		{"cosine:warmup=1", 4, 4, 3, 1},
		{"cosine:warmup=1", 8, 4, 3, 0.5},
		{"cosine:warmup=0.5", 1, 4, 3, 1},
		{"cosine:warmup=1:floor=0.1", 8, 4, 3, 0.1 + 0.9*0.5},
		// step decay over 8 epochs: milestones 5 and 7 by default.
		{"step", 7, 2, 8, 1},     // epoch 4
		{"step", 8, 2, 8, 0.1},   // epoch 5
		{"step", 11, 2, 8, 0.1},  // epoch 6
		{"step", 12, 2, 8, 0.01}, // epoch 7
		{"step:gamma=0.5:at=3", 4, 2, 8, 0.5},
		{"step:gamma=0.5:at=3", 3, 2, 8, 1},
		{"step:warmup=2", 1, 2, 8, 0.5},
	} {
		s, err := ParseSchedule(tt.s)
		if err != nil {
			t.Fatalf("%s: %v", tt.s, err)
		}
		if err := s.Validate(tt.epochs); err != nil {
			t.Fatalf("%s: %v", tt.s, err)
		}
		if got := s.Factor(tt.step, tt.batches, tt.epochs); math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("%s: Factor(%d, %d, %d) = %v; want %v", tt.s, tt.step, tt.batches, tt.epochs, got, tt.want)
		}
	}
}

func TestScheduleParseRoundTrip(t *testing.T) {
	for _, text := range []string{"constant", "cosine", "cosine:warmup=1", "cosine:warmup=0.5:floor=0.01", "step", "step:gamma=0.2:at=3+6", "step:warmup=1", "constant:warmup=2"} {
		s, err := ParseSchedule(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if s.String() != text {
			t.Errorf("ParseSchedule(%q).String() = %q", text, s.String())
		}
	}
	if s, err := ParseSchedule(""); err != nil || !s.IsConstant() {
		t.Errorf(`ParseSchedule("") = %v, %v; want constant`, s, err)
	}
}

// TestScheduleErrors: every malformed or impossible schedule is a usage
// error naming what is wrong.
func TestScheduleErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"linear", "kind"},
		{"cosine:warmup", "key=value"},
		{"cosine:warmup=1:warmup=2", "each key once"},
		{"cosine:speed=2", "unknown setting"},
		{"cosine:warmup=NaN", "finite"},
		{"cosine:warmup=-1", "warm-up"},
		{"cosine:warmup=10", "before the last"},
		{"cosine:floor=1", "floor"},
		{"step:floor=0.1", "cosine's setting"},
		{"cosine:gamma=0.5", "step decay's settings"},
		{"step:gamma=0", "stops training"},
		{"step:gamma=2", "gamma"},
		{"step:at=x", "not an epoch"},
		{"step:at=5+3", "milestones"},
		{"step:at=1", "milestones"},
		{"step:at=11", "milestones"},
	} {
		s, err := ParseSchedule(tt.text)
		if err == nil {
			err = s.Validate(10)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !usage.Is(err) {
			t.Errorf("%q: error %v; want a usage error mentioning %q", tt.text, err, tt.want)
		}
	}
	cfg := baseConfig()
	cfg.Schedule = Schedule{Kind: Cosine, Warmup: 3}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "warm-up") {
		t.Errorf("Config.Validate with a 3-epoch warm-up of 3 epochs: %v", err)
	}
}

// TestScheduleScalesEveryGroupAlike trains a mixed policy (G-Binary
// backbone, FP32 head) under a cosine schedule with warm-up, with no
// momentum and no weight decay, so that each step moves a weight by
// exactly lr_group · factor · d: the G-Binary backbone's weights move by
// SignLR·factor or not at all (d in {-1, 0, +1}), and the factor every
// step reports is the closed form's.
func TestScheduleScalesEveryGroupAlike(t *testing.T) {
	sets := synthSets(320, 7)
	cfg := baseConfig()
	cfg.Momentum, cfg.WeightDecay, cfg.DiagEpochs, cfg.Epochs = 0, 0, nil, 2
	cfg.Policy, _ = ParsePolicy("backbone=g-binary,head=fp32")
	cfg.Schedule = Schedule{Kind: Cosine, Warmup: 0.5}
	l, err := Start(cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	m := l.Stepper.Model
	var before [][]float32
	steps := 0
	l.Hooks = Hooks{
		BeforeStep: func(*Step) error {
			before = before[:0]
			for _, p := range m.Params {
				before = append(before, append([]float32(nil), p.Value...))
			}
			return nil
		},
		AfterAggregate: func(s *Step) error {
			want := cfg.Schedule.Factor(steps, s.Batches, cfg.Epochs)
			if s.LRFactor != want {
				return fmt.Errorf("step %d: factor %v; want %v", steps, s.LRFactor, want)
			}
			lr := float64(cfg.SignLR) * want
			for i, p := range m.Params {
				if p.Group != nn.Backbone {
					continue
				}
				for j, w := range p.Value {
					d := math.Abs(float64(w) - float64(before[i][j]))
					// float32 rounding of lr and of w - lr·u: within an ulp
					// of each.
					ulp := float64(math.Nextafter32(float32(math.Abs(float64(w))), math.MaxFloat32)) - math.Abs(float64(w))
					if d != 0 && math.Abs(d-lr) > 2*ulp+1e-6*lr {
						return fmt.Errorf("step %d: %s[%d] moved %g; want 0 or %g", steps, p.Name, j, d, lr)
					}
				}
			}
			steps++
			return nil
		},
	}
	if err := l.Run(context.Background(), 1, cfg.Epochs); err != nil {
		t.Fatal(err)
	}
	if steps != 2*10 {
		t.Fatalf("%d steps; want 20", steps)
	}
}

// TestScheduleChangesTrainingAndResumes: a cosine run differs from the
// constant one, is the same for GOMAXPROCS 1 and 4, resumes bit for bit,
// and a checkpoint written for another length or schedule is refused
// (the cosine's every step depends on both).
func TestScheduleChangesTrainingAndResumes(t *testing.T) {
	sets := synthSets(320, 8)
	dir := t.TempDir()
	cfg := baseConfig()
	cfg.Policy, _ = ParsePolicy("backbone=g-ternary,head=fp32")
	constant, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = Schedule{Kind: Cosine, Warmup: 1}
	var files [2][]byte
	var straight *Result
	for i, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		cfg.Checkpoint = filepath.Join(dir, fmt.Sprintf("p%d.ckpt", procs))
		straight, err = Run(context.Background(), cfg, sets)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		files[i], _ = os.ReadFile(cfg.Checkpoint)
	}
	if len(files[0]) == 0 || !bytes.Equal(files[0], files[1]) {
		t.Error("GOMAXPROCS 1 and 4 give different checkpoints under a schedule")
	}
	if reflect.DeepEqual(constant.History, straight.History) {
		t.Error("the cosine schedule trained exactly as the constant one")
	}
	// Interrupt after epoch 2 by cancelling at its end, then resume.
	cfg.Checkpoint = filepath.Join(dir, "resumed.ckpt")
	cfg.Resume = true
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Logf = func(format string, args ...any) {
		if strings.Contains(fmt.Sprintf(format, args...), "epoch 2/3: train loss") {
			cancel()
		}
	}
	if _, err := Run(ctx, cfg, sets); err == nil {
		t.Fatal("the interrupted run did not stop")
	}
	cfg.Logf = nil
	resumed, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.ResumedFrom != 2 || !reflect.DeepEqual(straight.History, resumed.History) {
		t.Errorf("resumed from %d; histories equal: %v", resumed.ResumedFrom, reflect.DeepEqual(straight.History, resumed.History))
	}
	b, _ := os.ReadFile(cfg.Checkpoint)
	if !bytes.Equal(files[0], b) {
		t.Error("the resumed run's last checkpoint differs from the uninterrupted one's")
	}
	for _, mod := range []func(*Config){
		func(c *Config) { c.Epochs = 4 },
		func(c *Config) { c.Schedule = Schedule{Kind: StepDecay} },
	} {
		c := cfg
		mod(&c)
		if _, err := Run(context.Background(), c, sets); err == nil || !strings.Contains(err.Error(), "different configuration") {
			t.Errorf("resume under another length or schedule: err %v", err)
		}
	}
}
