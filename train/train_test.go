package train

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// TestPaperTrafficColumn checks Table 6's traffic column with the paper's
// model: ResNet-18 for 100 classes (11,220,132 parameters, head 51,300).
func TestPaperTrafficColumn(t *testing.T) {
	m := nn.ResNet18(rand.New(rand.NewPCG(1, 0)), 100)
	if got := m.NumParams(); got != 11220132 {
		t.Fatalf("ResNet-18/100 has %d parameters; want 11220132", got)
	}
	if got := m.GroupParams(nn.Head); got != 51300 {
		t.Fatalf("ResNet-18/100 head has %d parameters; want 51300", got)
	}
	for _, tt := range []struct {
		policy, want string
	}{
		{"fp32", "1.0000"},
		{"g-binary", "0.0313"},
		{"g-ternary", "0.0494"},
		{"backbone=g-binary,head=fp32", "0.0357"},
		{"backbone=g-ternary,head=fp32", "0.0537"},
		{"backbone=fp32,head=g-binary", "0.9956"},
		{"backbone=fp32,head=g-ternary", "0.9957"},
	} {
		p, err := ParsePolicy(tt.policy)
		if err != nil {
			t.Fatal(err)
		}
		tr := PolicyTraffic(m, p)
		if got := FormatRatio(tr.Paper.Ratio); got != tt.want {
			t.Errorf("PolicyTraffic(%s).Paper.Ratio = %s; want %s", tt.policy, got, tt.want)
		}
		// Direct arithmetic: bits per element weighted by group size.
		bits := map[Rule]float64{FormatRule(lowbit.FP32): 32, FormatRule(lowbit.Binary): 1, FormatRule(lowbit.Ternary): 1.58}
		want := (bits[p[0].Rule]*11168832 + bits[p[1].Rule]*51300) / (32 * 11220132)
		if d := tr.Paper.Ratio - want; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s: ratio %v; direct %v", tt.policy, tr.Paper.Ratio, want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Policy
		err  bool
	}{
		{in: "g-binary", want: Uniform(RuleSpec{Rule: FormatRule(lowbit.Binary)})},
		{in: "backbone=g-ternary,head=fp32", want: Split(RuleSpec{Rule: FormatRule(lowbit.Ternary)}, RuleSpec{Rule: FormatRule(lowbit.FP32)})},
		{in: " head = fp32@0.01 , backbone = binary ", want: Split(RuleSpec{Rule: FormatRule(lowbit.Binary)}, RuleSpec{Rule: FormatRule(lowbit.FP32), LR: 0.01})},
		{in: "g-ternary/margin:2", want: Uniform(RuleSpec{Rule: FormatRule(lowbit.Ternary), Gate: lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 2}})},
		{in: "g-ternary/worker:0.5", want: Uniform(RuleSpec{Rule: FormatRule(lowbit.Ternary), Gate: lowbit.Gate{Kind: lowbit.GateWorker}, GateTau: 0.5})},
		{in: "majority-sign+ef@0.001", want: Uniform(RuleSpec{Rule: MajoritySign, EF: true, LR: 0.001})},
		{in: "SignOfMean", want: Uniform(RuleSpec{Rule: SignOfMean})},
		{in: "", err: true},
		{in: "adam", err: true},
		{in: "backbone=fp32", err: true},                // head missing
		{in: "backbone=fp32,backbone=fp32", err: true},  // twice
		{in: "neck=fp32,head=fp32", err: true},          // unknown group
		{in: "fp32/margin:2", err: true},                // gate on fp32
		{in: "sign-of-mean+ef", err: true},              // EF not for SoM
		{in: "fp32@-1", err: true},                      // negative lr
		{in: "fp32@nan", err: true},                     // NaN lr
		{in: "g-ternary/margin:0", err: true},           // bad gate
		{in: "g-ternary/worker:-1", err: true},          // bad tau
		{in: "backbone=g-binary;head=fp32", err: true},  // wrong separator
		{in: "backbone=g-binary,head=fp32,", err: true}, // trailing comma
		{in: "backbone=,head=fp32", err: true},          // empty rule
		{in: "backbone=g-binary,head=g-ternary/x", err: true},
	} {
		got, err := ParsePolicy(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParsePolicy(%q) error %v; want error %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParsePolicy(%q) = %+v; want %+v", tt.in, got, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "policy") {
			t.Errorf("ParsePolicy(%q) error %q does not name the policy", tt.in, err)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"g-binary", "backbone=g-ternary,head=fp32", "g-ternary/margin:2@0.01", "g-ternary/worker:0.5", "majority-sign+ef", "head=fp32@1e-3,backbone=sign-of-mean", "g-ternary/pattern:5", "=,", "@@", "g-ternary/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParsePolicy(%q) = %+v, which does not validate: %v", s, p, err)
		}
		q, err := ParsePolicy(p.String())
		if err != nil {
			t.Fatalf("ParsePolicy(%q).String() = %q does not parse: %v", s, p.String(), err)
		}
		if q != p {
			t.Fatalf("round trip %q -> %q: %+v != %+v", s, p.String(), q, p)
		}
		_ = p.Label()
	})
}

// synthSets is a small learnable 3-class problem: 1x4x4 images whose
// class is which third of the image is brightest.
func synthSets(n int, seed uint64) *data.Sets {
	mk := func(n int, stream uint64) *data.Dataset {
		r := rand.New(rand.NewPCG(seed, stream))
		d := &data.Dataset{Name: fmt.Sprintf("synth/%d", stream), C: 1, H: 4, W: 4, Classes: 3,
			Pixels: make([]uint8, n*16), Labels: make([]int, n), Mean: []float32{0.3}, Std: []float32{0.3}}
		for i := range n {
			c := r.IntN(3)
			d.Labels[i] = c
			for p := range 16 {
				v := r.IntN(120)
				if p%3 == c {
					v += 100
				}
				d.Pixels[i*16+p] = uint8(v)
			}
		}
		return d
	}
	return &data.Sets{Train: mk(n, 0), Test: mk(n/4, 1)}
}

func baseConfig() Config {
	return Config{Model: "mlp", Hidden: []int{12}, Batch: 32, Epochs: 3, LR: 0.05, SignLR: 0.005, Momentum: 0.9, WeightDecay: 1e-4,
		Layout: lowbit.WorkerMajor, Seed: 3, DiagEpochs: []int{2}, DiagSteps: 4}
}

func TestRunLearnsAndRecords(t *testing.T) {
	sets := synthSets(640, 1)
	for _, policy := range []string{"fp32", "g-binary", "backbone=g-ternary,head=fp32", "majority-sign+ef", "sign-of-mean"} {
		cfg := baseConfig()
		cfg.Policy, _ = ParsePolicy(policy)
		res, err := Run(context.Background(), cfg, sets)
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		if len(res.Epochs) != 3 || len(res.Steps) != 3*20 || len(res.Diags) != 1 || res.Diags[0].Steps != 4 {
			t.Fatalf("%s: %d epochs, %d steps, diags %+v", policy, len(res.Epochs), len(res.Steps), res.Diags)
		}
		if res.Final < 0.6 {
			t.Errorf("%s: final accuracy %.3f; want >= 0.6 on the easy synthetic task", policy, res.Final)
		}
	}
}

// TestResumeEqualsUninterrupted runs 3 epochs straight and 1 + resume to
// 3, with controller rules and error feedback, and compares the final
// checkpoints byte for byte (parameters, velocities, residuals, history).
func TestResumeEqualsUninterrupted(t *testing.T) {
	sets := synthSets(320, 2)
	dir := t.TempDir()
	cfg := baseConfig()
	cfg.Policy, _ = ParsePolicy("backbone=g-ternary+ef,head=g-binary")
	cfg.Checkpoint = filepath.Join(dir, "straight.ckpt")
	straight, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Checkpoint = filepath.Join(dir, "resumed.ckpt")
	cfg.Resume = true
	cfg.Epochs = 1
	if _, err := Run(context.Background(), cfg, sets); err != nil {
		t.Fatal(err)
	}
	cfg.Epochs = 3
	resumed, err := Run(context.Background(), cfg, sets)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.ResumedFrom != 1 {
		t.Errorf("resumed from epoch %d; want 1", resumed.ResumedFrom)
	}
	if !reflect.DeepEqual(straight.History, resumed.History) {
		t.Error("resumed history differs from the uninterrupted one")
	}
	a, _ := os.ReadFile(filepath.Join(dir, "straight.ckpt"))
	b, _ := os.ReadFile(filepath.Join(dir, "resumed.ckpt"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("final checkpoints differ (%d vs %d bytes)", len(a), len(b))
	}
	// A checkpoint from another configuration is refused.
	cfg.Seed++
	if _, err := Run(context.Background(), cfg, sets); err == nil || !strings.Contains(err.Error(), "different configuration") {
		t.Errorf("resume with another seed: err %v", err)
	}
}

func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	sets := synthSets(320, 3)
	dir := t.TempDir()
	cfg := baseConfig()
	cfg.Epochs = 2
	cfg.Policy, _ = ParsePolicy("backbone=g-binary,head=majority-sign+ef")
	var files [2][]byte
	for i, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		cfg.Checkpoint = filepath.Join(dir, fmt.Sprintf("p%d.ckpt", procs))
		_, err := Run(context.Background(), cfg, sets)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		files[i], _ = os.ReadFile(cfg.Checkpoint)
	}
	if len(files[0]) == 0 || !bytes.Equal(files[0], files[1]) {
		t.Error("GOMAXPROCS 1 and 4 give different checkpoints")
	}
}

func TestLayoutsTrainIdentically(t *testing.T) {
	sets := synthSets(320, 4)
	var hist [2]History
	for i, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		cfg := baseConfig()
		cfg.Epochs = 2
		cfg.Layout = layout
		cfg.Policy, _ = ParsePolicy("backbone=g-ternary,head=g-binary")
		res, err := Run(context.Background(), cfg, sets)
		if err != nil {
			t.Fatal(err)
		}
		hist[i] = res.History
	}
	if !reflect.DeepEqual(hist[0], hist[1]) {
		t.Error("element-major and worker-major controller paths train differently")
	}
}

func TestConfigErrors(t *testing.T) {
	sets := synthSets(64, 5)
	for _, tt := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"model", func(c *Config) { c.Model = "vgg" }, "model"},
		{"workers", func(c *Config) { c.Workers = -1 }, "workers"},
		{"batch", func(c *Config) { c.Batch = 4 }, "batch"},
		{"epochs", func(c *Config) { c.Epochs = 0 }, "epochs"},
		{"lr", func(c *Config) { c.LR = 0 }, "learning rate"},
		{"signlr", func(c *Config) { c.SignLR = -1 }, "sign learning rate"},
		{"momentum", func(c *Config) { c.Momentum = 1 }, "momentum"},
		{"wd", func(c *Config) { c.WeightDecay = -1 }, "weight decay"},
		{"hidden", func(c *Config) { c.Hidden = []int{0} }, "hidden"},
		{"diag", func(c *Config) { c.DiagEpochs = []int{0} }, "diagnostic"},
		{"resume", func(c *Config) { c.Resume = true }, "checkpoint"},
		{"packet workers", func(c *Config) {
			c.Workers, c.Layout, c.Policy = 16, lowbit.ElementMajor, Uniform(RuleSpec{Rule: FormatRule(lowbit.Binary)})
		}, "element-major"},
		{"policy", func(c *Config) { c.Policy = Uniform(RuleSpec{Rule: 9}) }, "policy"},
		// An int16 lane sums at most 258 workers' codes exactly.
		{"int8 workers", func(c *Config) {
			c.Workers, c.Batch, c.Policy = 300, 600, Split(RuleSpec{Rule: FormatRule(lowbit.Int8)}, RuleSpec{Rule: FormatRule(lowbit.FP32)})
		}, "group backbone: workers: format int8 sums 1 to 258 workers"},
		{"bfp8 workers", func(c *Config) {
			c.Workers, c.Batch, c.Policy = 259, 600, Split(RuleSpec{Rule: FormatRule(lowbit.FP32)}, RuleSpec{Rule: FormatRule(lowbit.BFP8)})
		}, "group head: workers: format bfp8 sums 1 to 258 workers"},
		{"data", func(c *Config) { c.Batch = 128 }, "smaller than one batch"},
		{"cnn shape", func(c *Config) { c.Model = "cnn"; c.Hidden = nil }, ""},
	} {
		cfg := baseConfig()
		tt.mod(&cfg)
		_, err := Run(context.Background(), cfg, sets)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := baseConfig()
	if _, err := Run(ctx, cfg, synthSets(64, 6)); err == nil {
		t.Error("cancelled run returned no error")
	}
}
