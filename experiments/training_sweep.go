package experiments

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/stats"
	"github.com/neuronfabric/nfabric/train"
)

// SweepResult is one run of a learning-rate sweep.
type SweepResult struct {
	// Rate is the swept rate: TrainOptions.LR in an FP32 sweep,
	// TrainOptions.SignLR in a sign sweep.
	Rate float32 `json:"lr"`
	Rule string  `json:"rule"`
	Seed uint64  `json:"seed"`
	// HeldOut is the final accuracy on held-out training images.
	HeldOut float64 `json:"held_out_acc"`
}

// LRSweep chooses one learning rate for a family of rules on a study's
// options, the procedure behind QuickSignLR and QuickFP32LR: rules are
// either all sign rules (the sign rate, TrainOptions.SignLR, is swept) or
// FP32 alone (the FP32 rate, TrainOptions.LR). Each rule trains uniformly
// at each rate for o.Seeds seeds, validated on held-out training images
// (images TrainN..TrainN+TestN of the training split, never the test
// split), and the rate with the highest mean held-out accuracy over rules
// and seeds is chosen; a tie goes to the smaller rate. It returns the
// sweep table and the chosen rate.
func LRSweep(ctx context.Context, study string, o TrainOptions, rates []float32, rules []train.Rule) (*report.Result, float32, error) {
	if len(rates) == 0 || len(rules) == 0 {
		return nil, 0, fmt.Errorf("lr sweep: no rates or no rules")
	}
	if study != StudyValidated && study != StudyBoundary {
		return nil, 0, fmt.Errorf("unknown study %q", study)
	}
	sign := rules[0].Sign()
	for _, r := range rules {
		if r.Sign() != sign || (!sign && len(rules) > 1) {
			return nil, 0, fmt.Errorf("lr sweep: rules %v: want sign rules only, or FP32 alone", rules)
		}
	}
	kind, set := "FP32", func(o *TrainOptions, r float32) { o.LR = r }
	if sign {
		kind, set = "sign", func(o *TrainOptions, r float32) { o.SignLR = r }
	}
	o.HoldOut = true
	sets, info, err := o.LoadSets()
	if err != nil {
		return nil, 0, err
	}
	var all []SweepResult
	t := report.Table{Name: "lr-sweep", Title: kind + " learning-rate sweep on " + info.Name + " (" + study + " study options)",
		Columns: []string{kind + " lr"}}
	for _, r := range rules {
		t.Columns = append(t.Columns, train.Uniform(train.RuleSpec{Rule: r}).Label()+" held-out acc. (%)")
	}
	t.Columns = append(t.Columns, "mean (%)", "chosen")
	best, bestAcc := rates[0], -1.0
	var rows [][]any
	for _, rate := range rates {
		set(&o, rate)
		row := []any{fmt.Sprintf("%g", rate)}
		var accs []float64
		for _, rule := range rules {
			per, runs, err := sweepRuns(ctx, o, sets, rule, rate, kind)
			if err != nil {
				return nil, 0, err
			}
			all = append(all, runs...)
			row = append(row, pm(per))
			accs = append(accs, per...)
		}
		m, _ := stats.MeanSD(accs)
		if m > bestAcc || (m == bestAcc && rate < best) {
			best, bestAcc = rate, m
		}
		rows = append(rows, append(row, fmt.Sprintf("%.2f", m)))
	}
	for i, row := range rows {
		mark := ""
		if rates[i] == best {
			mark = "yes"
		}
		t.AddRow(append(row, mark)...)
	}
	set(&o, best)
	t.Notes = []string{"Workload: " + describe(o, info) + " (the " + kind + " lr shown is the chosen one; each row trains at its own).",
		"Held-out accuracy is measured on training images the runs never train on, not on the test split; the chosen rate has the highest mean over rules and seeds (a tie goes to the smaller rate)."}
	res := &report.Result{Block: "train-sweep", Title: kind + " learning-rate sweep (" + study + ")", Data: all, Tables: []report.Table{t},
		Summary: []string{fmt.Sprintf("Chosen %s learning rate: %g (mean held-out accuracy %.2f%%).", kind, best, bestAcc)}}
	return res, best, nil
}

// sweepRuns trains rule uniformly for o.Seeds seeds at o's rates and
// returns the held-out accuracies (%) and the runs.
func sweepRuns(ctx context.Context, o TrainOptions, sets *data.Sets, rule train.Rule, rate float32, kind string) ([]float64, []SweepResult, error) {
	var per []float64
	var runs []SweepResult
	for s := range o.Seeds {
		seed := o.Seed + uint64(s)
		cfg := o.Config(train.Uniform(train.RuleSpec{Rule: rule}), seed)
		cfg.Logf = nil
		res, err := train.Run(ctx, cfg, sets)
		if err != nil {
			return nil, nil, fmt.Errorf("%s lr sweep %v at %g seed %d: %w", kind, rule, rate, seed, err)
		}
		per = append(per, 100*res.Final)
		runs = append(runs, SweepResult{Rate: rate, Rule: rule.String(), Seed: seed, HeldOut: res.Final})
		if o.Logf != nil {
			o.Logf("%s lr sweep: %v at %g seed %d: held-out acc %.2f%%", kind, rule, rate, seed, 100*res.Final)
		}
	}
	return per, runs, nil
}
