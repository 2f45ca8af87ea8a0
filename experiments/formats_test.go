package experiments

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/train"
)

// handFormatRun is a made-up run of one format row: a flat five-epoch
// curve ending at final (%), and last-epoch cosines cos for its format.
func handFormatRun(t *testing.T, f lowbit.Format, seed uint64, final float64, cos [nn.NumGroups]float64) FormatsUnit {
	t.Helper()
	p := train.Uniform(train.RuleSpec{Rule: train.FormatRule(f)})
	m := nn.NewMLP(rand.New(rand.NewPCG(1, 0)), 16, []int{8}, 4)
	res := train.Result{Policy: p.String(), Label: p.Label(), Traffic: train.PolicyTraffic(m, p), Final: final / 100}
	for e := 1; e <= 5; e++ {
		res.Epochs = append(res.Epochs, train.EpochStat{Epoch: e, ValAcc: final / 100})
	}
	var fc train.FormatCosines
	fc[f].Groups = cos
	res.Diags = []train.Diag{{Epoch: 5, Steps: 1, Formats: &fc}}
	run := TrainRun{Study: StudyFormats, Label: p.Label(), Policy: p.String(), Seed: seed, Data: DataInfo{Name: "hand"}, Result: res}
	return FormatsUnit{Key: p.String(), Run: &run}
}

// TestFormatsLayoutHand lays out hand-made results whose verdicts are
// known without the code: INT8's paired differences (0.2, 0.1, -0.1) give
// mean 0.067 and t_{.975,2} s/sqrt(3) = 4.303 * 0.153 / 1.732 = 0.38, an
// interval [-0.31, 0.45] inside [-1, 1]: holds; BFP8's (-5, 0, 0) straddle
// it: inconclusive; BFP8's head cosines (0.97, 0.98, 0.99) give [0.955,
// 1.005], which straddles 0.99: the alignment claim is inconclusive; the
// traffic ratios are 8/32 and 8.125/32: holds; the pilot's plan mixes
// G-Binary and INT8: holds.
func TestFormatsLayoutHand(t *testing.T) {
	finals := map[lowbit.Format][]float64{
		lowbit.FP32: {60, 62, 64}, lowbit.Binary: {58, 60, 61}, lowbit.Ternary: {59, 61, 62},
		lowbit.Int8: {60.2, 62.1, 63.9}, lowbit.BFP8: {55, 62, 64},
	}
	var us []FormatsUnit
	for _, f := range lowbit.Formats() {
		for s, a := range finals[f] {
			cos := [nn.NumGroups]float64{0.9995, 0.9996}
			switch f {
			case lowbit.FP32:
				cos = [nn.NumGroups]float64{1, 1}
			case lowbit.Binary, lowbit.Ternary:
				cos = [nn.NumGroups]float64{0.6, 0.2}
			case lowbit.BFP8:
				cos[nn.Head] = 0.97 + 0.01*float64(s)
			}
			us = append(us, handFormatRun(t, f, uint64(s+1), a, cos))
		}
	}
	fp := &FormatsPilot{Data: DataInfo{Name: "hand100"}, Result: pilot.FormatResult{Seed: 1, Label: "G-Binary backbone + INT8 head",
		Admitted: train.PerGroup[string]{"g-binary", "int8"}}}
	us = append(us, FormatsUnit{Key: "pilot", Pilot: fp}, FormatsUnit{Key: "timing", Timing: &FormatsTiming{Stages: 5, ClockGHz: 2, ExposurePct: 1.19,
		Sum: map[string]FormatsModeTiming{"int8": {Mode: "int8", Stages: 3, ExposurePct: 0.71}, "bfp8": {Mode: "bfp8", Stages: 5, ExposurePct: 1.19}}}})
	o := FormatsOptionsFor(run.TierQuick, 1)
	res, err := FormatsLayout(o, us)
	if err != nil {
		t.Fatal(err)
	}
	catalogueMatches(t, "formats", run.Config{Tier: run.TierQuick}, res.Claims)
	verdicts := map[string]string{}
	for _, c := range res.Claims {
		verdicts[c.Name] = c.Verdict
		if c.Tier != "quick" {
			t.Errorf("claim %q: tier %q", c.Name, c.Tier)
		}
	}
	want := map[string]string{
		"INT8 matches FP32 accuracy":                                report.VerdictHolds,
		"BFP8 matches FP32 accuracy":                                report.VerdictInconclusive,
		"INT8 and BFP8 align with the FP32 gradient in every group": report.VerdictInconclusive,
		"INT8 and BFP8 traffic is 8/32 and 8.125/32 of FP32":        report.VerdictHolds,
		"the ladder with more rungs settles on a mixed plan":        report.VerdictHolds,
	}
	for name, v := range want {
		if verdicts[name] != v {
			t.Errorf("claim %q: %q; want %q", name, verdicts[name], v)
		}
	}
	tab := res.Tables[0]
	row := func(f string) []string {
		for _, r := range tab.Rows {
			if r[0] == f {
				return r
			}
		}
		t.Fatalf("no row %s in %v", f, tab.Rows)
		return nil
	}
	col := func(name string) int { return slices.Index(tab.Columns, name) }
	for _, tc := range []struct{ format, column, want string }{
		{"int8", "traffic ratio", "0.2500"},
		{"bfp8", "traffic ratio", "0.2539"},
		{"g-binary", "traffic ratio", "0.0313"},
		{"int8", "datapath cycles", "3 at 2 GHz (int8)"},
		{"bfp8", "datapath cycles", "5 at 2 GHz (bfp8)"},
		{"bfp8", "exposure (%)", "1.19"},
		{"bfp8", "cells 512-bit", "not run in this tier (block hardware)"},
		{"g-ternary", "exposure (%)", "1.19"},
		{"g-binary", "datapath cycles", "5 at 2 GHz"},
		{"fp32", "vs FP32 (points, 95% paired CI)", "reference"},
		{"int8", "evaluated by", "extension"},
		{"g-ternary", "evaluated by", "paper"},
		{"int8", "scale agreement (bits/step)", "128"}, // 4 tensors of the MLP, 32 bits each
		{"int8", "cosine head", "0.9996 ± 0.0000"},
	} {
		if got := row(tc.format)[col(tc.column)]; got != tc.want {
			t.Errorf("%s %s = %q; want %q", tc.format, tc.column, got, tc.want)
		}
	}
	if got := row("int8")[col("vs FP32 (points, 95% paired CI)")]; !strings.HasPrefix(got, "+0.07 95% CI [-0.31, 0.45]") {
		t.Errorf("int8 vs FP32 = %q", got)
	}
	fp.Result.Admitted = train.PerGroup[string]{"int8", "int8"}
	res, err = FormatsLayout(o, us)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Claims {
		if c.Name == "the ladder with more rungs settles on a mixed plan" && c.Verdict != report.VerdictDoesNotHold {
			t.Errorf("a uniform plan: %q", c.Verdict)
		}
	}
}

func TestFormatsUnits(t *testing.T) {
	for _, tc := range []struct {
		tier        run.Tier
		synth, pnr  bool
		warmup, len int
	}{{run.TierQuick, false, false, 1, 15 + 2}, {run.TierStandard, true, false, 2, 0}, {run.TierFull, true, true, 2, 0}} {
		o := FormatsOptionsFor(tc.tier, 1)
		us, err := FormatsUnits(o)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]string, len(us))
		for i, u := range us {
			keys[i] = u.Key
		}
		if slices.Contains(keys, "synth/512") != tc.synth || slices.Contains(keys, "pnr/512") != tc.pnr || o.PilotWarmup != tc.warmup {
			t.Errorf("%v: units %v, warm-up %d", tc.tier, keys, o.PilotWarmup)
		}
		if tc.len > 0 && len(us) != tc.len {
			t.Errorf("%v: %d units %v; want %d", tc.tier, len(us), keys, tc.len)
		}
		if !slices.Contains(keys, "int8/seed1") || !slices.Contains(keys, "pilot") {
			t.Errorf("%v: keys %v", tc.tier, keys)
		}
	}
	o := FormatsOptionsFor(run.TierQuick, 1)
	o.PilotWarmup = o.Pilot.Epochs
	if _, err := FormatsUnits(o); err == nil {
		t.Error("a warm-up as long as the pilot accepted")
	}
	var found bool
	for _, b := range run.Blocks() {
		found = found || (b.Name == "formats" && b.Order == 45)
	}
	if !found {
		t.Error("formats block not registered at order 45")
	}
}

// TestFormatsTimingUnit runs the block's timing unit: at Table 4's anchor
// the sum modes take their RTL pipelines' depths (hw's streaming
// accumulators: int8 input | accumulate | saturate, 3; bfp8 with
// its round and shift stages, 5) beside the paper's 5, and exposure
// follows depth.
func TestFormatsTimingUnit(t *testing.T) {
	us, err := FormatsUnits(FormatsOptionsFor(run.TierQuick, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if u.Key != "timing" {
			continue
		}
		r, err := u.Run(context.Background(), run.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ft := r.Timing
		i8, b8 := ft.Sum["int8"], ft.Sum["bfp8"]
		if ft.Stages != 5 || i8.Stages != 3 || b8.Stages != 5 || i8.Mode != "int8" || b8.Mode != "bfp8" {
			t.Fatalf("stages: paper %d, %+v, %+v", ft.Stages, i8, b8)
		}
		if !(i8.ExposurePct < b8.ExposurePct && b8.ExposurePct == ft.ExposurePct) {
			t.Errorf("exposure: int8 %.3f < bfp8 %.3f = paper %.3f wanted (depths 3 < 5 = 5)", i8.ExposurePct, b8.ExposurePct, ft.ExposurePct)
		}
		return
	}
	t.Fatal("no timing unit")
}

// TestFormatsStandInStatus: rows and pilot trained on the stand-ins of
// Fashion-MNIST make the block partial, saying which set is missing, how
// to install it and what ran instead, and every claim's tier names the
// stand-in.
func TestFormatsStandInStatus(t *testing.T) {
	var us []FormatsUnit
	for _, f := range lowbit.Formats() {
		for s := 1; s <= 2; s++ {
			u := handFormatRun(t, f, uint64(s), 80, [nn.NumGroups]float64{0.999, 0.999})
			u.Run.Data = DataInfo{Name: "mnist (stand-in: fashion-mnist not installed)", StandInFor: "fashion-mnist"}
			us = append(us, u)
		}
	}
	fp := &FormatsPilot{Data: DataInfo{Name: "mnist-stack100 (stand-in: fashion-stack100 not installed)", StandInFor: "fashion-stack100"},
		Result: pilot.FormatResult{Seed: 1, Label: "INT8 all", Admitted: train.PerGroup[string]{"int8", "int8"}}}
	us = append(us, FormatsUnit{Key: "pilot", Pilot: fp})
	res, err := FormatsLayout(FormatsOptionsFor(run.TierQuick, 1), us)
	if err != nil {
		t.Fatal(err)
	}
	run.SetStatus(res, us)
	if res.Status != report.StatusPartial || len(res.Skipped) != 2 || !strings.Contains(res.Skipped[0], "fashion-mnist is not installed (apt-get install dataset-fashion-mnist); the formats' rows ran on its stand-in mnist") ||
		!strings.Contains(res.Skipped[1], "the format-admission pilot ran on its stand-in mnist-stack100") {
		t.Errorf("status %q, skipped %q", res.Status, res.Skipped)
	}
	for _, c := range res.Claims {
		want := "quick; on the stand-in mnist (fashion-mnist not installed)"
		if c.Name == formatsPilotClaimName {
			want = "quick; on the stand-in mnist-stack100 (fashion-stack100 not installed)"
		}
		if c.Tier != want {
			t.Errorf("%s: tier %q, want %q", c.Name, c.Tier, want)
		}
	}
}
