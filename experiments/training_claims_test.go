package experiments

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/train"
)

// rowsOf builds PolicyRuns from final accuracies in percent, the i-th
// value of every row being seed i+1's.
func rowsOf(finals map[string][]float64) []PolicyRuns {
	var out []PolicyRuns
	for label, xs := range finals {
		pr := PolicyRuns{Label: label}
		for i, x := range xs {
			var r TrainRun
			r.Label, r.Seed, r.Result.Final = label, uint64(i+1), x/100
			pr.Runs = append(pr.Runs, r)
		}
		out = append(out, pr)
	}
	return out
}

// add returns base + d elementwise.
func add(base, d []float64) []float64 {
	out := make([]float64, len(base))
	for i := range base {
		out[i] = base[i] + d[i]
	}
	return out
}

func neg(d []float64) []float64 { return add(make([]float64, len(d)), scaleBy(-1, d)) }

func scaleBy(k float64, d []float64) []float64 {
	out := make([]float64, len(d))
	for i := range d {
		out[i] = k * d[i]
	}
	return out
}

func claimOf(t *testing.T, cs []report.Claim, prefix string) report.Claim {
	t.Helper()
	for _, c := range cs {
		if strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	t.Fatalf("no claim %q", prefix)
	return report.Claim{}
}

var converged = studyConvergence{ok: true, cell: "converged (test)", tier: "standard"}

// TestValidatedClaims checks Fig. 4's verdicts on hand-computed paired t
// intervals over 5 seeds (t_{0.975,4} = 2.776445): G-Binary - FP32 =
// -1, -0.5, -1.5, -1, -1 (mean -1, s/√5 = 0.15811: [-1.44, -0.56], inside
// [-2, 2]); G-Ternary - FP32 = 0.5, 1.5, -0.5, 2.5, 1 (mean 1, s/√5 = 0.5:
// [-0.39, 2.39], straddling 2: inconclusive) or -3, -2.5, -3.5, -3, -3
// ([-3.44, -2.56]: outside). MajoritySignSGD equals G-Binary (d = 0).
func TestValidatedClaims(t *testing.T) {
	fp := []float64{80, 81, 82, 83, 84}
	dB := []float64{-1, -0.5, -1.5, -1, -1}
	for _, tt := range []struct {
		name     string
		dT       []float64
		conv     studyConvergence
		fp32     string
		maj      string
		interval string
	}{
		{"straddles", []float64{0.5, 1.5, -0.5, 2.5, 1}, converged, report.VerdictInconclusive, report.VerdictInconclusive,
			"G-Binary 95% CI [-1.44, -0.56], paired t, n = 5; G-Ternary 95% CI [-0.39, 2.39], paired t, n = 5"},
		{"outside", []float64{-3, -2.5, -3.5, -3, -3}, converged, report.VerdictDoesNotHold, report.VerdictDoesNotHold,
			"G-Ternary 95% CI [-3.44, -2.56], paired t, n = 5"},
		{"inside", dB, converged, report.VerdictHolds, report.VerdictHolds, "G-Ternary 95% CI [-1.44, -0.56]"},
		{"inside, not converged", dB, studyConvergence{cell: "not converged (0 of 5 FP32 runs pass)", tier: "quick"},
			report.VerdictIndicative, report.VerdictIndicative, "G-Ternary 95% CI [-1.44, -0.56]"},
	} {
		gb := add(fp, dB)
		cs := validatedClaims(finalsOf(rowsOf(map[string][]float64{
			"FP32 all": fp, "G-Binary all": gb, "G-Ternary all": add(fp, tt.dT), "MajoritySignSGD all": gb})), tt.conv)
		c1, c2 := claimOf(t, cs, "G-Binary and G-Ternary within 2"), claimOf(t, cs, "G-Binary and G-Ternary within 1")
		if c1.Verdict != tt.fp32 || c2.Verdict != tt.maj {
			t.Errorf("%s: verdicts %q, %q; want %q, %q", tt.name, c1.Verdict, c2.Verdict, tt.fp32, tt.maj)
		}
		if !strings.Contains(c1.Interval, tt.interval) {
			t.Errorf("%s: interval %q lacks %q", tt.name, c1.Interval, tt.interval)
		}
		if c1.Tier != tt.conv.tier || c1.Convergence != tt.conv.cell || c1.Section != "Sec. 7.1, Fig. 4" {
			t.Errorf("%s: tier %q convergence %q section %q", tt.name, c1.Tier, c1.Convergence, c1.Section)
		}
	}
	// One seed: no interval, so inconclusive; MajoritySignSGD not run.
	cs := validatedClaims(finalsOf(rowsOf(map[string][]float64{"FP32 all": {80}, "G-Binary all": {79.5}, "G-Ternary all": {79}})), converged)
	if c := claimOf(t, cs, "G-Binary and G-Ternary within 2"); c.Verdict != report.VerdictInconclusive || !strings.Contains(c.Interval, "1 seed, no interval") {
		t.Errorf("one seed: %q, %q", c.Verdict, c.Interval)
	}
	if c := claimOf(t, cs, "G-Binary and G-Ternary within 1"); c.Verdict != report.VerdictNotRun {
		t.Errorf("without MajoritySignSGD: %q", c.Verdict)
	}
}

// TestBoundaryClaims checks the boundary verdicts on hand-computed
// intervals over 5 seeds. FP32 70..74. G-Binary gap 16 14 18 22 20 (mean
// 18, [14.07, 21.93] > 5: inside); G-Ternary gap 3 4 2 3 3 ([2.12, 3.88]:
// outside) - Fig. 5 does not hold. The G-Binary split recovers 8..12 of
// its gap: Fieller [0.487, 0.639] straddles 0.5; the G-Ternary split
// recovers 2.4 3.3 1.7 2.5 2.4 of 3 4 2 3 3: [0.797, 0.846], inside (both
// by bisection on the t statistic of a - θb) - inconclusive. The reverse
// G-Binary split is 1 1.5 0.5 1 1 weaker ([0.56, 1.44] > 0), the
// G-Ternary one not run: inconclusive, then 5 6 4 5 5 weaker: holds. The
// @lr G-Binary split recovers 1 0 2 1 1 ([0.0075, 0.099]: outside) - does
// not hold although G-Ternary @lr did not run. Cosines per seed: G-Binary
// head - .5 x backbone = -.2 -.18 -.22 -.2 -.2 (inside < 0), G-Ternary
// .05 .07 .03 .05 .05 (outside) - Table 5 does not hold.
func TestBoundaryClaims(t *testing.T) {
	fp := []float64{70, 71, 72, 73, 74}
	fullB := add(fp, neg([]float64{16, 14, 18, 22, 20}))
	fullT := add(fp, neg([]float64{3, 4, 2, 3, 3}))
	splitB := add(fullB, []float64{8, 9, 10, 11, 12})
	splitT := add(fullT, []float64{2.4, 3.3, 1.7, 2.5, 2.4})
	rows := map[string][]float64{
		"FP32 all": fp, "G-Binary all": fullB, "G-Ternary all": fullT,
		"G-Binary backbone + FP32 head": splitB, "G-Ternary backbone + FP32 head": splitT,
		"FP32 backbone + G-Binary head":     add(splitB, neg([]float64{1, 1.5, 0.5, 1, 1})),
		"G-Binary backbone + FP32 head @lr": add(fullB, []float64{1, 0, 2, 1, 1}),
	}
	cos := map[uint64][2][2]float64{}
	for i, h := range []float64{.1, .12, .08, .1, .1} {
		cos[uint64(i+1)] = [2][2]float64{{.6, h}, {.5, h + .2}}
	}
	cs := boundaryClaims(finalsOf(rowsOf(rows)), cos, converged)
	for prefix, want := range map[string]struct{ verdict, interval string }{
		"full-path":              {report.VerdictDoesNotHold, "G-Binary 95% CI [14.07, 21.93], paired t, n = 5; G-Ternary 95% CI [2.12, 3.88], paired t, n = 5"},
		"low-bit backbone":       {report.VerdictInconclusive, "G-Binary 95% CI [0.49, 0.64], Fieller, n = 5; G-Ternary 95% CI [0.80, 0.85], Fieller, n = 5"},
		"the reverse split":      {report.VerdictInconclusive, "G-Binary 95% CI [0.56, 1.44], paired t, n = 5"},
		"learning-rate ablation": {report.VerdictDoesNotHold, "G-Binary 95% CI [0.01, 0.10], Fieller, n = 5"},
		"weak head alignment":    {report.VerdictDoesNotHold, "G-Binary 95% CI [-0.22, -0.18], paired t, n = 5; G-Ternary 95% CI [0.03, 0.07], paired t, n = 5"},
	} {
		c := claimOf(t, cs, prefix)
		if c.Verdict != want.verdict || c.Interval != want.interval {
			t.Errorf("%s: %q, %q; want %q, %q", prefix, c.Verdict, c.Interval, want.verdict, want.interval)
		}
	}
	if c := claimOf(t, cs, "the reverse split"); !strings.Contains(c.Ours, "G-Ternary not run") {
		t.Errorf("reverse split ours %q", c.Ours)
	}
	if c := claimOf(t, cs, "low-bit backbone"); !strings.Contains(c.Ours, "G-Binary backbone + FP32 head 64.00 ± 2.00, 56% of the 18.00-point gap") {
		t.Errorf("recovery ours %q", c.Ours)
	}
	rows["FP32 backbone + G-Ternary head"] = add(splitT, neg([]float64{5, 6, 4, 5, 5}))
	cs = boundaryClaims(finalsOf(rowsOf(rows)), cos, converged)
	if c := claimOf(t, cs, "the reverse split"); c.Verdict != report.VerdictHolds {
		t.Errorf("reverse split with both rules: %q (%s)", c.Verdict, c.Interval)
	}
	if c := claimOf(t, boundaryClaims(seedFinals{}, nil, converged), "weak head alignment"); c.Verdict != report.VerdictNotRun {
		t.Errorf("no diagnostics: %q", c.Verdict)
	}
}

// TestSeedCosines averages each FP32 run's diagnostics by seed and
// ignores other rows.
func TestSeedCosines(t *testing.T) {
	diag := func(bb, head float64) train.Diag {
		var d train.Diag
		d.Epoch = 3
		d.Binary.Groups[nn.Backbone], d.Binary.Groups[nn.Head] = bb, head
		d.Ternary.Groups[nn.Backbone], d.Ternary.Groups[nn.Head] = bb/2, head/2
		return d
	}
	trun := func(label string, seed uint64, ds ...train.Diag) TrainRun {
		var r TrainRun
		r.Label, r.Seed, r.Result.Diags = label, seed, ds
		return r
	}
	runs := byRow([]TrainRun{trun("FP32 all", 1, diag(.6, .2), diag(.4, 0)), trun("FP32 all", 2, diag(.4, 0)), trun("FP32 all", 3), trun("G-Binary all", 1, diag(1, 1))})
	got := seedCosines(runs)
	want := map[uint64][2][2]float64{1: {{.5, .1}, {.25, .05}}, 2: {{.4, 0}, {.2, 0}}}
	if len(got) != 2 {
		t.Fatalf("cosines %v", got)
	}
	for s, w := range want {
		for i := range 2 {
			for j := range 2 {
				if d := got[s][i][j] - w[i][j]; d > 1e-12 || d < -1e-12 {
					t.Errorf("seed %d [%d][%d]: %v, want %v", s, i, j, got[s][i][j], w[i][j])
				}
			}
		}
	}
}

// TestConvergenceOf: a study converges when the mean FP32 curve over its
// seeds passes train.Plateau (5 epochs, slope < 0.5): two runs that each
// sit on a noisy plateau, one failing its own test, converge together; a
// rising third run makes the study's claims indicative. Slopes by hand:
// over x = -2..2 the least-squares slope is sum(x y) / 10.
func TestConvergenceOf(t *testing.T) {
	trun := func(label string, seed uint64, accs ...float64) TrainRun {
		var r TrainRun
		r.Label, r.Seed = label, seed
		for i, a := range accs {
			r.Result.Epochs = append(r.Result.Epochs, train.EpochStat{Epoch: i + 1, ValAcc: a / 100})
		}
		r.Result.Final = accs[len(accs)-1] / 100
		return r
	}
	// Last 5 epochs: a = 80 79 80 80 82, sum(x y) = -160-79+0+80+164 = 5,
	// slope 0.5: fails alone (not < 0.5); b = 80 81 80 80 78, slope -0.5;
	// their mean is 80 80 80 80 80, slope 0.
	a := []float64{40, 70, 80, 79, 80, 80, 82}
	b := []float64{40, 70, 80, 81, 80, 80, 78}
	runs := []TrainRun{trun("FP32 all", 1, a...), trun("FP32 all", 2, b...), trun("G-Binary all", 1, 10, 20, 30, 40, 50, 60, 70)}
	sc := convergenceOf(byRow(runs), "standard")
	if !sc.ok || sc.cell != "converged (mean of 2 seeds: slope +0.00 points/epoch; 1 of 2 runs pass alone)" {
		t.Errorf("noisy plateau: %+v", sc)
	}
	// A third run rising 10 points/epoch: mean last 5 = 80 + x*10/3 ...,
	// slope 10/3 = 3.33.
	runs = append(runs, trun("FP32 all", 3, 10, 20, 30, 40, 50, 60, 70))
	sc = convergenceOf(byRow(runs), "quick")
	if sc.ok || !strings.HasPrefix(sc.cell, "not converged (mean of 3 seeds: still rising") || !strings.HasSuffix(sc.cell, "1 of 3 runs pass alone)") {
		t.Errorf("one rising: %+v", sc)
	}
	tb := convergenceTable(StudyBoundary, "fashion-stack100", sc)
	if len(tb.Rows) != 4 || tb.Rows[2][5] != "+10.00" || tb.Rows[1][7] != "yes" || !strings.HasPrefix(tb.Rows[0][7], "no: ") ||
		!strings.Contains(tb.Rows[3][1], "mean of 3 seeds (decides)") || tb.Rows[3][5] != "+3.33" {
		t.Errorf("table rows %q", tb.Rows)
	}
	fp := []float64{80, 81, 82}
	cs := validatedClaims(finalsOf(rowsOf(map[string][]float64{"FP32 all": fp, "G-Binary all": fp, "G-Ternary all": fp})), sc)
	if c := claimOf(t, cs, "G-Binary and G-Ternary within 2"); c.Verdict != report.VerdictIndicative || c.Tier != "quick" {
		t.Errorf("unconverged study: %q tier %q", c.Verdict, c.Tier)
	}
	if sc := convergenceOf(nil, "quick"); sc.ok {
		t.Error("no FP32 run counted as converged")
	}
	// Runs of different lengths have no mean curve: not converged.
	if sc := convergenceOf(byRow([]TrainRun{trun("FP32 all", 1, a...), trun("FP32 all", 2, 80, 80, 80, 80, 80)}), "quick"); sc.ok {
		t.Errorf("different lengths: %+v", sc)
	}
}

// TestQuickRows checks that the quick subsets name rows the studies have
// and that Only keeps exactly them, in the study's order.
func TestQuickRows(t *testing.T) {
	for _, tt := range []struct {
		study string
		o     TrainOptions
	}{{StudyValidated, ValidatedOptions(run.TierQuick, 1)}, {StudyBoundary, BoundaryOptions(run.TierQuick, 1)}} {
		rows, err := studyRows(tt.study, tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(tt.o.Only) || tt.o.Seeds != 3 {
			t.Errorf("%s: %d rows for %d labels, %d seeds", tt.study, len(rows), len(tt.o.Only), tt.o.Seeds)
		}
		for i, r := range rows {
			if r.label != tt.o.Only[i] {
				t.Errorf("%s row %d: %q, want %q", tt.study, i, r.label, tt.o.Only[i])
			}
		}
		tt.o.Only = []string{"no such row"}
		if _, err := StudyUnits(tt.study, tt.o); err == nil {
			t.Errorf("%s: a filter that keeps nothing was accepted", tt.study)
		}
	}
	if o := BoundaryOptions(run.TierFull, 1); o.Only != nil || o.Seeds != 3 {
		t.Errorf("full boundary: Only %v, %d seeds", o.Only, o.Seeds)
	}
}

// TestLRSweep sweeps two rates on a sliver of MNIST with a small MLP, for
// the sign rules and for FP32, and checks the procedure: one run per rule
// and rate, validated on held-out training images (not the test split),
// the swept rate is the one the runs train at (an FP32 sweep moves LR and
// leaves SignLR, a sign sweep the reverse: checked against lone runs), and
// the chosen rate is the one whose runs have the higher mean held-out
// accuracy. Mixed rule families and empty grids are refused.
func TestLRSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST")
	}
	o := BoundaryOptions(run.TierQuick, 1)
	o.Data, o.Model, o.Hidden, o.TrainN, o.TestN, o.Epochs, o.Batch, o.Seeds = "mnist", "mlp", []int{8}, 256, 128, 1, 64, 1
	rates := []float32{1e-5, 1e-3}
	res, best, err := LRSweep(context.Background(), StudyBoundary, o, rates, []train.Rule{train.FormatRule(lowbit.Binary), train.FormatRule(lowbit.Ternary)})
	if errors.Is(err, data.ErrNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	runs := res.Data.([]SweepResult)
	if len(runs) != 4 || len(res.Tables[0].Rows) != 2 {
		t.Fatalf("%d runs, %d rows; want 4, 2", len(runs), len(res.Tables[0].Rows))
	}
	mean := map[float32]float64{}
	for _, r := range runs {
		mean[r.Rate] += r.HeldOut / 2
	}
	want := rates[0]
	if mean[rates[1]] > mean[rates[0]] {
		want = rates[1]
	}
	if best != want {
		t.Errorf("chose %g; means %v", best, mean)
	}
	if !strings.Contains(res.Tables[0].Title, "held-out training images") {
		t.Errorf("title %q does not say the held-out split", res.Tables[0].Title)
	}
	h := o
	h.HoldOut = true
	sets, _, err := h.LoadSets()
	if err != nil {
		t.Fatal(err)
	}
	full, err := data.Load("mnist", "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sets.Test.Labels, full.Train.Labels[256:384]) || !reflect.DeepEqual(sets.Test.Image(0), full.Train.Image(256)) {
		t.Error("held-out split is not training images 256..383")
	}
	checkSweepRates(t, o, sets)
	for _, rs := range [][]train.Rule{{train.FormatRule(lowbit.FP32), train.FormatRule(lowbit.Binary)}, {train.FormatRule(lowbit.Binary), train.FormatRule(lowbit.FP32)}, {train.FormatRule(lowbit.FP32), train.FormatRule(lowbit.FP32)}} {
		if _, _, err := LRSweep(context.Background(), StudyBoundary, o, rates, rs); err == nil {
			t.Errorf("rules %v accepted", rs)
		}
	}
	if _, _, err := LRSweep(context.Background(), StudyBoundary, o, nil, []train.Rule{train.FormatRule(lowbit.Binary)}); err == nil {
		t.Error("empty grid accepted")
	}
}

// checkSweepRates runs an FP32 sweep and a one-rule sign sweep and checks
// each run's held-out accuracy against a lone train.Run at the rate the
// sweep should have set (FP32's LR, or the sign rule's SignLR, the other
// rate left as the options give it), and the chosen rate against the
// higher of the two.
func checkSweepRates(t *testing.T, o TrainOptions, sets *data.Sets) {
	t.Helper()
	for _, c := range []struct {
		rule  train.Rule
		rates []float32
		set   func(*TrainOptions, float32)
	}{
		{train.FormatRule(lowbit.FP32), []float32{0.001, 0.1}, func(o *TrainOptions, r float32) { o.LR = r }},
		{train.FormatRule(lowbit.Binary), []float32{1e-5, 1e-3}, func(o *TrainOptions, r float32) { o.SignLR = r }},
	} {
		res, best, err := LRSweep(context.Background(), StudyBoundary, o, c.rates, []train.Rule{c.rule})
		if err != nil {
			t.Fatal(err)
		}
		runs := res.Data.([]SweepResult)
		if len(runs) != 2 {
			t.Fatalf("%v: %d runs; want 2", c.rule, len(runs))
		}
		var acc []float64
		for i, r := range c.rates {
			lone := o
			c.set(&lone, r)
			got, err := train.Run(context.Background(), lone.Config(train.Uniform(train.RuleSpec{Rule: c.rule}), o.Seed), sets)
			if err != nil {
				t.Fatal(err)
			}
			if runs[i].Rate != r || runs[i].HeldOut != got.Final {
				t.Errorf("%v at %g: sweep %+v, lone run %v", c.rule, r, runs[i], got.Final)
			}
			acc = append(acc, got.Final)
		}
		want := c.rates[0]
		if acc[1] > acc[0] {
			want = c.rates[1]
		}
		if best != want {
			t.Errorf("%v: chose %g; lone accuracies %v", c.rule, best, acc)
		}
		if !strings.HasPrefix(res.Tables[0].Columns[0], map[bool]string{true: "sign", false: "FP32"}[c.rule.Sign()]) {
			t.Errorf("%v: first column %q", c.rule, res.Tables[0].Columns[0])
		}
	}
}

// TestLearningRates checks where each configuration's rates come from:
// the studies (quick and full) train FP32 at their swept rate and the sign
// rules at QuickSignLR, every FP32-routed group of Table 6's mixed
// policies gets the study's FP32 rate and every sign-routed one the sign
// rate, and the pilots keep the rates they were calibrated with whatever
// the studies' are.
func TestLearningRates(t *testing.T) {
	for _, tier := range []run.Tier{run.TierQuick, run.TierStandard, run.TierFull} {
		for _, c := range []struct {
			o      TrainOptions
			fp32LR float32
		}{{ValidatedOptions(tier, 1), 0.05}, {BoundaryOptions(tier, 1), 0.1}} {
			if c.o.LR != c.fp32LR || c.o.SignLR != 3e-4 {
				t.Errorf("%s %v: lr %g / sign %g, want %g / 3e-4", c.o.Data, tier, c.o.LR, c.o.SignLR, c.fp32LR)
			}
			for _, p := range Table6Policies() {
				cfg := c.o.Config(p, 1)
				for g, s := range p {
					want := c.fp32LR
					if s.Rule.Sign() {
						want = 3e-4
					}
					if got := cfg.RuleLR(s); got != want {
						t.Errorf("%s %s group %d: lr %g, want %g", c.o.Data, p.Label(), g, got, want)
					}
				}
			}
		}
		p := PilotDefaults(tier, 1)
		for _, o := range []TrainOptions{p.Train, p.Hard} {
			if o.LR != 0.05 || o.SignLR != 1e-4 {
				t.Errorf("pilot %s %v: lr %g / sign %g, want the calibrated 0.05 / 1e-4", o.Data, tier, o.LR, o.SignLR)
			}
		}
	}
}

// TestTrainingLayoutLedger: the block's layout carries both studies'
// claims as ledger rows (2 validated, 5 boundary, in that order) and one
// convergence table with every FP32 reference run of both studies.
func TestTrainingLayoutLedger(t *testing.T) {
	trun := func(study, label string, seed uint64, accs ...float64) TrainRun {
		r := TrainRun{Study: study, Label: label, Seed: seed, Data: DataInfo{Name: study + "-data"}}
		for i, a := range accs {
			r.Result.Epochs = append(r.Result.Epochs, train.EpochStat{Epoch: i + 1, ValAcc: a / 100})
		}
		r.Result.Final = accs[len(accs)-1] / 100
		r.Result.Traffic.Paper.Ratio, r.PaperModel.Ratio = 1, 1
		return r
	}
	var runs []TrainRun
	for _, l := range QuickValidatedRows() {
		for s := uint64(1); s <= 2; s++ {
			runs = append(runs, trun(StudyValidated, l, s, 60, 70, 70.1, 70.2, 70.1, 70.2))
		}
	}
	for _, l := range QuickBoundaryRows() {
		for s := uint64(1); s <= 3; s++ {
			runs = append(runs, trun(StudyBoundary, l, s, 3, 15, 30))
		}
	}
	res, err := trainingLayout(run.Config{Tier: run.TierQuick}, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Claims) != 7 || res.Claims[0].Section != "Sec. 7.1, Fig. 4" || res.Claims[2].Section != "Sec. 7.2, Fig. 5" {
		t.Fatalf("claims %+v", res.Claims)
	}
	catalogueMatches(t, "training", run.Config{Tier: run.TierQuick}, res.Claims)
	var conv []report.Table
	for _, tb := range res.Tables {
		if tb.Name == "convergence" {
			conv = append(conv, tb)
		}
	}
	// Two validated runs and their mean, three boundary runs and theirs.
	if len(conv) != 1 || len(conv[0].Rows) != 3+4 {
		t.Fatalf("%d convergence tables: %+v", len(conv), conv)
	}
	// The validated FP32 runs plateau (last 5: 70 70.1 70.2 70.1 70.2,
	// slope (−140 −70.1 +0 +70.1 +140.4)/10 = 0.04), the boundary ones are
	// too short for the rule.
	if conv[0].Rows[0][7] != "yes" || conv[0].Rows[2][7] != "yes" || !strings.HasPrefix(conv[0].Rows[6][7], "no") {
		t.Errorf("convergence rows %q", conv[0].Rows)
	}
	if res.Claims[0].Convergence != "converged (mean of 2 seeds: slope +0.04 points/epoch; 2 of 2 runs pass alone)" || res.Claims[2].Verdict != report.VerdictIndicative {
		t.Errorf("validated %q, boundary %q", res.Claims[0].Convergence, res.Claims[2].Verdict)
	}
}

// TestPairedSeeds: claims pair rows by seed, over the seeds both ran, in
// seed order, whatever order the runs came in.
func TestPairedSeeds(t *testing.T) {
	mk := func(label string, vals map[uint64]float64, order ...uint64) PolicyRuns {
		pr := PolicyRuns{Label: label}
		for _, s := range order {
			var r TrainRun
			r.Label, r.Seed, r.Result.Final = label, s, vals[s]/100
			pr.Runs = append(pr.Runs, r)
		}
		return pr
	}
	f := finalsOf([]PolicyRuns{
		mk("FP32 all", map[uint64]float64{1: 80, 2: 81, 3: 82}, 3, 1, 2),
		mk("G-Binary all", map[uint64]float64{2: 79, 3: 81, 4: 50}, 4, 3, 2),
	})
	v, ok := f.paired("G-Binary all", "FP32 all")
	if !ok || !reflect.DeepEqual(v, [][]float64{{79, 81}, {81, 82}}) {
		t.Errorf("paired %v %v; want seeds 2, 3", v, ok)
	}
	if _, ok := f.paired("G-Binary all", "G-Ternary all"); ok {
		t.Error("a row that did not run was paired")
	}
}

// TestScheduleSweep sweeps two schedules over FP32 and G-Binary on a
// sliver of MNIST and checks each run against a lone train.Run with that
// schedule (the rates left as the options give them), the chosen schedule
// against the higher mean of the lone runs, and that a schedule the
// options cannot run (a warm-up as long as the run) is refused.
func TestScheduleSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST")
	}
	o := BoundaryOptions(run.TierQuick, 1)
	o.Data, o.Model, o.Hidden, o.TrainN, o.TestN, o.Epochs, o.Batch, o.Seeds = "mnist", "mlp", []int{8}, 256, 128, 2, 64, 1
	scheds := []train.Schedule{{}, {Kind: train.Cosine, Warmup: 1}}
	rules := []train.Rule{train.FormatRule(lowbit.FP32), train.FormatRule(lowbit.Binary)}
	res, best, err := ScheduleSweep(context.Background(), StudyBoundary, o, scheds, rules)
	if errors.Is(err, data.ErrNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	runs := res.Data.([]SweepResult)
	if len(runs) != 4 || len(res.Tables[0].Rows) != 2 {
		t.Fatalf("%d runs, %d rows; want 4, 2", len(runs), len(res.Tables[0].Rows))
	}
	h := o
	h.HoldOut = true
	sets, _, err := h.LoadSets()
	if err != nil {
		t.Fatal(err)
	}
	var mean [2]float64
	for i, r := range runs {
		si := i / len(rules)
		lone := o
		lone.Schedule = scheds[si]
		got, err := train.Run(context.Background(), lone.Config(train.Uniform(train.RuleSpec{Rule: rules[i%len(rules)]}), o.Seed), sets)
		if err != nil {
			t.Fatal(err)
		}
		if r.HeldOut != got.Final || r.Rule != rules[i%len(rules)].String() || r.Schedule != scheds[si].String() || r.Rate != 0 {
			t.Errorf("run %d: sweep %+v, lone run %v", i, r, got.Final)
		}
		mean[si] += got.Final / 2
	}
	want := scheds[0]
	if mean[1] > mean[0] {
		want = scheds[1]
	}
	if best.String() != want.String() {
		t.Errorf("chose %v; lone means %v", best, mean)
	}
	if _, _, err := ScheduleSweep(context.Background(), StudyBoundary, o, []train.Schedule{{Kind: train.Cosine, Warmup: 2}}, rules); err == nil {
		t.Error("a warm-up as long as the run was accepted")
	}
}

// TestSeedsToDecideInClaims checks the ledger's seeds-to-decide cells of
// inconclusive claims against n worked out by hand from t tables:
//   - Fig. 4, G-Ternary - FP32 = 0.5 1.5 -0.5 2.5 1 (mean 1, s = 1.118,
//     δ = 1 to the end 2): t(0.975, 6)·1.118/√7 = 1.034 and t(0.975, 7)·
//     1.118/√8 = 0.935, so 8; at 80% power (t(0.975, 10) + t(0.8, 10))·
//     1.118/√11 = 1.047 and (2.2010 + 0.8755)·1.118/√12 = 0.993, so 12.
//     G-Binary holds, so only G-Ternary counts.
//   - Table 6 recovery, G-Binary: (split - full) - 0.5·(FP32 - full) =
//     0 2 1 0 2 (mean 1, s = 1, δ = 1): t(0.975, 5)/√6 = 1.049, t(0.975,
//     6)/√7 = 0.925, so 7; at 80% (2.3060 + 0.8889)/3 = 1.065,
//     (2.2622 + 0.8834)/√10 = 0.995, so 10.
//   - the reverse split: G-Binary holds, G-Ternary did not run.
//
// Decided claims carry no cell.
func TestSeedsToDecideInClaims(t *testing.T) {
	fp := []float64{80, 81, 82, 83, 84}
	cs := validatedClaims(finalsOf(rowsOf(map[string][]float64{
		"FP32 all": fp, "G-Binary all": add(fp, []float64{-1, -0.5, -1.5, -1, -1}), "G-Ternary all": add(fp, []float64{0.5, 1.5, -0.5, 2.5, 1}),
		"MajoritySignSGD all": add(fp, []float64{-3, -2.5, -3.5, -3, -3})})), converged)
	if got, want := claimOf(t, cs, "G-Binary and G-Ternary within 2").SeedsToDecide, "8 (G-Ternary 8; 80% power: 12)"; got != want {
		t.Errorf("Fig. 4: %q; want %q", got, want)
	}
	if c := claimOf(t, cs, "G-Binary and G-Ternary within 1"); c.SeedsToDecide != "" {
		t.Errorf("a claim that does not hold says %q", c.SeedsToDecide)
	}
	bfp := []float64{70, 71, 72, 73, 74}
	fullB := add(bfp, neg([]float64{16, 14, 18, 22, 20}))
	fullT := add(bfp, neg([]float64{3, 4, 2, 3, 3}))
	splitB := add(fullB, []float64{8, 9, 10, 11, 12})
	cs = boundaryClaims(finalsOf(rowsOf(map[string][]float64{
		"FP32 all": bfp, "G-Binary all": fullB, "G-Ternary all": fullT,
		"G-Binary backbone + FP32 head": splitB, "G-Ternary backbone + FP32 head": add(fullT, []float64{2.4, 3.3, 1.7, 2.5, 2.4}),
		"FP32 backbone + G-Binary head": add(splitB, neg([]float64{1, 1.5, 0.5, 1, 1})),
	})), nil, converged)
	for prefix, want := range map[string]string{
		"low-bit backbone":  "7 (G-Binary 7; 80% power: 10)",
		"the reverse split": "a run of G-Ternary",
		"full-path":         "",
	} {
		if got := claimOf(t, cs, prefix).SeedsToDecide; got != want {
			t.Errorf("%s: %q; want %q", prefix, got, want)
		}
	}
	one := validatedClaims(finalsOf(rowsOf(map[string][]float64{"FP32 all": {80}, "G-Binary all": {79.5}, "G-Ternary all": {79}})), converged)
	if got := claimOf(t, one, "G-Binary and G-Ternary within 2").SeedsToDecide; !strings.HasPrefix(got, "at least 2 paired seeds") {
		t.Errorf("one seed: %q", got)
	}
}
