package experiments

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
)

// timingClaims are the Sec. 5.1 and 5.3 claims on the ideal preset (the
// paper's fixed-latency service model): each Table 4 group stays under the
// exposed-cost budget, and the Fig. 3 panels keep the shape the paper
// describes. The budget is the paper's own 2% gate (Sec. 5.3), the only
// threshold the paper states for these rows; the paper's per-row figures
// appear in the paper column, not in the criterion. Every claim is listed
// whatever r holds: one without its rows or panel says not run
// (timingClaims(s, TimingResult{}) is the block's claim list). Table 4's
// groups are judged again under each silicon device preset
// (siliconPresets), every measured range with its closed form T_agg /
// path latency beside it, and so are the Fig. 3 panels where the tier ran
// the silicon envelopes (TimingResult.SiliconFig3).
func timingClaims(s TimingSetup, r TimingResult) []report.Claim {
	budget := s.Experiments.ExposureBudgetPct
	out := table4Claims(budget, "", r.Table4, "no Table 4 row of this group")
	for _, p := range siliconPresets() {
		var rows []Table4Row
		why := fmt.Sprintf("Table 4 did not run under %s (nfabric reproduce --only timing, or nfabric timing table4 --cxl-device %s)", p, p)
		if t := siliconRows(r.Silicon, p); t != nil {
			rows, why = t.Rows, "no Table 4 row of this group"
		}
		out = append(out, table4Claims(budget, p, rows, why)...)
	}
	out = append(out, fig3Claims(s, r.Envelope, r.FiveCycleUnderBudget, "", "no Fig. 3 envelope")...)
	for _, p := range siliconPresets() {
		why := fmt.Sprintf("the silicon Fig. 3 envelopes run at --tier standard (nfabric reproduce --only timing --tier standard), or by hand: nfabric timing envelope --cxl-device %s", p)
		var env *Envelope
		five := false
		if e := siliconEnvelope(r.SiliconFig3, p); e != nil {
			env, five = &e.Envelope, e.FiveCycleUnderBudget
		}
		out = append(out, fig3Claims(siliconClaimSetup(s, p), env, five, p, why)...)
	}
	return out
}

// fig3Claims judge the Fig. 3 panels on the envelope e run under preset
// ("" for the paper's ideal model), each measured exposure printed with
// its closed form; without e every panel is not run, for the reason why.
func fig3Claims(s TimingSetup, e *Envelope, fiveUnder bool, preset, why string) []report.Claim {
	budget := s.Experiments.ExposureBudgetPct
	under := fmt.Sprintf("every row below the %g%% exposed-cost gate", budget)
	var out []report.Claim
	var env Envelope
	if e != nil {
		env, why = *e, ""
	}
	panel := func(c report.Claim, ran bool, fill func(c *report.Claim)) {
		switch {
		case why != "":
			c = notRun(c, why)
		case !ran:
			c = notRun(c, "no point of this panel")
		default:
			fill(&c)
		}
		if preset != "" {
			c.Name += " (under " + preset + ")"
		}
		out = append(out, c)
	}
	ex := s.Experiments
	five := timing.DepthSeries(s.Model.Controller.Stages)
	panel(report.Claim{Section: "Sec. 5.3, Fig. 3(a)",
		Name:  fmt.Sprintf("the %d-cycle datapath stays below the gate across the bandwidth sweep", s.Model.Controller.Stages),
		Paper: "below 2% at every bandwidth", Criterion: under}, len(env.Bandwidth) > 0, func(c *report.Claim) {
		c.Ours, c.Verdict = seriesRange(env.Bandwidth, five), modelVerdict(fiveUnder)
	})
	if deep := deeperDepths(s); deep != "" {
		dc := report.Claim{Section: "Sec. 5.3, Fig. 3(a)", Name: "deeper datapaths (" + deep + ") exceed the gate at high bandwidth",
			Paper: "10 and 20 cycles exceed 2%", Criterion: fmt.Sprintf("each deeper depth above %g%% at the highest bandwidth swept", budget)}
		got, ours, ok := deeperExceed(s, env)
		panel(dc, got == deep, func(c *report.Claim) { c.Ours, c.Verdict = ours, modelVerdict(ok) })
	}
	// "Dominant" is the paper's word: the datapath would dominate if it
	// were the larger part of the run time, an exposure of 100% or more.
	// Points above the 2% gate are named in Ours, since the paper draws
	// that gate on the panel.
	panel(report.Claim{Section: "Sec. 5.3, Fig. 3(b)",
		Name:      "memory latency shifts the base path but the datapath does not dominate",
		Paper:     "not the dominant cost",
		Criterion: fmt.Sprintf("exposed overhead below %g%% (the datapath never the larger part of the run) at every latency swept", dominantPct)},
		len(env.Latency) > 0, func(c *report.Claim) {
			latOK, over := true, []string{}
			for _, p := range env.Latency {
				latOK = latOK && p.Pair.OverheadPct < dominantPct
				if p.Pair.OverheadPct >= budget {
					over = append(over, fmt.Sprintf("%g ns", p.X))
				}
			}
			c.Ours = pointsRange(env.Latency)
			if len(over) > 0 {
				c.Ours += fmt.Sprintf("; at or above the %g%% gate at %s", budget, strings.Join(over, ", "))
			}
			c.Verdict = modelVerdict(latOK)
		})
	// The conservative case: the largest exposure is at a footprint beyond
	// the LLC (X is footprint / LLC).
	panel(report.Claim{Section: "Sec. 5.3, Fig. 3(c)",
		Name:      "the full-LLC-miss point is the conservative (most exposed) case",
		Paper:     "exposure rises once the footprint exceeds the LLC",
		Criterion: "the largest exposure lies at footprint/LLC > 1"}, len(env.Footprint) > 1, func(c *report.Claim) {
		best := env.Footprint[0]
		for _, p := range env.Footprint {
			if p.Pair.OverheadPct > best.Pair.OverheadPct {
				best = p
			}
		}
		c.Ours = fmt.Sprintf("largest exposure %s%% (T_agg/path %s%%) at footprint/LLC = %g", pct(best.Pair.OverheadPct), pct(best.ClosedFormPct), best.X)
		c.Verdict = modelVerdict(best.X > 1)
	})
	i := slices.IndexFunc(env.Delay, func(d DelayPoint) bool { return d.DelayMS == 10 })
	panel(report.Claim{Section: "Sec. 5.3, Fig. 3(d)",
		Name:      fmt.Sprintf("a 10 ms late mode update costs under 0.04%% of a step (step = %g ms, our assumption)", ex.StepMS),
		Paper:     "< 0.04%",
		Criterion: fmt.Sprintf("step cost < %g%%", PaperDelayBoundPct)}, i >= 0, func(c *report.Claim) {
		d := env.Delay[i]
		// Closed form: every read during the delay pays the datapath
		// unhidden, so the late update costs delay x T_agg / path.
		cf := d.DelayMS * closedFormPct(s.Model) / ex.StepMS
		c.Ours, c.Verdict = fmt.Sprintf("%.4f%% (delay x T_agg/path / step %.4f%%)", d.StepCostPct, cf), modelVerdict(d.StepCostPct < PaperDelayBoundPct)
	})
	return out
}

// table4Claims judge Table 4's groups on rows run under preset ("" for
// the paper's ideal model): every row below the exposure budget, the
// measured range printed with its closed form T_agg / path latency. A
// group without rows is not run, for the reason why.
func table4Claims(budget float64, preset string, rows []Table4Row, why string) []report.Claim {
	var out []report.Claim
	for _, p := range paperTable4 {
		g := groupRows(rows, p.group)
		c := report.Claim{Section: "Sec. 5.1, Table 4", Name: p.result + ": " + p.takeaway, Paper: p.paper,
			Criterion: fmt.Sprintf("every row below the %g%% exposed-cost gate", budget)}
		if preset != "" {
			c.Name += " (under " + preset + ")"
		}
		if len(g) == 0 {
			out = append(out, notRun(c, why))
			continue
		}
		ok := true
		for _, row := range g {
			ok = ok && row.Pair.OverheadPct < budget
		}
		c.Ours, c.Verdict = withClosed(g), modelVerdict(ok)
		out = append(out, c)
	}
	return out
}

// dominantPct is the exposure at which the datapath would take as long as
// the rest of the run: the threshold of "dominant" in Fig. 3(b)'s claim.
const dominantPct = 100.0

// seriesRange prints the overhead range of one series of points.
func seriesRange(ps []EnvelopePoint, series string) string {
	var sel []EnvelopePoint
	for _, p := range ps {
		if p.Series == series {
			sel = append(sel, p)
		}
	}
	return pointsRange(sel)
}

// pointsRange prints "lo–hi%" of the points' overheads ("hidden" ends for
// fully hidden points), as Table 4's ranges print, with the closed forms
// T_agg / path latency beside them.
func pointsRange(ps []EnvelopePoint) string {
	rows := make([]Table4Row, len(ps))
	for i, p := range ps {
		rows[i] = Table4Row{Pair: p.Pair, ClosedFormPct: p.ClosedFormPct}
	}
	if len(rows) == 0 {
		return "-"
	}
	return withClosed(rows)
}

// deeperDepths names the depths beyond the model's that the setup sweeps
// ("10 cycles, 20 cycles"), "" when there are none.
func deeperDepths(s TimingSetup) string {
	var deep []string
	for _, k := range s.Experiments.Depths {
		if k > s.Model.Controller.Stages {
			deep = append(deep, fmt.Sprintf("%d cycles", k))
		}
	}
	return strings.Join(deep, ", ")
}

// deeperExceed checks the depths beyond the model's at the highest
// bandwidth swept: deep names them, ours their overheads there.
func deeperExceed(s TimingSetup, env Envelope) (deep, ours string, ok bool) {
	ex := s.Experiments
	if len(ex.BandwidthsGiBps) == 0 {
		return "", "", false
	}
	top := ex.BandwidthsGiBps[0]
	for _, bw := range ex.BandwidthsGiBps {
		top = max(top, bw)
	}
	ok = true
	for _, k := range ex.Depths {
		if k <= s.Model.Controller.Stages {
			continue
		}
		for _, p := range env.Bandwidth {
			if p.Series == timing.DepthSeries(k) && p.X == top {
				if deep != "" {
					deep, ours = deep+", ", ours+", "
				}
				deep += fmt.Sprintf("%d cycles", k)
				ours += fmt.Sprintf("%d cycles %s%% (T_agg/path %s%%) at %g GiB/s", k, exposure(p.Pair), pct(p.ClosedFormPct), top)
				ok = ok && p.Pair.OverheadPct > ex.ExposureBudgetPct
			}
		}
	}
	return deep, ours, ok
}
