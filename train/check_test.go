package train

import (
	"context"
	"strings"
	"testing"
)

// TestResultConsistent: a run's own result is consistent, for every rule
// family; each tampering a saved run has been found with is not: a final
// accuracy of 7.0 (printed 700%), negative accuracy or traffic, a cosine
// of 5, a final accuracy contradicting its epochs, an FP32 run relabelled
// G-Binary (label and policy changed, traffic left as FP32's).
func TestResultConsistent(t *testing.T) {
	sets := synthSets(320, 2)
	runs := map[string]*Result{}
	for _, policy := range []string{"fp32", "g-binary", "backbone=g-ternary,head=fp32", "int8"} {
		cfg := baseConfig()
		cfg.Epochs = 2
		cfg.Policy, _ = ParsePolicy(policy)
		r, err := Run(context.Background(), cfg, sets)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CheckConsistent(); err != nil {
			t.Errorf("%s: the run's own result: %v", policy, err)
		}
		runs[policy] = r
	}
	fp32 := runs["fp32"]
	for _, tc := range []struct {
		name string
		edit func(r *Result)
		want string
	}{
		{"final 7.0", func(r *Result) { r.Final = 7 }, "final accuracy 7, but the last epoch's"},
		{"accuracy above 1", func(r *Result) { r.Epochs[1].ValAcc, r.Final = 7, 7 }, "want both in [0, 1]"},
		{"negative accuracy", func(r *Result) { r.Epochs[0].ValAcc = -0.1 }, "want both in [0, 1]"},
		{"final contradicts epochs", func(r *Result) { r.Final = r.Epochs[0].ValAcc + 0.01 }, "the last epoch's validation accuracy"},
		{"cosine 5", func(r *Result) { r.Diags[0].Binary.Groups[0] = 5 }, "cosine 5 outside [-1, 1]"},
		{"negative traffic", func(r *Result) { r.Traffic.Paper.Ratio = -1 }, "traffic ratio -1"},
		{"relabelled g-binary", func(r *Result) { r.Policy, r.Label = "g-binary", "G-Binary all" }, "policy g-binary on"},
		{"label only", func(r *Result) { r.Label = "G-Binary all" }, `label "G-Binary all", but policy fp32 is "FP32 all"`},
		{"unknown policy", func(r *Result) { r.Policy = "bogus" }, "bogus"},
		{"head beyond params", func(r *Result) { r.Head = r.Params + 1 }, "head"},
		{"epochs renumbered", func(r *Result) { r.Epochs[1].Epoch = 5 }, "epoch 2 is numbered 5"},
		{"negative loss", func(r *Result) { r.Epochs[0].TrainLoss = -1 }, "losses"},
	} {
		r := *fp32
		r.Epochs = append([]EpochStat(nil), fp32.Epochs...)
		r.Diags = append([]Diag(nil), fp32.Diags...)
		tc.edit(&r)
		if err := r.CheckConsistent(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
