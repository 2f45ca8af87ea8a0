package experiments

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/stats"
	"github.com/neuronfabric/nfabric/train"
)

// calibrationRecord returns the always-FP32 run of the first seed and the
// number of its first steps that are fault-free (those before the fault
// window, or all of them without a fault).
func (o PilotOptions) calibrationRecord(all []scenarioRuns) (*pilot.Result, int, error) {
	for _, sr := range all {
		if sr.scenario != pilot.AlwaysFP32 {
			continue
		}
		r := sr.runs[0]
		steps := len(r.Losses)
		if o.Fault.Rate > 0 && len(r.Epochs) > 0 {
			steps = min(steps, (o.Fault.StartEpoch-1)*(r.Steps/len(r.Epochs)))
		}
		return r, steps, nil
	}
	return nil, 0, fmt.Errorf("control: no always-fp32 run to calibrate on")
}

// sig2 rounds v to two significant figures, the precision the configured
// CUSUM constants are written with.
func sig2(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 2, 64), 64)
	return f
}

// calibrationTable re-derives the control thresholds from this run's
// always-FP32 record (pilot.Calibrate) and puts them beside the configured
// ones, saying whether they agree.
func (o PilotOptions) calibrationTable(all []scenarioRuns) (report.Table, error) {
	r, steps, err := o.calibrationRecord(all)
	if err != nil {
		return report.Table{}, err
	}
	t := report.Table{Name: "calibration", Title: fmt.Sprintf("Control thresholds: configured, and re-derived from this run's always-fp32 record (seed %d)", r.Seed),
		Columns: []string{"threshold", "procedure", "derived here", "configured", "agrees"}}
	cal, cerr := pilot.Calibrate(r, steps, o.Control)
	if cerr != nil {
		t.Notes = append(t.Notes, "not derived: "+cerr.Error())
	}
	agree := func(derived, configured float64) string {
		if cerr != nil {
			return "not derived"
		}
		if derived == configured {
			return "yes"
		}
		return "no"
	}
	f := func(v float64) string {
		if cerr != nil {
			return "-"
		}
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	cc := o.Control
	spe := int64(r.Steps / max(1, len(r.Epochs)))
	t.AddRow("loss CUSUM slack K", fmt.Sprintf("%d sd of the relative loss excess (EWMA weight %g) over the fault-free steps after warm-up, 2 significant figures", control.CUSUMSlackSD, cc.LossAlpha),
		f(cal.Loss.K), f(cc.LossK), agree(sig2(cal.Loss.K), cc.LossK))
	t.AddRow("loss CUSUM threshold H", fmt.Sprintf("max(%d sd, %d x the largest sum the record reaches), 2 significant figures", control.CUSUMThresholdSD, control.CUSUMMargin),
		f(cal.Loss.H), f(cc.LossH), agree(sig2(cal.Loss.H), cc.LossH))
	t.AddRow("ladder G-Binary minimum", fmt.Sprintf("backbone's G-Binary cosine at the end of warm-up (%s), floored to %g", f(cal.WarmupBinary), control.LadderStep),
		f(ladderMin(cal.Ladder, lowbit.Binary)), f(ladderMin(cc.Ladder, lowbit.Binary)), agree(ladderMin(cal.Ladder, lowbit.Binary), ladderMin(cc.Ladder, lowbit.Binary)))
	t.AddRow("ladder G-Ternary minimum", fmt.Sprintf("backbone's G-Ternary cosine at the end of warm-up (%s), floored to %g", f(cal.WarmupTernary), control.LadderStep),
		f(ladderMin(cal.Ladder, lowbit.Ternary)), f(ladderMin(cc.Ladder, lowbit.Ternary)), agree(ladderMin(cal.Ladder, lowbit.Ternary), ladderMin(cc.Ladder, lowbit.Ternary)))
	yes := map[bool]string{true: "yes", false: "no"}
	t.AddRow("warm-up steps", "one epoch", spe, cc.WarmupSteps, yes[spe == cc.WarmupSteps])
	t.AddRow("cooldown steps", "one epoch", spe, cc.CooldownSteps, yes[spe == cc.CooldownSteps])
	t.AddRow("calibration steps", "one diagnostics interval", o.DiagEvery, cc.CalibrationSteps, yes[int64(o.DiagEvery) == cc.CalibrationSteps])
	if cerr == nil {
		t.Notes = append(t.Notes,
			fmt.Sprintf("Record: the always-fp32 run's first %d steps (before the fault window); the CUSUM statistics use %d of them (after warm-up): excess mean %.4f, sd %.4f, largest sum with slack K %.4f.",
				cal.Steps, cal.Loss.Steps, cal.Loss.Mean, cal.Loss.SD, cal.Loss.MaxS))
	}
	t.Notes = append(t.Notes,
		"The configured values are PilotDefaults' constants, obtained by this procedure on the quick easy workload, seed 1 (or the values given on the command line); 'no' means this record (another seed, size, workload or engine) calibrates differently. The pilots run with the configured values.",
		"The live loop's ladder is the easy workload's (the thresholds are carried over, as the paper carries its vision thresholds); its own warm-up cosines are in the live-loop table.")
	return t, nil
}

// claim is one Sec. 8 claim checked against our runs.
type claim struct {
	text, paper, ours string
	holds             bool
	// criterion is the rule holds applies; undecided, when set, says why
	// the runs cannot decide the claim (its verdict is inconclusive);
	// notRun, when set, says why the claim has no runs at all.
	criterion, undecided, notRun string
	// judged, for an accuracy claim with two or more paired seeds, is its
	// ledger row as the training block's rule for interval claims
	// (judged) decides it: its Verdict, Interval and Convergence.
	judged *report.Claim
}

// verdict is the claim's ledger verdict.
func (c claim) verdict() string {
	switch {
	case c.notRun != "":
		return report.VerdictNotRun
	case c.judged != nil:
		return c.judged.Verdict
	case c.undecided != "":
		return report.VerdictInconclusive
	}
	return modelVerdict(c.holds)
}

// claimsTable marks the Sec. 8 claims the pilots can test: holds, does not
// hold or inconclusive, computed from the runs, as a table and as the
// block's ledger rows. It also returns how many hold and the claims that do
// not.
func (o PilotOptions) claimsTable(all []scenarioRuns, live []*PilotRun) (t report.Table, rows []report.Claim, held int, missed []string) {
	t = report.Table{Name: "claims", Title: "Sec. 8 claims on the stand-ins",
		Columns: []string{"claim (paper, Sec. 8)", "paper", "ours", "verdict"}}
	for _, c := range append(o.fig6Claims(all), liveClaims(live)...) {
		v := c.verdict()
		switch v {
		case report.VerdictHolds:
			held++
		case report.VerdictDoesNotHold:
			missed = append(missed, c.text)
		}
		ours := c.ours
		switch {
		case c.notRun != "":
			ours = "not run: " + c.notRun
		case c.undecided != "":
			ours += " (" + c.undecided + ")"
		}
		t.AddRow(c.text, c.paper, ours, v)
		section := "Sec. 8, Fig. 6"
		if strings.HasPrefix(c.text, "Live loop") {
			section = "Sec. 8, live loop"
		}
		row := report.Claim{Section: section, Name: c.text, Paper: c.paper, Ours: ours, Criterion: c.criterion, Verdict: v}
		switch {
		case c.judged != nil:
			row.Interval, row.Convergence, row.SeedsToDecide = c.judged.Interval, c.judged.Convergence, c.judged.SeedsToDecide
		case c.undecided != "":
			row.SeedsToDecide = "at least 2 paired seeds: " + c.undecided
		}
		rows = append(rows, row)
	}
	within := "'Within the references' run-to-run variation': the G-Binary-default mean lies between the lower and the higher of the always-fp32 and always-g-binary means, widened by the larger of their standard deviations (0 with one seed)."
	if o.Train.Seeds > 1 {
		within = fmt.Sprintf("'Within the references' run-to-run variation', with %d paired seeds: the 95%% paired t interval of G-Binary-default minus the lower reference lies above -%g points and that of G-Binary-default minus the higher reference below +%g (the intervals are in the ledger), judged once the always-fp32 seed-mean curve has plateaued (%s).", o.Train.Seeds, endpointMargin, endpointMargin, train.Plateau)
	}
	t.Notes = []string{
		within,
		"The paper's pilot is CIFAR-10/ResNet-18 and its live loop CIFAR-100/ResNet-18; ours are the ResNet stand-ins named in the tables above.",
	}
	return t, rows, held, missed
}

// The recovery pilot's claims, as fig6Claims names them.
const (
	claimAlarm     = "G-Binary-default: the Supervisor returns to FP32 during the injected degradation window"
	claimReadmit   = "G-Binary-default re-enables low-bit aggregation after recovery"
	claimEndpoint  = "G-Binary-default's final accuracy is within the FP32 and always-G-Binary references' run-to-run variation"
	claimAdmission = "FP32-default admits low-bit aggregation after warm-up diagnostics"
)

// fig6Claims checks the recovery pilot's claims on every seed; a claim
// whose scenario did not run says not run (fig6Claims(nil) lists them).
func (o PilotOptions) fig6Claims(all []scenarioRuns) []claim {
	by := map[pilot.Scenario]scenarioRuns{}
	for _, sr := range all {
		by[sr.scenario] = sr
	}
	var out []claim
	gd, fd := by[pilot.GBinaryDefault], by[pilot.FP32Default]
	if len(gd.runs) > 0 {
		inWindow, readmitted := 0, 0
		for _, r := range gd.runs {
			spe := r.Steps / max(1, len(r.Epochs))
			lo, hi := int64((o.Fault.StartEpoch-1)*spe), int64(o.Fault.EndEpoch*spe)
			alarm := int64(-1)
			for _, a := range r.Actions {
				if alarm < 0 && !a.Mode.LowBit() && a.Step >= lo && a.Step < hi && a.Step > o.Control.WarmupSteps {
					alarm = a.Step
				}
				if alarm >= 0 && a.Step > alarm && a.Mode.LowBit() {
					readmitted++
					break
				}
			}
			if alarm >= 0 {
				inWindow++
			}
		}
		n := len(gd.runs)
		ours := fmt.Sprintf("%d of %d seeds", inWindow, n)
		if o.Fault.Rate == 0 {
			ours = "no fault injected (--fault-rate 0)"
		}
		out = append(out,
			claim{text: claimAlarm, paper: "yes",
				ours: ours, holds: o.Fault.Rate > 0 && inWindow == n, criterion: "an FP32 alarm inside the fault window on every seed"},
			claim{text: claimReadmit, paper: "yes", ours: fmt.Sprintf("%d of %d seeds", readmitted, n),
				holds: readmitted == n, criterion: "low-bit re-admitted after the alarm on every seed"})
		out = append(out, o.endpointClaim(by))
	} else {
		why := "no G-Binary-default run"
		out = append(out,
			claim{text: claimAlarm, paper: "yes", criterion: "an FP32 alarm inside the fault window on every seed", notRun: why},
			claim{text: claimReadmit, paper: "yes", criterion: "low-bit re-admitted after the alarm on every seed", notRun: why},
			claim{text: claimEndpoint, paper: paperPilotAcc + " %", criterion: endpointCriterion, notRun: why})
	}
	admission := claim{text: claimAdmission, paper: "yes", criterion: "low-bit steps after warm-up on every seed"}
	if len(fd.runs) > 0 {
		admitted := 0
		for _, r := range fd.runs {
			if r.LowBitSteps > 0 {
				admitted++
			}
		}
		admission.ours, admission.holds = fmt.Sprintf("%d of %d seeds", admitted, len(fd.runs)), admitted == len(fd.runs)
	} else {
		admission.notRun = "no FP32-default run"
	}
	return append(out, admission)
}

// endpointCriterion is the endpoint claim's criterion with one seed (its
// paired form is pairedEndpoint's).
const endpointCriterion = "mean within [lower reference mean - sd, higher reference mean + sd], sd the larger reference std over seeds"

// endpointMargin is the endpoint claim's criterion with paired seeds, in
// accuracy points: "within the references' run-to-run variation" read as
// no more than 2 points below the lower reference and no more than 2 above
// the higher one, the training block's Fig. 4 margin, fixed before any run.
const endpointMargin = 2.0

// endpointClaim checks "the endpoint stays within the run-to-run variation
// of the FP32 and always-G-Binary references". With one seed it compares
// the means, widened by the references' standard deviation, and cannot
// decide (no run-to-run variation sampled). With two or more paired seeds
// it judges the 95% paired t intervals of G-Binary-default minus the lower
// and minus the higher reference against endpointMargin, once the
// always-FP32 reference's seed-mean curve has converged (train.Plateau).
func (o PilotOptions) endpointClaim(by map[pilot.Scenario]scenarioRuns) claim {
	fp, gb, gd := by[pilot.AlwaysFP32], by[pilot.AlwaysGBinary], by[pilot.GBinaryDefault]
	c := claim{text: claimEndpoint, paper: paperPilotAcc + " %", criterion: endpointCriterion}
	if len(fp.runs) == 0 || len(gb.runs) == 0 {
		c.notRun = "the always-fp32 or always-g-binary reference did not run"
		return c
	}
	f, g, d := fp.stats(), gb.stats(), gd.stats()
	sd := math.Max(f.accStd, g.accStd)
	lo, hi := math.Min(f.accMean, g.accMean)-sd, math.Max(f.accMean, g.accMean)+sd
	c.ours = fmt.Sprintf("%.2f against [%.2f, %.2f] (FP32 %.2f, G-Binary %.2f)", d.accMean, lo, hi, f.accMean, g.accMean)
	c.holds = d.accMean >= lo && d.accMean <= hi
	n := min(len(fp.runs), len(gb.runs), len(gd.runs))
	if n < 2 {
		// One seed has no run-to-run variation: the claim is about noise
		// the runs did not sample.
		c.undecided = fmt.Sprintf("%d seed(s): no run-to-run variation measured", n)
		return c
	}
	return pairedEndpoint(c, fp, gb, gd)
}

// pairedEndpoint judges the endpoint claim on paired seeds: holds when the
// interval of G-Binary-default minus the lower reference lies above
// -endpointMargin and that of G-Binary-default minus the higher reference
// below +endpointMargin; does not hold when either lies wholly outside.
func pairedEndpoint(c claim, fp, gb, gd scenarioRuns) claim {
	final := func(sr scenarioRuns) map[uint64]float64 {
		m := map[uint64]float64{}
		for _, r := range sr.runs {
			m[r.Seed] = 100 * r.Final
		}
		return m
	}
	ff, fg, fd := final(fp), final(gb), final(gd)
	var xf, xg, xd []float64
	for _, s := range slices.Sorted(maps.Keys(fd)) {
		a, okf := ff[s]
		b, okg := fg[s]
		if okf && okg {
			xf, xg, xd = append(xf, a), append(xg, b), append(xd, fd[s])
		}
	}
	lower, higher, ln, hn := xf, xg, "FP32", "G-Binary"
	mf, _ := stats.MeanSD(xf)
	if mg, _ := stats.MeanSD(xg); mg < mf {
		lower, higher, ln, hn = xg, xf, "G-Binary", "FP32"
	}
	c.criterion = fmt.Sprintf("95%% paired t: G-Binary-default - lower reference >= -%g and G-Binary-default - higher reference <= +%g points", endpointMargin, endpointMargin)
	vs := func(name string, ref []float64, r stats.Region) part {
		p := diffPart("G-Binary-default - "+name, xd, ref, r)
		p.ours = fmt.Sprintf("%s %+.2f", p.rule, p.meanDiff(xd, ref))
		return p
	}
	parts := []part{vs(ln, lower, stats.AtLeast(-endpointMargin)), vs(hn, higher, stats.AtMost(endpointMargin))}
	j := judged(report.Claim{}, parts, pilotConvergence(fp))
	c.ours = fmt.Sprintf("%s (%d paired seeds)", j.Ours, len(xd))
	c.judged = &j
	return c
}

// pilotConvergence is train.Plateau's finding on a scenario's seed-mean
// validation curve (points per epoch), in the form judged takes.
func pilotConvergence(sr scenarioRuns) studyConvergence {
	rs := make([]runConvergence, len(sr.runs))
	for i, r := range sr.runs {
		for _, e := range r.Epochs {
			rs[i].accs = append(rs[i].accs, 100*e.ValAcc)
		}
	}
	mean, ok := meanCurve(rs)
	if !ok {
		return studyConvergence{cell: "not converged: the runs have different lengths"}
	}
	conv := train.Plateau.Check(mean)
	if !conv.Converged {
		return studyConvergence{cell: "not converged: " + conv.Reason}
	}
	return studyConvergence{ok: true, cell: "converged (always-fp32 seed-mean curve, " + train.Plateau.String() + ")"}
}

// The live loop's claims, as liveClaims names them.
const (
	claimLiveBackbone = "Live loop (100 classes): the ladder selects G-Ternary for the backbone"
	claimLiveHead     = "Live loop (100 classes): the ladder keeps the sensitive head on FP32"
)

// liveClaims checks the live loop's claims, G-Ternary backbone and FP32
// head, on every seed's live loop: each holds when it holds on every seed;
// without a live loop both say not run (liveClaims(nil) lists them).
func liveClaims(live []*PilotRun) []claim {
	if len(live) == 0 {
		return []claim{
			{text: claimLiveBackbone, paper: "g-ternary", criterion: "the backbone settles on g-ternary", notRun: "no live loop"},
			{text: claimLiveHead, paper: "fp32-bypass", criterion: "the head settles on fp32-bypass", notRun: "no live loop"},
		}
	}
	if len(live) > 1 {
		return liveClaimsOverSeeds(live)
	}
	s := live[0].Result.Settled
	w := live[0].Result.Warmup
	cos := ""
	if w != nil {
		cos = fmt.Sprintf(" (warm-up cosines G-Binary/G-Ternary: backbone %.3f/%.3f, head %.3f/%.3f)",
			w.Binary.Groups[nn.Backbone], w.Ternary.Groups[nn.Backbone], w.Binary.Groups[nn.Head], w.Ternary.Groups[nn.Head])
	}
	for _, a := range live[0].Result.Actions {
		if a.Group == nn.Backbone.String() {
			cos = fmt.Sprintf(" (step %d, %s)", a.Step, a.Reason)
			break
		}
	}
	return []claim{
		{text: claimLiveBackbone, paper: "g-ternary", ours: s[nn.Backbone] + cos,
			holds: s[nn.Backbone] == "g-ternary", criterion: "the backbone settles on g-ternary"},
		{text: claimLiveHead, paper: "fp32-bypass", ours: s[nn.Head],
			holds: s[nn.Head] == "fp32-bypass", criterion: "the head settles on fp32-bypass"},
	}
}

// liveClaimsOverSeeds counts, over the seeds' live loops, where each
// group settled.
func liveClaimsOverSeeds(live []*PilotRun) []claim {
	count := func(g nn.Group, want string) (int, string) {
		k, seen := 0, map[string]int{}
		for _, l := range live {
			m := l.Result.Settled[g]
			seen[m]++
			if m == want {
				k++
			}
		}
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(seen)) {
			parts = append(parts, fmt.Sprintf("%s %d", m, seen[m]))
		}
		return k, fmt.Sprintf("%d of %d seeds (%s)", k, len(live), strings.Join(parts, ", "))
	}
	kb, ob := count(nn.Backbone, "g-ternary")
	kh, oh := count(nn.Head, "fp32-bypass")
	n := len(live)
	return []claim{
		{text: claimLiveBackbone, paper: "g-ternary", ours: ob,
			holds: kb == n, criterion: "the backbone settles on g-ternary on every seed"},
		{text: claimLiveHead, paper: "fp32-bypass", ours: oh,
			holds: kh == n, criterion: "the head settles on fp32-bypass on every seed"},
	}
}

// Calibrate runs the calibration procedure alone (what `nfabric pilot
// --calibrate` prints): the always-FP32 pilot on the easy workload, first
// seed, fault-free, over the epochs before the fault window (all of them
// without a fault), and the calibration table of its record beside the
// configured thresholds. It costs one pilot run of that length.
func (o PilotOptions) Calibrate(ctx context.Context) (*report.Result, error) {
	t := o.Train
	if o.Fault.Rate > 0 {
		t.Epochs = o.Fault.StartEpoch - 1
	}
	if t.Epochs < 1 {
		return nil, fmt.Errorf("calibrate: the fault window starts in epoch %d, leaving no fault-free epoch to calibrate on", o.Fault.StartEpoch)
	}
	pc := o.pilotConfig(pilot.AlwaysFP32, t, t.Seed)
	pc.Fault = pilot.Fault{}
	u, err := o.pilotUnit(ctx, PartFig6, t, pc, o.Logf)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	all := []scenarioRuns{{scenario: pilot.AlwaysFP32, runs: []*pilot.Result{&u.Pilot.Result}}}
	tb, err := o.calibrationTable(all)
	if err != nil {
		return nil, err
	}
	tb.Title = fmt.Sprintf("Control thresholds re-derived on %s (%s, %d fault-free epochs, seed %d) beside the configured ones", u.Pilot.Data, modelName(t), t.Epochs, t.Seed)
	return &report.Result{Title: "Control-plane calibration (Sec. 8)", Tables: []report.Table{tb}, Data: u}, nil
}
