package experiments

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
)

func init() {
	Register(Block{
		Name:  "timing",
		Title: "Timing exposure (Sec. 5, Table 4, Fig. 3)",
		Order: 20,
		Run:   runTimingBlock,
	})
}

// paperTable4 is the paper's Table 4 (Sec. 5.1), keyed by our row groups.
// These strings feed only the "paper" column.
var paperTable4 = []struct{ group, result, paper, takeaway string }{
	{timing.GroupOneStream, "1-request stream G-Binary overhead", "1.11%", "low exposed cost"},
	{timing.GroupStreams, "1–8 request stream overhead", "0.55–1.88%", "bounded scaling"},
	{timing.GroupFullMiss, "full LLC-miss overhead", "1.67%", "worst measured exposure"},
	{timing.GroupScaleHealthy, "scale-out, healthy", "1.07–1.67%", "bounded across 1–8 controller stacks"},
	{timing.GroupScaleCongest, "scale-out, congested", "hidden–1.11%", "overlap can disappear as stacks split"},
}

// paperOneStreamPct is the paper's single-stream overhead (Table 4), used
// to infer the base path length it implies.
const paperOneStreamPct = 1.11

// runTimingBlock runs Table 4 and the Fig. 3 envelope on the default
// model; quick mode uses shorter envelope sweeps with the same end points.
func runTimingBlock(ctx context.Context, cfg Config) (*report.Result, error) {
	s := timing.DefaultSetup()
	if !cfg.Full {
		s.Experiments = timing.QuickExperiments()
	}
	cfg.logf("timing: Table 4 (%d runs)", 2*(2+len(s.Experiments.StreamCounts)+2*len(s.Experiments.StackCounts)))
	t4, err := TimingTable4(ctx, s)
	if err != nil {
		return nil, err
	}
	cfg.logf("timing: Fig. 3 envelope")
	env, err := TimingEnvelope(ctx, s)
	if err != nil {
		return nil, err
	}
	res := &report.Result{
		Title:   "Timing exposure (Sec. 5, Table 4, Fig. 3)",
		Summary: append(t4.Summary, env.Summary...),
		Tables:  append(t4.Tables, env.Tables...),
		Figures: env.Figures,
		Data:    map[string]any{"setup": s, "table4": t4.Data, "envelope": env.Data},
	}
	return res, nil
}

func pct(v float64) string { return fmt.Sprintf("%.2f", v) }

// exposure prints a row's overhead, or "hidden" when at most one pipeline
// fill is exposed over the whole run.
func exposure(p timing.Pair) string {
	if p.Hidden() {
		return "hidden"
	}
	return pct(p.OverheadPct)
}

// rangeOf prints the measured range of a group: "a" or "a–b", with
// "hidden" for fully hidden rows.
func rangeOf(rows []timing.Row) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	var loRow, hiRow timing.Pair
	for _, r := range rows {
		if r.Pair.OverheadPct < lo {
			lo, loRow = r.Pair.OverheadPct, r.Pair
		}
		if r.Pair.OverheadPct > hi {
			hi, hiRow = r.Pair.OverheadPct, r.Pair
		}
	}
	a, b := exposure(loRow), exposure(hiRow)
	if a == b {
		return a
	}
	return a + "–" + b
}

// TimingTable4 runs the Table 4 configurations of s and returns the table
// with our overhead beside the paper's, a per-run detail table and the raw
// rows as Data.
func TimingTable4(ctx context.Context, s timing.Setup) (*report.Result, error) {
	rows, err := timing.RunTable4(ctx, s)
	if err != nil {
		return nil, err
	}
	m := s.Model
	sum := report.Table{
		Name:    "table4",
		Title:   "Table 4: exposed cost of the G-Binary datapath (low-bit vs identity run time)",
		Columns: []string{"result", "configuration", "measured %", "paper %", "paper takeaway"},
	}
	for _, p := range paperTable4 {
		var g []timing.Row
		for _, r := range rows {
			if r.Group == p.group {
				g = append(g, r)
			}
		}
		sum.AddRow(p.result, describeGroup(p.group, g, m, s.Experiments), rangeOf(g), p.paper, p.takeaway)
	}
	gate := m.LinkInterval() / 1000
	sum.Notes = []string{
		fmt.Sprintf("Model: W=%d streams x %d outstanding, %g MiB per stream, %d passes (%s); LLC %g MiB %d-way, %g ns lookup; memory %g ns; link %g GiB/s per stack (gate %.4f ns/line); datapath %d stages at %g GHz = %v, one line per %d cycle(s).",
			m.Streams.Count, m.Streams.Outstanding, m.Streams.FootprintMiB, m.Streams.Passes, m.Streams.Pattern,
			m.LLC.SizeMiB, m.LLC.Ways, m.LLC.HitLatencyNS, m.Memory.LatencyNS, m.Link.BandwidthGiBps, gate,
			m.Controller.Stages, m.Controller.ClockGHz, m.PipelineLatency(), m.Controller.InitiationCycles),
		"Overhead = (low-bit run time - identity run time) / identity run time, from one deterministic run pair that differs only by the pipeline. \"hidden\" = at most one pipeline latency exposed over the whole run (the first line's fill).",
		fmt.Sprintf("Congested = link.share %g: background traffic holds the rest of each stack's link, so one stack's gate is oversubscribed by the default load. Each stack has its own link, so splitting into N stacks multiplies service capacity and removes the queueing that hid the datapath.", s.Experiments.CongestedShare),
		fmt.Sprintf("Healthy rows sit near the closed form T_agg / (LLC lookup + memory + gate) = %.3f%%: with %d outstanding lines per stream the load never fills a healthy gate, so nothing overlaps the datapath (T_overlap = 0). The paper's spread (0.55-1.88%%) comes from gem5 effects we do not model (DRAM timing, crossbar and coherence latencies, cache MSHR behaviour); its %g%% single-stream figure implies a %.0f ns base path for the same %v datapath, ours is %.1f ns.",
			closedForm(m, m.Controller.Stages), m.Streams.Outstanding, paperOneStreamPct,
			m.PipelineLatency().NS()/(paperOneStreamPct/100), m.PipelineLatency(), m.LLC.HitLatencyNS+m.Memory.LatencyNS+gate),
		fmt.Sprintf("Rows whose total footprint (W x %g MiB) fits the %g MiB LLC hit on every pass after the first, which dilutes the exposure; larger ones, like the full-LLC-miss anchor, miss on every access: the most exposed case, as in the paper.", m.Streams.FootprintMiB, m.LLC.SizeMiB),
	}
	det := report.Table{
		Notes: []string{"queue wait = mean time a controller read spends queued in front of the pipeline and the gate. Where the low-bit wait is shorter than the identity wait, the difference (up to T_agg) is T_overlap: datapath time absorbed by queueing that was there anyway."},
		Name:  "table4-runs",
		Title: "Table 4 runs: every identity/low-bit pair",
		Columns: []string{"row", "W", "N stacks", "link share", "MiB/stream", "identity µs", "low-bit µs",
			"exposed ns", "overhead %", "LLC hit %", "gate util %", "queue wait ns/read (id/low-bit)"},
	}
	for _, r := range rows {
		id := r.Pair.Identity
		det.AddRow(r.Group, r.Streams, r.Stacks, r.Share, r.FootprintMiB,
			fmt.Sprintf("%.3f", id.RunTime.NS()/1000), fmt.Sprintf("%.3f", r.Pair.LowBit.RunTime.NS()/1000),
			fmt.Sprintf("%.1f", r.Pair.Exposed.NS()), exposure(r.Pair),
			pct(100*float64(id.Hits)/float64(max(1, id.Hits+id.Misses))), pct(100*id.LinkUtil),
			fmt.Sprintf("%.2f/%.2f", meanWait(id), meanWait(r.Pair.LowBit)))
	}
	var full timing.Row
	for _, r := range rows {
		if r.Group == timing.GroupFullMiss {
			full = r
		}
	}
	res := &report.Result{
		Title: "Timing exposure: Table 4",
		Summary: []string{fmt.Sprintf("Full-LLC-miss anchor: G-Binary adds %s%% (paper 1.67%%), exposed %.1f ns over %d controller reads.",
			exposure(full.Pair), full.Pair.Exposed.NS(), full.Pair.LowBit.ControllerReads)},
		Tables: []report.Table{sum, det},
		Data:   rows,
	}
	return res, nil
}

func describeGroup(group string, g []timing.Row, m timing.Config, ex timing.Experiments) string {
	join := func(f func(timing.Row) int) string {
		var s []string
		for _, r := range g {
			s = append(s, fmt.Sprint(f(r)))
		}
		return strings.Join(s, ",")
	}
	switch group {
	case timing.GroupOneStream:
		return fmt.Sprintf("W=1, %g MiB", m.Streams.FootprintMiB)
	case timing.GroupStreams:
		return "W=" + join(func(r timing.Row) int { return r.Streams })
	case timing.GroupFullMiss:
		return fmt.Sprintf("W=%d x %g MiB vs %g MiB LLC", m.Streams.Count, m.Streams.FootprintMiB, m.LLC.SizeMiB)
	case timing.GroupScaleHealthy:
		return "N=" + join(func(r timing.Row) int { return r.Stacks })
	default:
		return fmt.Sprintf("N=%s, share %g", join(func(r timing.Row) int { return r.Stacks }), ex.CongestedShare)
	}
}

// TimingEnvelope runs the Fig. 3 sweeps of s and returns one table and one
// SVG figure per panel.
func TimingEnvelope(ctx context.Context, s timing.Setup) (*report.Result, error) {
	env, err := timing.RunEnvelope(ctx, s)
	if err != nil {
		return nil, err
	}
	ex := s.Experiments
	res := &report.Result{Title: "Timing exposure: Fig. 3 envelope", Data: env}
	gate := []report.HLine{{Y: ex.ExposureBudgetPct, Label: fmt.Sprintf("%g%% exposed-cost gate", ex.ExposureBudgetPct)}}

	// (a) bandwidth x depth.
	ta := report.Table{Name: "fig3a-bandwidth", Title: "Fig. 3(a): exposed overhead % by CXL bandwidth and datapath depth",
		Columns: []string{"bandwidth GiB/s"}}
	for _, k := range ex.Depths {
		ta.Columns = append(ta.Columns, fmt.Sprintf("%d cycles %%", k))
	}
	ta.Columns = append(ta.Columns, "gate util % (identity)")
	series := map[string]*report.Series{}
	var order []string
	for _, p := range env.Bandwidth {
		sr, ok := series[p.Series]
		if !ok {
			sr = &report.Series{Name: p.Series}
			series[p.Series] = sr
			order = append(order, p.Series)
		}
		sr.X = append(sr.X, p.X)
		sr.Y = append(sr.Y, p.Pair.OverheadPct)
	}
	nb := len(ex.BandwidthsGiBps)
	for i, bw := range ex.BandwidthsGiBps {
		row := []any{bw}
		for j := range ex.Depths {
			row = append(row, exposure(env.Bandwidth[j*nb+i].Pair))
		}
		row = append(row, pct(100*env.Bandwidth[i].Pair.Identity.LinkUtil))
		ta.AddRow(row...)
	}
	ta.Notes = []string{
		fmt.Sprintf("Paper: the 5-cycle datapath stays below the 2%% gate across the sweep; 10- and 20-cycle datapaths exceed it at high bandwidth. Ours: same shape. Below about %.0f GiB/s per stack the %d lines in flight saturate the gate and every depth is hidden; above it the run is latency-bound and the overhead approaches depth x cycle / (lookup + memory + gate), independent of bandwidth (%s at 128 GiB/s).",
			satBandwidth(s.Model), s.Model.Streams.Count*s.Model.Streams.Outstanding, depthForms(s.Model, ex.Depths)),
	}
	var sa []report.Series
	for _, n := range order {
		sa = append(sa, *series[n])
	}
	fa, err := report.LinePlot{Title: "Fig. 3(a) CXL bandwidth x datapath depth", XLabel: "CXL bandwidth per stack (GiB/s)",
		YLabel: "exposed overhead (%)", Series: sa, LogX: true, HLines: gate}.Figure("fig3a-bandwidth")
	if err != nil {
		return nil, err
	}

	// (b) latency.
	tb := report.Table{Name: "fig3b-latency", Title: "Fig. 3(b): exposed overhead % by fixed memory-access latency",
		Columns: []string{"latency ns", "overhead %", "identity µs", "gate util % (identity)", "pipeline wait ns/read"}}
	var sb report.Series
	sb.Name = fmt.Sprintf("%d cycles", s.Model.Controller.Stages)
	for _, p := range env.Latency {
		lb := p.Pair.LowBit
		tb.AddRow(p.X, exposure(p.Pair), fmt.Sprintf("%.3f", p.Pair.Identity.RunTime.NS()/1000), pct(100*p.Pair.Identity.LinkUtil),
			fmt.Sprintf("%.3f", lb.PipeWait.NS()/float64(max(1, lb.LowBitReads))))
		sb.X = append(sb.X, p.X)
		sb.Y = append(sb.Y, p.Pair.OverheadPct)
	}
	tb.Notes = []string{
		fmt.Sprintf("Paper: latency shifts the base path but does not make the 5-cycle datapath dominant. Ours: the overhead falls as %v / (latency + %.2f ns) while the load is latency-bound. At short latencies the same %d lines in flight saturate the %g GiB/s gate, and if the datapath's own rate (one 64 B line per %d cycle(s) = %.1f GB/s) is below the link's (%.1f GB/s) it becomes the bottleneck of a single stack: the 'pipeline wait' column shows lines queueing in front of it. That is a finding of the model, not of the paper.",
			s.Model.PipelineLatency(), s.Model.LLC.HitLatencyNS+s.Model.LinkInterval()/1000,
			s.Model.Streams.Count*s.Model.Streams.Outstanding, s.Model.Link.BandwidthGiBps*s.Model.Link.Share, s.Model.Controller.InitiationCycles,
			timing.LineBytes/(float64(max(1, s.Model.Controller.InitiationCycles))*float64(s.Model.Cycle())*1e-3), float64(s.Model.LinkBytesPerSec())/1e9),
	}
	fb, err := report.LinePlot{Title: "Fig. 3(b) fixed CXL access latency", XLabel: "fixed memory-access latency (ns)",
		YLabel: "exposed overhead (%)", Series: []report.Series{sb}, LogX: true, HLines: gate}.Figure("fig3b-latency")
	if err != nil {
		return nil, err
	}

	// (c) footprint.
	tc := report.Table{Name: "fig3c-footprint", Title: "Fig. 3(c): exposed overhead % by active footprint / LLC capacity",
		Columns: []string{"footprint / LLC", "MiB total", "LLC hit %", "overhead %"}}
	var sc report.Series
	sc.Name = "overhead"
	for _, p := range env.Footprint {
		tot := float64(p.Pair.Identity.Lines) * timing.LineBytes / (1 << 20) / float64(s.Model.Streams.Passes)
		tc.AddRow(p.X, fmt.Sprintf("%.2f", tot), pct(100*p.HitRate), exposure(p.Pair))
		sc.X = append(sc.X, p.X)
		sc.Y = append(sc.Y, p.Pair.OverheadPct)
	}
	tc.Notes = []string{
		fmt.Sprintf("Paper: once the active footprint exceeds the LLC more accesses reach the controller, so the full-LLC-miss point is the conservative case. Ours: below the LLC size every pass after the first hits and hits never reach the controller; above it the sequential LRU sweeps thrash (no hits) and the overhead rises to its latency-bound value. The step is small because a hit costs %g ns against a miss's %.1f ns, so misses dominate run time either way.",
			s.Model.LLC.HitLatencyNS, s.Model.LLC.HitLatencyNS+s.Model.Memory.LatencyNS+s.Model.LinkInterval()/1000),
	}
	fc, err := report.LinePlot{Title: "Fig. 3(c) active footprint / LLC capacity", XLabel: "total active footprint / LLC size",
		YLabel: "exposed overhead (%)", Series: []report.Series{sc}, LogX: true, HLines: gate}.Figure("fig3c-footprint")
	if err != nil {
		return nil, err
	}

	// (d) delayed mode update.
	td := report.Table{Name: "fig3d-delay", Title: fmt.Sprintf("Fig. 3(d): step cost of a late mode-latch update (step = %g ms)", ex.StepMS),
		Columns: []string{"delay ms", "passes simulated", "exposed µs", "exposed / delay %", "step cost %", "paper", "break-even step ms"}}
	var sd report.Series
	sd.Name = fmt.Sprintf("step cost, %g ms step", ex.StepMS)
	for _, d := range env.Delay {
		paper := ""
		if d.DelayMS == 10 {
			paper = "< 0.04%"
		}
		td.AddRow(d.DelayMS, d.Passes, fmt.Sprintf("%.3f", d.Exposed.NS()/1000), pct(d.ExposedPerDelayPct),
			fmt.Sprintf("%.4f", d.StepCostPct), paper, fmt.Sprintf("%.1f", d.BreakEvenStepMS))
		sd.X = append(sd.X, d.DelayMS)
		sd.Y = append(sd.Y, d.StepCostPct)
	}
	td.Notes = []string{
		fmt.Sprintf("The latch should leave low-bit mode at t = 0 but the update lands 'delay' later; reads issued meanwhile still take the pipeline. The cost grows linearly with the delay at about the latency-bound exposure rate (closed form %.3f%% of the delay).", closedForm(s.Model, s.Model.Controller.Stages)),
		fmt.Sprintf("The paper gives no step time for this panel; we assume %g ms (experiments.step_ms). 'break-even step' is the step time at which the paper's 0.04%% bound would hold: the paper's figure is reproduced for steps at least that long.", ex.StepMS),
	}
	fd, err := report.LinePlot{Title: "Fig. 3(d) late mode-telemetry update", XLabel: "update delay (ms)",
		YLabel: "step cost (%)", Series: []report.Series{sd},
		HLines: []report.HLine{{Y: timing.PaperDelayBoundPct, Label: "paper bound at 10 ms (0.04%)"}}}.Figure("fig3d-delay")
	if err != nil {
		return nil, err
	}
	res.Tables = []report.Table{ta, tb, tc, td}
	res.Figures = []report.Figure{fa, fb, fc, fd}
	var below5 = true
	for _, p := range env.Bandwidth {
		if p.Series == fmt.Sprintf("%d cycles", 5) && p.Pair.OverheadPct >= ex.ExposureBudgetPct {
			below5 = false
		}
	}
	res.Summary = []string{fmt.Sprintf("Fig. 3(a): the 5-cycle datapath stays below the %g%% gate at every bandwidth swept: %v.", ex.ExposureBudgetPct, below5)}
	return res, nil
}

// closedForm is the latency-bound exposure with the given depth:
// stages x cycle / (LLC lookup + memory latency + one gate interval), in
// percent.
func closedForm(m timing.Config, stages int) float64 {
	return 100 * float64(stages) * float64(m.Cycle()) / (1000*(m.LLC.HitLatencyNS+m.Memory.LatencyNS) + m.LinkInterval())
}

// depthForms prints closedForm for each depth at the model's bandwidth.
func depthForms(m timing.Config, depths []int) string {
	var s []string
	for _, k := range depths {
		s = append(s, fmt.Sprintf("%d cycles %.2f%%", k, closedForm(m, k)))
	}
	return strings.Join(s, ", ")
}

// satBandwidth is the per-stack link bandwidth (GiB/s) below which the
// W x Outstanding lines in flight keep one gate busy: the gate interval g
// at which W*L*g = lookup + memory + g.
func satBandwidth(m timing.Config) float64 {
	inflight := float64(m.Streams.Count * m.Streams.Outstanding)
	if inflight <= 1 {
		return 0
	}
	g := (m.LLC.HitLatencyNS + m.Memory.LatencyNS) * 1e-9 / (inflight - 1)
	return timing.LineBytes / g / (1 << 30)
}

// meanWait is the mean queueing time per controller read in front of the
// pipeline and the gate, in ns.
func meanWait(r timing.Result) float64 {
	return (r.PipeWait + r.LinkWait).NS() / float64(max(1, r.ControllerReads))
}
