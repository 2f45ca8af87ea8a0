package experiments

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/train"
)

// SweepResult is one run of a sign learning-rate sweep.
type SweepResult struct {
	Rate float32 `json:"sign_lr"`
	Rule string  `json:"rule"`
	Seed uint64  `json:"seed"`
	// HeldOut is the final accuracy on held-out training images.
	HeldOut float64 `json:"held_out_acc"`
}

// SignLRSweep chooses one learning rate for all sign rules on a study's
// options (the procedure behind QuickSignLR): each rule in rules trains
// uniformly at each rate for o.Seeds seeds, validated on held-out
// training images (images TrainN..TrainN+TestN of the training split,
// never the test split), and the rate with the highest mean held-out
// accuracy over rules and seeds is chosen; a tie goes to the smaller
// rate. It returns the sweep table and the chosen rate.
func SignLRSweep(ctx context.Context, study string, o TrainOptions, rates []float32, rules []train.Rule) (*report.Result, float32, error) {
	if len(rates) == 0 || len(rules) == 0 {
		return nil, 0, fmt.Errorf("sign-lr sweep: no rates or no rules")
	}
	if study != StudyValidated && study != StudyBoundary {
		return nil, 0, fmt.Errorf("unknown study %q", study)
	}
	for _, r := range rules {
		if !r.Sign() {
			return nil, 0, fmt.Errorf("sign-lr sweep: %v is not a sign rule", r)
		}
	}
	o.HoldOut = true
	sets, name, err := o.LoadSets()
	if err != nil {
		return nil, 0, err
	}
	var all []SweepResult
	t := report.Table{Name: "sign-lr-sweep", Title: "Sign learning-rate sweep on " + name + " (" + study + " study options)",
		Columns: []string{"sign lr"}}
	for _, r := range rules {
		t.Columns = append(t.Columns, train.Uniform(train.RuleSpec{Rule: r}).Label()+" held-out acc. (%)")
	}
	t.Columns = append(t.Columns, "mean (%)", "chosen")
	best, bestAcc := rates[0], -1.0
	var rows [][]any
	for _, rate := range rates {
		o.SignLR = rate
		row := []any{fmt.Sprintf("%g", rate)}
		var accs []float64
		for _, rule := range rules {
			var per []float64
			for s := range o.Seeds {
				seed := o.Seed + uint64(s)
				cfg := o.Config(train.Uniform(train.RuleSpec{Rule: rule}), seed)
				cfg.Logf = nil
				res, err := train.Run(ctx, cfg, sets)
				if err != nil {
					return nil, 0, fmt.Errorf("sign-lr sweep %v at %g seed %d: %w", rule, rate, seed, err)
				}
				per = append(per, 100*res.Final)
				all = append(all, SweepResult{Rate: rate, Rule: rule.String(), Seed: seed, HeldOut: res.Final})
				if o.Logf != nil {
					o.Logf("sign-lr sweep: %v at %g seed %d: held-out acc %.2f%%", rule, rate, seed, 100*res.Final)
				}
			}
			row = append(row, pm(per))
			accs = append(accs, per...)
		}
		m, _ := MeanStd(accs)
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
	o.SignLR = best
	t.Notes = []string{"Workload: " + describe(o, dataInfo(name, sets)) + " (the sign lr shown is the chosen one; each row trains at its own).",
		"Held-out accuracy is measured on training images the runs never train on, not on the test split; the chosen rate has the highest mean over rules and seeds (a tie goes to the smaller rate)."}
	res := &report.Result{Block: "train-sweep", Title: "Sign learning-rate sweep (" + study + ")", Data: all, Tables: []report.Table{t},
		Summary: []string{fmt.Sprintf("Chosen sign learning rate: %g (mean held-out accuracy %.2f%%).", best, bestAcc)}}
	return res, best, nil
}
