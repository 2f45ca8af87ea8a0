package experiments

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/experiments/run"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/stats"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/train"
	"github.com/neuronfabric/nfabric/usage"
)

func init() {
	run.Register(run.Spec[FormatsUnit]{Name: "formats", Title: formatsTitle, Order: 45, Units: formatsUnits, Layout: formatsLayout,
		Claims: func(run.Config) []report.Claim { return formatsClaims(seedFinals{}, nil, nil, studyConvergence{}) }})
}

const formatsTitle = "Payload formats side by side: the paper's three and the conservative INT8 and BFP8 (extension, Sec. 1)"

// StudyFormats is the formats block's study name in its TrainRuns.
const StudyFormats = "formats"

// FormatsOptions are the formats block's parameters.
//
//   - Rows: every format (lowbit.Formats) as a uniform policy on the
//     validated study's stand-in and budget (ValidatedOptions of the
//     tier), with every format's cosine diagnostics; the paper's three
//     rows are the training block's validated runs of the same seeds.
//   - Pilot: the format-admission pilot (pilot.RunFormats) on the
//     boundary study's 100-class stand-in (BoundaryOptions), whose ladder
//     (control.Ladder, all four rungs) is calibrated by
//     control.CalibrateLadder on the backbone of an always-FP32 warm-up of
//     the same workload with another seed (pilot.WarmupCosines), as the
//     paper's pilots calibrate.
//   - Timing: the controller datapath's cycles and the full-LLC-miss
//     anchor's exposure (timing.AnchorExposure, Table 4's anchor).
//   - Hardware: the 512-bit datapath's generic cells (hw.Synth; standard
//     and full tiers) and its ECP5 Fmax (hw.Pnr; full tier).
type FormatsOptions struct {
	Rows  TrainOptions
	Pilot TrainOptions
	// PilotWarmup is the pilot's FP32 warm-up in epochs; the calibration
	// run trains as many, with seed CalibrationSeed.
	PilotWarmup     int
	CalibrationSeed uint64
	Synth, Route    bool
}

// FormatsOptionsFor returns the block's options for a tier. The quick
// tier trains the rows of ValidatedOptions' quick budget (2,000 images, 3
// epochs, 3 seeds: 15 runs) and the pilot on 2,000 images of the
// 100-class stand-in for 3 epochs (1 of warm-up) after a 1-epoch
// calibration, and leaves the hardware to the hardware block.
func FormatsOptionsFor(tier run.Tier, seed uint64) FormatsOptions {
	rows := ValidatedOptions(tier, seed)
	rows.Only, rows.DiagFormats = nil, true
	pl := BoundaryOptions(tier, seed)
	pl.Only, pl.Seeds = nil, 1
	o := FormatsOptions{Rows: rows, Pilot: pl, PilotWarmup: 1, CalibrationSeed: seed + 1000}
	switch tier {
	case run.TierStandard:
		o.PilotWarmup, o.Synth = 2, true
	case run.TierFull:
		o.PilotWarmup, o.Synth, o.Route = 2, true, true
	}
	return o
}

// FormatsUnit is one unit's result: exactly one part is set, or Skipped
// says which tool was missing.
type FormatsUnit struct {
	Key     string          `json:"key"`
	Run     *TrainRun       `json:"run,omitempty"`
	Pilot   *FormatsPilot   `json:"pilot,omitempty"`
	Timing  *FormatsTiming  `json:"timing,omitempty"`
	Synth   *hw.SynthResult `json:"synth,omitempty"`
	Pnr     *hw.PnrResult   `json:"pnr,omitempty"`
	Skipped string          `json:"skipped,omitempty"`
}

// SkipReason says which tool the unit missed ("" when it ran).
func (u FormatsUnit) SkipReason() string { return u.Skipped }

// CheckConsistent checks the unit's training run, if any
// (TrainRun.CheckConsistent), as the framework does for every result.
func (u FormatsUnit) CheckConsistent() error {
	if u.Run != nil {
		return u.Run.CheckConsistent()
	}
	return nil
}

// FormatsPilot is the pilot unit: the calibration record, the ladder it
// gave, and the pilot run.
type FormatsPilot struct {
	Data            DataInfo            `json:"data"`
	CalibrationSeed uint64              `json:"calibration_seed"`
	Calibration     train.FormatCosines `json:"calibration"`
	// Given marks rungs the user gave (nfabric pilot formats --rungs)
	// instead of the calibrated ones.
	Given  bool               `json:"given_rungs,omitempty"`
	Result pilot.FormatResult `json:"result"`
}

// FormatsTiming is the timing unit: the datapath's stages and clock and
// the anchor's exposure in percent, which the paper's low-bit modes share
// (the timing model's aggregation path is the same for both).
type FormatsTiming struct {
	Stages      int     `json:"stages"`
	ClockGHz    float64 `json:"clock_ghz"`
	ExposurePct float64 `json:"exposure_pct"`
	// Sum is each integer-sum mode's depth (timing.DatapathCycles at the
	// anchor's W) and its exposure at the same anchor
	// (timing.ModeAnchorExposure), keyed by format name.
	Sum map[string]FormatsModeTiming `json:"sum,omitempty"`
}

// FormatsModeTiming is one integer-sum mode at Table 4's anchor.
type FormatsModeTiming struct {
	Mode        string  `json:"mode"`
	Stages      int     `json:"stages"`
	ExposurePct float64 `json:"exposure_pct"`
}

// formatRows are the rows of the block: one uniform policy per format.
func formatRows() ([]policyRow, error) {
	var rows []policyRow
	for _, f := range lowbit.Formats() {
		p := train.Uniform(train.RuleSpec{Rule: train.FormatRule(f)})
		rows = append(rows, policyRow{policy: p, label: p.Label()})
	}
	return rows, nil
}

func formatsUnits(cfg run.Config) ([]run.Unit[FormatsUnit], error) {
	return FormatsUnits(formatsBlockOptions(cfg))
}

// formatsBlockOptions are the block's options for a run: the tier's, with
// the run's seed count for the rows when it sets one.
func formatsBlockOptions(cfg run.Config) FormatsOptions {
	o := FormatsOptionsFor(cfg.Tier, cfg.Seed+1)
	o.Rows = o.Rows.withSeeds(cfg)
	return o
}

// FormatsUnits lists the block's units: the rows (format x seed), the
// pilot, the timing anchor and, when chosen, the synthesis and the route.
func FormatsUnits(o FormatsOptions) ([]run.Unit[FormatsUnit], error) {
	if o.Rows.Seeds < 1 {
		return nil, fmt.Errorf("formats: seeds %d < 1", o.Rows.Seeds)
	}
	if o.PilotWarmup < 1 || o.PilotWarmup >= o.Pilot.Epochs {
		return nil, fmt.Errorf("formats: pilot warm-up %d epochs of %d", o.PilotWarmup, o.Pilot.Epochs)
	}
	rows, err := formatRows()
	if err != nil {
		return nil, err
	}
	var us []run.Unit[FormatsUnit]
	for _, r := range rows {
		for s := range o.Rows.Seeds {
			seed := o.Rows.Seed + uint64(s)
			key := fmt.Sprintf("%s/seed%d", r.policy, seed)
			us = append(us, run.Unit[FormatsUnit]{Key: key, Cost: trainCost(o.Rows, loopFormats), Run: func(ctx context.Context, cfg run.Config) (FormatsUnit, error) {
				tr, err := trainUnit(ctx, StudyFormats, o.Rows, r, seed, cfg.Logf)
				return FormatsUnit{Key: key, Run: &tr}, err
			}})
		}
	}
	pilotRun := o.Pilot
	pilotRun.Epochs += o.PilotWarmup // the calibration's warm-up, then the pilot
	us = append(us, run.Unit[FormatsUnit]{Key: "pilot", Cost: formatsPilotCost(pilotRun), Run: func(ctx context.Context, cfg run.Config) (FormatsUnit, error) {
		p, err := runFormatsPilot(ctx, o, nil, cfg.Logf)
		return FormatsUnit{Key: "pilot", Pilot: p}, err
	}})
	us = append(us, run.Unit[FormatsUnit]{Key: "timing", Cores: 1, Cost: cpuSeconds(measuredCPU["formats/timing"]), Run: func(ctx context.Context, cfg run.Config) (FormatsUnit, error) {
		exp, err := timing.AnchorExposure()
		if err != nil {
			return FormatsUnit{}, fmt.Errorf("timing anchor: %w", err)
		}
		dc := timing.DefaultConfig()
		ft := &FormatsTiming{Stages: dc.Controller.Stages, ClockGHz: dc.Controller.ClockGHz, ExposurePct: 100 * exp, Sum: map[string]FormatsModeTiming{}}
		for _, f := range lowbit.Formats() {
			if !f.Sum() {
				continue
			}
			m := cxl.Aggregate(f)
			k, err := timing.DatapathCycles(m, dc.Streams.Count)
			if err != nil {
				return FormatsUnit{}, fmt.Errorf("timing %v: %w", m, err)
			}
			e, err := timing.ModeAnchorExposure(m)
			if err != nil {
				return FormatsUnit{}, fmt.Errorf("timing %v: %w", m, err)
			}
			ft.Sum[f.String()] = FormatsModeTiming{Mode: m.String(), Stages: k, ExposurePct: 100 * e}
		}
		return FormatsUnit{Key: "timing", Timing: ft}, nil
	}})
	for _, d := range hw.Datapaths() {
		us = append(us, formatsHWUnits(o, d)...)
	}
	return us, nil
}

// formatsHWUnits are datapath d's 512-bit synthesis (standard and full
// tiers) and ECP5 route (full tier). The paper's datapath keeps its keys
// synth/512 and pnr/512; a sum datapath's add its name.
func formatsHWUnits(o FormatsOptions, d hw.Datapath) []run.Unit[FormatsUnit] {
	dp := hw.Config{Width: 512, Datapath: d}
	sk, pk := "synth/512", "pnr/512"
	if !d.Paper() {
		sk, pk = sk+"/"+d.String(), pk+"/"+d.String()
	}
	var us []run.Unit[FormatsUnit]
	if o.Synth {
		us = append(us, run.Unit[FormatsUnit]{Key: sk, Cores: 1, Cost: hwCost("synth/debian", dp), Run: func(ctx context.Context, cfg run.Config) (FormatsUnit, error) {
			r, err := hw.Synth(ctx, dp, hw.SynthOptions{})
			if err != nil {
				return formatsSkip(sk, err)
			}
			return FormatsUnit{Key: sk, Synth: &r}, nil
		}})
	}
	if o.Route {
		us = append(us, run.Unit[FormatsUnit]{Key: pk, Cores: 1, Long: true, Cost: hwCost("pnr/ecp5", dp), Run: func(ctx context.Context, cfg run.Config) (FormatsUnit, error) {
			r, err := hw.Pnr(ctx, dp, hw.PnrOptions{Part: hw.DefaultECP5})
			if err != nil {
				return formatsSkip(pk, err)
			}
			return FormatsUnit{Key: pk, Pnr: &r}, nil
		}})
	}
	return us
}

// formatsSkip turns a missing tool into a unit result that says so.
func formatsSkip(key string, err error) (FormatsUnit, error) {
	var m *hw.MissingToolError
	if errors.As(err, &m) {
		return FormatsUnit{Key: key, Skipped: "skipped: " + m.Error()}, nil
	}
	return FormatsUnit{}, fmt.Errorf("%s: %w", key, err)
}

// runFormatsPilot calibrates the four rungs on an FP32 warm-up of the
// pilot's workload (seed CalibrationSeed), then runs the pilot; given
// rungs (not nil) are used as they are, and the calibration is recorded
// beside them.
func runFormatsPilot(ctx context.Context, o FormatsOptions, given control.Ladder, logf func(string, ...any)) (*FormatsPilot, error) {
	sets, info, err := o.Pilot.LoadSets()
	if err != nil {
		return nil, err
	}
	tc := o.Pilot.Config(train.Uniform(train.RuleSpec{}), o.Pilot.Seed)
	tc.Logf = nil
	steps := max(o.Pilot.DiagSteps, 1)
	ctc := tc
	ctc.Seed = o.CalibrationSeed
	cal, _, err := pilot.WarmupCosines(ctx, ctc, o.PilotWarmup, steps, sets)
	if err != nil {
		return nil, err
	}
	var backbone [lowbit.NumFormats]float64
	for f := range backbone {
		backbone[f] = cal[f].Groups[nn.Backbone]
	}
	rungs, err := control.CalibrateLadder(rungFormats(), backbone)
	if err != nil {
		return nil, err
	}
	if given != nil {
		rungs = given
	}
	r, err := pilot.RunFormats(ctx, pilot.FormatConfig{Train: tc, WarmupEpochs: o.PilotWarmup, DiagSteps: steps, Ladder: rungs}, sets)
	if err != nil {
		return nil, err
	}
	if logf != nil {
		logf("formats: pilot seed %d settled on %s (final acc %.2f%%)", r.Seed, r.Plan, 100*r.Final)
	}
	return &FormatsPilot{Data: info, CalibrationSeed: o.CalibrationSeed, Calibration: cal, Given: given != nil, Result: *r}, nil
}

// formatsParts splits the units into their kinds.
type formatsParts struct {
	runs   []TrainRun
	pilot  *FormatsPilot
	timing *FormatsTiming
	// synth and pnr are keyed by datapath name ("" the paper's).
	synth, pnr map[string]*FormatsUnit
}

func splitFormats(us []FormatsUnit) formatsParts {
	p := formatsParts{synth: map[string]*FormatsUnit{}, pnr: map[string]*FormatsUnit{}}
	for i := range us {
		u := &us[i]
		switch {
		case u.Run != nil:
			p.runs = append(p.runs, *u.Run)
		case u.Pilot != nil:
			p.pilot = u.Pilot
		case u.Timing != nil:
			p.timing = u.Timing
		case strings.HasPrefix(u.Key, "synth/512"):
			p.synth[strings.TrimPrefix(strings.TrimPrefix(u.Key, "synth/512"), "/")] = u
		case strings.HasPrefix(u.Key, "pnr/512"):
			p.pnr[strings.TrimPrefix(strings.TrimPrefix(u.Key, "pnr/512"), "/")] = u
		}
	}
	return p
}

// rowCosines are a row's own format's cosines (its runs' last
// diagnostics, on its own gradients), per group, one value per seed.
func rowCosines(f lowbit.Format, pr PolicyRuns) [nn.NumGroups][]float64 {
	var out [nn.NumGroups][]float64
	for _, r := range pr.Runs {
		ds := r.Result.Diags
		if len(ds) == 0 || ds[len(ds)-1].Formats == nil {
			continue
		}
		fc := ds[len(ds)-1].Formats
		for g := range out {
			out[g] = append(out[g], fc[f].Groups[g])
		}
	}
	return out
}

func formatsLayout(cfg run.Config, us []FormatsUnit) (*report.Result, error) {
	return FormatsLayout(formatsBlockOptions(cfg), us)
}

// FormatsLayout lays out the block: the side-by-side table, the pilot,
// the claims and the FP32 references' convergence.
func FormatsLayout(o FormatsOptions, us []FormatsUnit) (*report.Result, error) {
	p := splitFormats(us)
	res := &report.Result{Title: formatsTitle, Data: us}
	rows := byRow(p.runs)
	if len(rows) == 0 {
		return nil, errors.New("formats: no training runs")
	}
	dataName := p.runs[0].Data.Name
	f := finalsOf(rows)
	byLabel := map[string]PolicyRuns{}
	for _, pr := range rows {
		byLabel[pr.Label] = pr
	}
	t := report.Table{Name: "formats", Title: "Every format side by side on the " + o.Rows.Model + " stand-in (" + dataName + ")",
		Columns: []string{"format", "evaluated by", "bits/element (paper acc.)", "traffic ratio", "scale agreement (bits/step)", "final acc. (%)", "vs FP32 (points, 95% paired CI)",
			"cosine backbone", "cosine head", "datapath cycles", "exposure (%)", "cells 512-bit", "Fmax 512-bit ECP5 (MHz)"}}
	for _, ft := range lowbit.Formats() {
		label := train.Uniform(train.RuleSpec{Rule: train.FormatRule(ft)}).Label()
		pr, ok := byLabel[label]
		if !ok {
			continue
		}
		run := pr.Runs[0].Result
		who := "paper"
		if !ft.Paper() {
			who = "extension"
		}
		vs := "reference"
		if label != "FP32 all" {
			if v, ok := f.paired(label, "FP32 all"); ok {
				d := part{}.meanDiff(v[0], v[1])
				if iv, err := stats.PairedT(v[0], v[1], stats.Level); err != nil {
					vs = fmt.Sprintf("%+.2f (%v)", d, err)
				} else {
					vs = fmt.Sprintf("%+.2f %s", d, iv)
				}
			}
		}
		cos := rowCosines(ft, pr)
		cyc, exp := "0 (bypass)", "0 (reference)"
		switch {
		case ft.Vote() && p.timing != nil:
			cyc = fmt.Sprintf("%d at %g GHz", p.timing.Stages, p.timing.ClockGHz)
			exp = fmt.Sprintf("%.2f", p.timing.ExposurePct)
		case ft.Vote():
			cyc, exp = "not run", "not run"
		case ft.Sum() && p.timing != nil:
			if st, ok := p.timing.Sum[ft.String()]; ok {
				cyc = fmt.Sprintf("%d at %g GHz (%s)", st.Stages, p.timing.ClockGHz, st.Mode)
				exp = fmt.Sprintf("%.2f", st.ExposurePct)
			} else {
				cyc, exp = "not run", "not run"
			}
		case ft.Sum():
			cyc, exp = "not run", "not run"
		}
		hc, hf := "- (bypass: no datapath)", "-"
		switch {
		case ft.Vote():
			hc, hf = formatsHardware(p, "")
		case ft.Sum():
			d, err := hw.ModeDatapath(cxl.Aggregate(ft))
			if err != nil {
				return nil, err
			}
			hc, hf = formatsHardware(p, string(d))
		}
		t.AddRow(ft.String(), who, fmt.Sprintf("%g", lowbit.BitsPerElement(ft, lowbit.PaperGate, lowbit.PaperAccounting)),
			train.FormatRatio(run.Traffic.Paper.Ratio), fmt.Sprintf("%g", run.Traffic.ScaleBits), f.cell(label), vs,
			pm4(cos[nn.Backbone]), pm4(cos[nn.Head]), cyc, exp, hc, hf)
	}
	t.Notes = []string{
		fmt.Sprintf("%s, %d seeds (%s); every format is a uniform policy; the paper's three rows are the training block's validated runs of the same seeds. INT8 and BFP8 are extensions beyond the paper (Sec. 1: \"more conservative formats are compatible with the same admission framework\"): INT8 agrees one scale per parameter tensor (max |g| over the workers / 127) and sums 8-bit codes into int16 lanes; BFP8 gives every worker its own exponent per 64-element block and aligns the mantissas to the largest before the sum; both decode the sum to the workers' mean and train with the FP32 learning rate.", describe(o.Rows, p.runs[0].Data), len(byLabel["FP32 all"].Runs), o.Rows.tierLabel()),
		"Bits per element under the paper's accounting; the traffic ratio is the stand-in's gradient payload over FP32's. INT8's scale agreement (one float32 per worker and parameter tensor, a max-reduce before encoding) is the separate column, not in the ratio.",
		"Cosines are each row's own aggregate against the FP32 mean of the same gradients, averaged over the last epoch's diagnostic steps, mean ± std over seeds (the paper's Table 5 measure).",
		"Datapath cycles and exposure: the timing model's aggregation stages and its full-LLC-miss anchor (Table 4's first row), which G-Binary and G-Ternary share; INT8 and BFP8 run the same anchor at the depth timing.DatapathCycles takes for the INT8 and BFP8 modes from the RTL (package hw's streaming accumulators, one worker line per clock: 3 and 5 pipeline stages from the last worker's line to the aggregate, checked by simulation in hw.MeasureTiming).",
		"Cells: Yosys generic synthesis of the 512-bit datapaths: the paper's 5-stage one, whose mode selects G-Binary or G-Ternary, and the INT8 and BFP8 sum datapaths at their fixed depths (package hw); Fmax: nextpnr on ECP5 (full tier). The hardware block synthesizes and routes all three in every tier.",
	}
	res.Tables = append(res.Tables, t)
	if s := p.runs[0].Data.standIn("formats' rows"); s != "" { // the block's status says so
		res.Skipped = append(res.Skipped, s)
	}
	if p.pilot != nil {
		if s := p.pilot.Data.standIn("format-admission pilot"); s != "" {
			res.Skipped = append(res.Skipped, s)
		}
	}
	conv := convergenceOf(rows, p.runs[0].Data.tierCell(o.Rows.tierLabel()))
	claims := formatsClaims(f, rows, p.pilot, conv)
	for i := range claims {
		switch {
		case claims[i].Name == formatsPilotClaimName && p.pilot != nil:
			claims[i].Tier = p.pilot.Data.tierCell(o.Rows.tierLabel())
		case claims[i].Tier == "":
			claims[i].Tier = conv.tier
		}
	}
	if p.pilot != nil {
		res.Tables = append(res.Tables, formatsPilotTable(p.pilot))
		pr := p.pilot.Result
		res.Summary = append(res.Summary, fmt.Sprintf("Pilot (%s, seed %d): the ladder admitted %s (traffic %s of FP32), final accuracy %.2f%%.",
			p.pilot.Data.Name, pr.Seed, pr.Label, train.FormatRatio(pr.Traffic.Paper.Ratio), 100*pr.Final))
	}
	res.Tables = append(res.Tables, claimsTable("formats-claims", "Claims on the formats beyond the paper", claims),
		convergenceTable(StudyFormats, dataName, conv))
	res.Claims = append(res.Claims, claims...)
	res.Summary = append(res.Summary, claimSummary(claims)...)
	return res, nil
}

// formatsHardware formats the 512-bit datapath's cells and Fmax.
func formatsHardware(p formatsParts, datapath string) (cells, fmax string) {
	cells, fmax = "not run in this tier (block hardware)", "not run in this tier (block hardware)"
	if u := p.synth[datapath]; u != nil {
		cells = u.Skipped
		if u.Synth != nil {
			cells = fmt.Sprintf("%d (%d registers)", u.Synth.Generic.Cells, u.Synth.Generic.Registers())
		}
	}
	if u := p.pnr[datapath]; u != nil {
		fmax = u.Skipped
		if r := u.Pnr; r != nil {
			fmax = fmt.Sprintf("%.2f", r.FmaxMHz)
			if !r.Fits {
				fmax = "does not fit: " + r.Reason
			}
		}
	}
	return cells, fmax
}

// rungFormats lists every format of lowbit's registry that can be a rung
// of the ladder: all but FP32, in registry order.
func rungFormats() []lowbit.Format {
	var fs []lowbit.Format
	for _, f := range lowbit.Formats() {
		if f != lowbit.FP32 {
			fs = append(fs, f)
		}
	}
	return fs
}

// formatsPilotTable lays out the pilot: the calibration, the warm-up
// cosines of each group against each rung, and what was admitted.
func formatsPilotTable(fp *FormatsPilot) report.Table {
	r := fp.Result
	rungs := rungFormats()
	cols := []string{"group"}
	for _, ft := range rungs {
		cols = append(cols, ft.Label())
	}
	t := report.Table{Name: "formats-pilot", Title: "Format-admission pilot on " + fp.Data.Name + ": the ladder's choice per group",
		Columns: append(cols, "admitted", "ladder")}
	f := func(v float64) string { return fmt.Sprintf("%.4f", v) }
	th := map[lowbit.Format]float64{}
	for _, g := range r.Ladder {
		th[g.Format] = g.Min
	}
	row := func(label string, v func(lowbit.Format) float64, admitted, ladder string) {
		cells := []any{label}
		for _, ft := range rungs {
			cells = append(cells, f(v(ft)))
		}
		t.AddRow(append(cells, admitted, ladder)...)
	}
	row(fmt.Sprintf("calibration: backbone, FP32 warm-up seed %d", fp.CalibrationSeed),
		func(ft lowbit.Format) float64 { return fp.Calibration[ft].Groups[nn.Backbone] }, "-", "control.CalibrateLadder")
	row("thresholds", func(ft lowbit.Format) float64 { return th[ft] }, "-", r.Ladder.String())
	for _, g := range nn.Groups() {
		row(fmt.Sprintf("%v (pilot seed %d)", g, r.Seed), func(ft lowbit.Format) float64 { return r.Warmup[ft].Groups[g] }, r.Admitted[g], r.Reasons[g])
	}
	accs := make([]string, len(r.Epochs))
	for i, e := range r.Epochs {
		accs[i] = fmt.Sprintf("%.2f", 100*e.ValAcc)
	}
	how := fmt.Sprintf("The thresholds are the calibration run's backbone cosines floored to %g, as the paper's pilots calibrate on an always-FP32 run of the workload.", control.LadderStep)
	if fp.Given {
		how = "The thresholds were given (--rungs); the calibration row shows what calibration would have measured."
	}
	t.Notes = []string{
		fmt.Sprintf("Cosines to the FP32 mean, averaged over the last %d steps of the FP32 warm-up; rungs are tried lowest traffic first (G-Binary 1, G-Ternary 1.58, INT8 8, BFP8 8.125 bits per element) and the first that passes is admitted, FP32 (32) when none does. %s", r.WarmupSteps, how),
		fmt.Sprintf("Plan %s from epoch %d on; traffic %s of FP32 (paper accounting); validation accuracy per epoch (%%): %s; %d velocity resets.", r.Plan, r.WarmupEpochs+1, train.FormatRatio(r.Traffic.Paper.Ratio), strings.Join(accs, " "), r.VelocityResets),
	}
	return t
}

// FormatsPilotReport runs the format-admission pilot alone (`nfabric pilot
// formats`): o.Pilot's workload, the ladder calibrated as the block does,
// or rungs when not nil.
func FormatsPilotReport(ctx context.Context, o FormatsOptions, rungs control.Ladder) (*report.Result, error) {
	if o.PilotWarmup < 1 || o.PilotWarmup >= o.Pilot.Epochs {
		return nil, usage.Errorf("--warmup-epochs %d: want 1 to %d (--epochs %d)", o.PilotWarmup, o.Pilot.Epochs-1, o.Pilot.Epochs)
	}
	if err := rungs.Validate(); err != nil {
		return nil, usage.Errorf("--rungs: %w", err)
	}
	fp, err := runFormatsPilot(ctx, o, rungs, o.Pilot.Logf)
	if err != nil {
		return nil, err
	}
	r := fp.Result
	res := &report.Result{Block: "pilot-formats", Title: "Format-admission pilot (extension: the ladder with INT8 and BFP8 rungs)", Data: fp,
		Tables: []report.Table{formatsPilotTable(fp)},
		Summary: []string{fmt.Sprintf("%s seed %d: the ladder admitted %s (traffic %s of FP32), final accuracy %.2f%%.",
			fp.Data.Name, r.Seed, r.Label, train.FormatRatio(r.Traffic.Paper.Ratio), 100*r.Final)}}
	if s := fp.Data.standIn("pilot"); s != "" {
		res.Skipped, res.Status = append(res.Skipped, s), report.StatusPartial
	}
	return res, nil
}
