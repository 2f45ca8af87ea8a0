package experiments

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/stats"
	"github.com/neuronfabric/nfabric/train"
	"github.com/neuronfabric/nfabric/usage"
)

// SweepResult is one run of a sweep.
type SweepResult struct {
	// Rate is the run's swept rate in a learning-rate sweep:
	// TrainOptions.LR in an FP32 sweep, TrainOptions.SignLR in a sign
	// sweep; 0 in a schedule sweep.
	Rate float32 `json:"lr"`
	// Schedule is the run's schedule in a schedule sweep
	// (train.Schedule.String); "" in a learning-rate sweep.
	Schedule string `json:"schedule,omitempty"`
	Rule     string `json:"rule"`
	Seed     uint64 `json:"seed"`
	// HeldOut is the final accuracy on held-out training images.
	HeldOut float64 `json:"held_out_acc"`
}

// sweepCandidate is one value a sweep tries: its label in the table, and
// what it sets in the options.
type sweepCandidate struct {
	label string
	set   func(o *TrainOptions, r *SweepResult)
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
	cands := make([]sweepCandidate, len(rates))
	for i, rate := range rates {
		cands[i] = sweepCandidate{label: fmt.Sprintf("%g", rate), set: func(o *TrainOptions, r *SweepResult) { set(o, rate); r.Rate = rate }}
	}
	res, best, err := sweep(ctx, study, o, kind+" learning-rate", kind+" lr", cands, rules, func(i, j int) bool { return rates[i] < rates[j] })
	if err != nil {
		return nil, 0, err
	}
	return res, rates[best], nil
}

// ScheduleSweep chooses the learning-rate schedule of a study's options
// as LRSweep chooses a rate: each rule (FP32 and sign rules alike: a
// schedule multiplies every group's rate by one factor, and the rates stay
// the options') trains uniformly under each schedule for o.Seeds seeds,
// validated on held-out training images, and the schedule with the
// highest mean held-out accuracy over rules and seeds is chosen; a tie
// goes to the earlier schedule of the list. It returns the sweep table and
// the chosen schedule.
func ScheduleSweep(ctx context.Context, study string, o TrainOptions, schedules []train.Schedule, rules []train.Rule) (*report.Result, train.Schedule, error) {
	if len(schedules) == 0 || len(rules) == 0 {
		return nil, train.Schedule{}, fmt.Errorf("schedule sweep: no schedules or no rules")
	}
	cands := make([]sweepCandidate, len(schedules))
	for i, s := range schedules {
		if err := s.Validate(o.Epochs); err != nil {
			return nil, train.Schedule{}, err
		}
		cands[i] = sweepCandidate{label: s.String(), set: func(o *TrainOptions, r *SweepResult) { o.Schedule = s; r.Schedule = s.String() }}
	}
	res, best, err := sweep(ctx, study, o, "learning-rate schedule", "schedule", cands, rules, func(i, j int) bool { return i < j })
	if err != nil {
		return nil, train.Schedule{}, err
	}
	return res, schedules[best], nil
}

// sweep trains every rule at every candidate for o.Seeds seeds on
// held-out validation and returns the table and the index of the
// candidate with the highest mean held-out accuracy over rules and seeds;
// between equal means, the one preferred by less.
func sweep(ctx context.Context, study string, o TrainOptions, what, column string, cands []sweepCandidate, rules []train.Rule, less func(i, j int) bool) (*report.Result, int, error) {
	if study != StudyValidated && study != StudyBoundary {
		return nil, 0, fmt.Errorf("unknown study %q", study)
	}
	o.HoldOut = true
	sets, info, err := o.LoadSets()
	if err != nil {
		return nil, 0, err
	}
	var all []SweepResult
	t := report.Table{Name: "sweep", Title: what + " sweep on " + info.Name + " (" + study + " study options)", Columns: []string{column}}
	if column != "schedule" {
		t.Name = "lr-sweep"
	}
	for _, r := range rules {
		t.Columns = append(t.Columns, train.Uniform(train.RuleSpec{Rule: r}).Label()+" held-out acc. (%)")
	}
	t.Columns = append(t.Columns, "mean (%)", "chosen")
	best, bestAcc := 0, -1.0
	var rows [][]any
	for i, c := range cands {
		row := []any{c.label}
		var accs []float64
		for _, rule := range rules {
			per, runs, err := sweepRuns(ctx, o, sets, rule, c)
			if err != nil {
				return nil, 0, err
			}
			all = append(all, runs...)
			row = append(row, pm(per))
			accs = append(accs, per...)
		}
		m, _ := stats.MeanSD(accs)
		if m > bestAcc || (m == bestAcc && less(i, best)) {
			best, bestAcc = i, m
		}
		rows = append(rows, append(row, fmt.Sprintf("%.2f", m)))
	}
	for i, row := range rows {
		mark := ""
		if i == best {
			mark = "yes"
		}
		t.AddRow(append(row, mark)...)
	}
	cands[best].set(&o, &SweepResult{})
	t.Notes = []string{"Workload: " + describe(o, info) + " (the " + column + " shown is the chosen one; each row trains with its own).",
		"Held-out accuracy is measured on training images the runs never train on, not on the test split; the chosen " + column + " has the highest mean over rules and seeds (a tie goes to the " + map[bool]string{true: "smaller rate", false: "earlier one listed"}[column != "schedule"] + ")."}
	res := &report.Result{Block: "train-sweep", Title: what + " sweep (" + study + ")", Data: all, Tables: []report.Table{t},
		Summary: []string{fmt.Sprintf("Chosen %s: %s (mean held-out accuracy %.2f%%).", column, cands[best].label, bestAcc)}}
	return res, best, nil
}

// sweepRuns trains rule uniformly for o.Seeds seeds with candidate c and
// returns the held-out accuracies (%) and the runs.
func sweepRuns(ctx context.Context, o TrainOptions, sets *data.Sets, rule train.Rule, c sweepCandidate) ([]float64, []SweepResult, error) {
	var per []float64
	var runs []SweepResult
	for s := range o.Seeds {
		seed := o.Seed + uint64(s)
		r := SweepResult{Rule: rule.String(), Seed: seed}
		oc := o
		c.set(&oc, &r)
		cfg := oc.Config(train.Uniform(train.RuleSpec{Rule: rule}), seed)
		cfg.Logf = nil
		res, err := train.Run(ctx, cfg, sets)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep %v at %s seed %d: %w", rule, c.label, seed, err)
		}
		r.HeldOut = res.Final
		per = append(per, 100*res.Final)
		runs = append(runs, r)
		if o.Logf != nil {
			o.Logf("sweep: %v at %s seed %d: held-out acc %.2f%%", rule, c.label, seed, 100*res.Final)
		}
	}
	return per, runs, nil
}

// The sweep's default grids (the ones NOTES.md's Training section ran), as
// 'nfabric train sweep --lrs' spells them.
var (
	SweepSignLRs = []string{"3e-5", "1e-4", "3e-4", "1e-3"}
	SweepFP32LRs = []string{"0.02", "0.05", "0.1", "0.2", "0.4"}
)

// SweepScheduleRules are the rules a schedule sweep trains unless told
// otherwise: FP32 and the paper's two sign rules, since a schedule
// multiplies every rule's rate.
var SweepScheduleRules = []string{"fp32", "g-binary", "g-ternary"}

// SweepOptions are a sweep's starting options: the study's configuration
// for tier with one seed (a sweep compares rates, not seeds, unless asked).
// An unknown study is a usage error naming --study.
func SweepOptions(study string, tier run.Tier) (TrainOptions, error) {
	var o TrainOptions
	switch study {
	case StudyValidated:
		o = ValidatedOptions(tier, 1)
	case StudyBoundary:
		o = BoundaryOptions(tier, 1)
	default:
		return o, usage.Errorf("--study %q: want validated or boundary", study)
	}
	o.Seeds = 1
	return o, nil
}

// SweepRates parses a learning-rate sweep as 'nfabric train sweep' asks
// for it: family "sign" sweeps the sign rate over the sign rules named in
// rules, "fp32" the FP32 rate over FP32 alone (rules must then not be
// given: rulesGiven); rates are the grid (empty: SweepSignLRs or
// SweepFP32LRs). Mistakes are usage errors naming --rule, --rules or --lrs.
func SweepRates(family string, rules []string, rulesGiven bool, rates []string) ([]train.Rule, []float32, error) {
	var rs []train.Rule
	switch family {
	case "sign":
		if len(rates) == 0 {
			rates = SweepSignLRs
		}
		for _, p := range rules {
			r, err := train.ParseRule(strings.TrimSpace(p))
			if err != nil || !r.Sign() {
				return nil, nil, usage.Errorf("--rules %q: want comma-separated sign rules (g-binary, g-ternary, majority-sign, sign-of-mean)", strings.Join(rules, ","))
			}
			rs = append(rs, r)
		}
	case "fp32":
		if len(rates) == 0 {
			rates = SweepFP32LRs
		}
		if rulesGiven {
			return nil, nil, usage.Errorf("--rules is for --rule sign; --rule fp32 trains FP32 alone")
		}
		rs = []train.Rule{train.FormatRule(lowbit.FP32)}
	default:
		return nil, nil, usage.Errorf("--rule %q: want sign or fp32", family)
	}
	lrs := make([]float32, len(rates))
	for i, p := range rates {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, nil, usage.Errorf("--lrs %q: want positive comma-separated rates", strings.Join(rates, ","))
		}
		lrs[i] = float32(v)
	}
	return rs, lrs, nil
}

// SweepSchedules parses a schedule sweep as 'nfabric train sweep
// --schedules' asks for it: the rules to train (any rule) and the
// schedules to try. A rule it cannot read is a usage error naming
// --rules; a schedule, train.ParseSchedule's error under --schedules.
func SweepSchedules(rules, schedules []string) ([]train.Rule, []train.Schedule, error) {
	var rs []train.Rule
	for _, p := range rules {
		r, err := train.ParseRule(strings.TrimSpace(p))
		if err != nil {
			return nil, nil, usage.Errorf("--rules %q: %v", strings.Join(rules, ","), err)
		}
		rs = append(rs, r)
	}
	var ss []train.Schedule
	for _, t := range schedules {
		sc, err := train.ParseSchedule(t)
		if err != nil {
			return nil, nil, fmt.Errorf("--schedules: %w", err)
		}
		ss = append(ss, sc)
	}
	return rs, ss, nil
}

// CheckSweep refuses, before anything runs, options a sweep over rules
// cannot use: no training subset (the held-out images follow it, so
// --train-n must be set) or a rule whose own limits the options break
// (element-major carries 8 workers), as usage errors.
func (o TrainOptions) CheckSweep(rules []train.Rule) error {
	if o.TrainN < 1 {
		return usage.Errorf("--train-n must be at least 1: the held-out images follow the training subset")
	}
	for _, r := range rules {
		if err := o.Config(train.Uniform(train.RuleSpec{Rule: r}), o.Seed).Validate(); err != nil {
			return usage.Wrap(err)
		}
	}
	return nil
}
