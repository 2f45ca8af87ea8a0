package experiments

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/train"
	"github.com/neuronfabric/nfabric/usage"
)

// wantUsage fails t unless err is a usage error whose message contains
// want, or, with want "", unless err is nil.
func wantUsage(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("err %v; want nil", err)
	case want == "":
	case err == nil:
		t.Errorf("err nil; want one containing %q", want)
	case !usage.Is(err) || !strings.Contains(err.Error(), want):
		t.Errorf("err %q (usage %v); want a usage error containing %q", err, usage.Is(err), want)
	}
}

func TestTrainOptionsCheck(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *TrainOptions)
		want string
	}{
		{"quick boundary", func(*TrainOptions) {}, ""},
		{"no seeds", func(o *TrainOptions) { o.Seeds = 0 }, "--seeds 0 out of range [1, 100]"},
		{"too many seeds", func(o *TrainOptions) { o.Seeds = 101 }, "--seeds 101 out of range [1, 100]"},
		{"hundred seeds", func(o *TrainOptions) { o.Seeds = 100 }, ""},
		{"negative test-n", func(o *TrainOptions) { o.TestN = -1 }, "--train-n, --test-n and --per-class must be >= 0"},
		{"negative per-class", func(o *TrainOptions) { o.PerClass = -1 }, "--train-n, --test-n and --per-class must be >= 0"},
		{"all images", func(o *TrainOptions) { o.TrainN, o.TestN = 0, 0 }, ""},
		{"diag epoch past the last", func(o *TrainOptions) { o.Epochs, o.DiagEpoch = 3, 4 }, "--diag-epoch 4 out of range [0, 3]"},
		{"negative diag epoch", func(o *TrainOptions) { o.DiagEpoch = -1 }, "--diag-epoch -1 out of range"},
		{"last diag epoch", func(o *TrainOptions) { o.Epochs, o.DiagEpoch = 3, 3 }, ""},
		{"unknown model", func(o *TrainOptions) { o.Model = "transformer" }, `model "transformer"`},
		{"batch below workers", func(o *TrainOptions) { o.Batch, o.Workers = 4, 8 }, "batch 4 smaller than workers 8"},
		{"infinite lr", func(o *TrainOptions) { o.LR = float32(math.Inf(1)) }, "learning rate +Inf must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := BoundaryOptions(run.TierQuick, 1)
			tt.edit(&o)
			wantUsage(t, o.Check(), tt.want)
		})
	}
}

func TestSweepOptions(t *testing.T) {
	for _, tt := range []struct {
		study string
		tier  run.Tier
		base  func(run.Tier, uint64) TrainOptions
		want  string
	}{
		{StudyValidated, run.TierQuick, ValidatedOptions, ""},
		{StudyBoundary, run.TierStandard, BoundaryOptions, ""},
		{"sideways", run.TierQuick, nil, `--study "sideways": want validated or boundary`},
	} {
		o, err := SweepOptions(tt.study, tt.tier)
		wantUsage(t, err, tt.want)
		if tt.base == nil {
			continue
		}
		want := tt.base(tt.tier, 1)
		want.Seeds = 1
		if !reflect.DeepEqual(o, want) {
			t.Errorf("SweepOptions(%s, %v) = %+v; want the study's options with one seed", tt.study, tt.tier, o)
		}
	}
}

func rules(t *testing.T, names ...string) []train.Rule {
	t.Helper()
	var rs []train.Rule
	for _, n := range names {
		r, err := train.ParseRule(n)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestSweepRates(t *testing.T) {
	tests := []struct {
		name       string
		family     string
		rules      []string
		rulesGiven bool
		rates      []string
		wantRules  []string
		wantRates  []float32
		err        string
	}{
		{"sign default grid", "sign", []string{"g-binary", " g-ternary"}, false, nil,
			[]string{"g-binary", "g-ternary"}, []float32{3e-5, 1e-4, 3e-4, 1e-3}, ""},
		{"sign own grid", "sign", []string{"majority-sign"}, true, []string{"0.001", " 2e-3"},
			[]string{"majority-sign"}, []float32{0.001, 0.002}, ""},
		{"fp32 default grid", "fp32", []string{"g-binary", "g-ternary"}, false, nil,
			[]string{"fp32"}, []float32{0.02, 0.05, 0.1, 0.2, 0.4}, ""},
		{"fp32 with rules", "fp32", []string{"g-binary"}, true, nil, nil, nil,
			"--rules is for --rule sign; --rule fp32 trains FP32 alone"},
		{"fp32 among sign rules", "sign", []string{"g-binary", "fp32"}, true, nil, nil, nil,
			`--rules "g-binary,fp32": want comma-separated sign rules`},
		{"unknown rule", "sign", []string{"g-quaternary"}, true, nil, nil, nil, `--rules "g-quaternary"`},
		{"unknown family", "int8", nil, false, nil, nil, nil, `--rule "int8": want sign or fp32`},
		{"zero rate", "fp32", nil, false, []string{"0.1", "0"}, nil, nil, `--lrs "0.1,0": want positive comma-separated rates`},
		{"infinite rate", "sign", []string{"g-binary"}, false, []string{"inf"}, nil, nil, `--lrs "inf"`},
		{"NaN rate", "sign", []string{"g-binary"}, false, []string{"NaN"}, nil, nil, `--lrs "NaN"`},
		{"word rate", "sign", []string{"g-binary"}, false, []string{"fast"}, nil, nil, `--lrs "fast"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, lrs, err := SweepRates(tt.family, tt.rules, tt.rulesGiven, tt.rates)
			wantUsage(t, err, tt.err)
			if tt.err != "" {
				return
			}
			if want := rules(t, tt.wantRules...); !reflect.DeepEqual(rs, want) {
				t.Errorf("rules %v; want %v", rs, want)
			}
			if !reflect.DeepEqual(lrs, tt.wantRates) {
				t.Errorf("rates %v; want %v", lrs, tt.wantRates)
			}
		})
	}
}

func TestSweepSchedules(t *testing.T) {
	rs, ss, err := SweepSchedules(SweepScheduleRules, []string{"constant", "cosine:warmup=1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := rules(t, "fp32", "g-binary", "g-ternary"); !reflect.DeepEqual(rs, want) {
		t.Errorf("rules %v; want %v", rs, want)
	}
	if len(ss) != 2 || ss[0].String() != "constant" || ss[1].String() != "cosine:warmup=1" {
		t.Errorf("schedules %v; want constant, cosine:warmup=1", ss)
	}
	if _, _, err := SweepSchedules([]string{"fp32", "g-nope"}, []string{"constant"}); err == nil || !usage.Is(err) || !strings.HasPrefix(err.Error(), `--rules "fp32,g-nope": `) {
		t.Errorf("unknown rule: err %v", err)
	}
	if _, _, err := SweepSchedules([]string{"fp32"}, []string{"sawtooth"}); err == nil || !strings.HasPrefix(err.Error(), "--schedules: ") {
		t.Errorf("unknown schedule: err %v", err)
	}
}

func TestCheckSweep(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(o *TrainOptions)
		rules []string
		want  string
	}{
		{"quick", func(*TrainOptions) {}, []string{"g-binary", "g-ternary"}, ""},
		{"no training subset", func(o *TrainOptions) { o.TrainN = 0 }, []string{"fp32"},
			"--train-n must be at least 1: the held-out images follow the training subset"},
		{"element-major, 16 workers, sign rule", func(o *TrainOptions) { o.Layout, o.Workers = lowbit.ElementMajor, 16 }, []string{"g-binary"},
			"element-major layout carries at most 8 workers, not 16"},
		{"element-major, 16 workers, FP32", func(o *TrainOptions) { o.Layout, o.Workers = lowbit.ElementMajor, 16 }, []string{"fp32"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := BoundaryOptions(run.TierQuick, 1)
			tt.edit(&o)
			wantUsage(t, o.CheckSweep(rules(t, tt.rules...)), tt.want)
		})
	}
}
