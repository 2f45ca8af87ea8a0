package experiments

import (
	"fmt"
	"slices"

	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// TimingRun is `nfabric timing run`'s result: the configuration and its
// identity and low-bit runs.
type TimingRun struct {
	Model    timing.Config `json:"model"`
	Identity timing.Result `json:"identity"`
	LowBit   timing.Result `json:"lowbit"`
	Exposed  sim.Time      `json:"exposed_ps"`
	Overhead float64       `json:"overhead_pct"`
	// PhaseExposed is each refresh schedule's exposure when the pair is
	// a mean over schedules (memory.refresh_phases).
	PhaseExposed []sim.Time `json:"phase_exposed_ps,omitempty"`
	// Traced is the run --trace-out recorded and TracedRun says which it
	// is (absent without a trace).
	TracedRun string         `json:"traced_run,omitempty"`
	Traced    *timing.Result `json:"traced,omitempty"`
}

// TimingRunResult lays out one run pair of m: run times, lines, controller
// reads, latency and link utilization of both runs, the exposed cost and,
// under the detailed models, the identity run's DRAM and link counters.
// With a trace (tr non-nil, as RunTracedPair left it) it says which run
// the trace holds and, when that run is no row of the pair (one refresh
// schedule of a mean over schedules: Pair.Traced), adds it as a row of its
// own.
func TimingRunResult(m timing.Config, p timing.Pair, tr *sim.Tracer) *report.Result {
	data := TimingRun{Model: m, Identity: p.Identity, LowBit: p.LowBit, Exposed: p.Exposed, Overhead: p.OverheadPct, PhaseExposed: p.PhaseExposed}
	res := &report.Result{Block: "timing-run", Title: fmt.Sprintf("%s, %d streams x %d outstanding, %d stack(s)",
		timingModelName(m), m.Streams.Count, m.Streams.Outstanding, m.Controller.Stacks)}
	t := report.Table{Name: "runs", Title: "identity and low-bit runs",
		Columns: []string{"run", "time", "lines", "ctrl reads", "mean ns", "p50 ns", "p99 ns", "link util"}}
	type namedRun struct {
		n string
		r timing.Result
	}
	rows := []namedRun{{"identity", p.Identity}, {"low-bit", p.LowBit}}
	if tr != nil {
		data.TracedRun, data.Traced = tr.Run, p.Traced
		if p.Traced != nil {
			rows = append(rows, namedRun{"low-bit, traced", *p.Traced})
		}
		t.Notes = append(t.Notes, "the trace holds "+tr.Run)
	}
	res.Data = data
	for _, r := range rows {
		t.AddRow(r.n, r.r.RunTime.String(), r.r.Lines, r.r.ControllerReads, fmt.Sprintf("%.1f", r.r.Latency.MeanNS),
			fmt.Sprintf("%.0f", r.r.Latency.P50NS), fmt.Sprintf("%.0f", r.r.Latency.P99NS), fmt.Sprintf("%.3f", r.r.LinkUtil))
	}
	t.Notes = append(t.Notes, fmt.Sprintf("exposed %v = %.3f%%", p.Exposed, p.OverheadPct))
	if d := p.Identity.Detail; d != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("identity detail: DRAM %d reads %d writes, %d ACT (row-hit rate %.3f), %d conflict PRE, %d REF, data bus %.3f; flits %d, req link %.3f, resp link %.3f; credit stalls %d",
			d.DRAMReads, d.DRAMWrites, d.Acts, d.RowHitRate, d.Precharges, d.Refreshes, d.DataBusUtil, d.Flits, d.ReqLinkUtil, d.RespLinkUtil, d.CreditStalls))
	}
	if n := len(p.PhaseExposed); n > 0 {
		lo, hi := slices.Min(p.PhaseExposed), slices.Max(p.PhaseExposed)
		t.Notes = append(t.Notes, fmt.Sprintf("both runs are means over %d refresh schedules (memory.refresh_phases; refresh_seed 1..%d, both runs of a pair on the same one): %.3f ns exposed per line, one schedule %.3f to %.3f; --refresh-phases 0 runs the single pair under the periodic schedule",
			n, n, float64(p.Exposed)/1000/float64(max(p.Identity.Lines, 1)), float64(lo)/1000/float64(max(p.Identity.Lines, 1)), float64(hi)/1000/float64(max(p.Identity.Lines, 1))))
	}
	res.Tables = []report.Table{t}
	return res
}

// LoadedLatencyResult lays out the loaded-latency curve of m: controller
// read latency against delivered bandwidth, identity and low-bit.
func LoadedLatencyResult(m timing.Config, pts []timing.LoadPoint) *report.Result {
	t := report.Table{Name: "loaded-latency", Title: fmt.Sprintf("%s: latency from issue to data, every read an LLC miss", timingModelName(m)),
		Columns: []string{"mode", "outstanding/stream", "delivered GiB/s", "mean ns", "p50 ns", "p99 ns"}}
	for _, p := range pts {
		t.AddRow(p.Mode, p.Outstanding, fmt.Sprintf("%.2f", p.DeliveredGiBps), fmt.Sprintf("%.1f", p.Latency.MeanNS),
			fmt.Sprintf("%.0f", p.Latency.P50NS), fmt.Sprintf("%.0f", p.Latency.P99NS))
	}
	if a, ok := timing.DeviceAnchors(m, pts); ok {
		t.Notes = append(t.Notes, anchorNotes(a)...)
	}
	return &report.Result{Block: "loaded-latency", Title: "loaded latency", Data: pts, Tables: []report.Table{t}}
}

// anchorNotes says how the device's idle read and saturated bandwidth
// compare with its preset's published figures.
func anchorNotes(a timing.Anchors) []string {
	var out []string
	if a.Modified {
		out = append(out, fmt.Sprintf("the device differs from the %s preset (flags or a device block changed it): its published figures below are the preset's", a.Preset))
	}
	idle := fmt.Sprintf("idle read (one read on an idle system, the closed form of its stages, equal to the simulated one): %.1f ns", a.IdleNS)
	if a.PublishedIdleNS > 0 {
		idle += fmt.Sprintf("; published %.1f ns, %+.1f%% (%s)", a.PublishedIdleNS, 100*(a.IdleNS/a.PublishedIdleNS-1), a.IdleSource)
	}
	out = append(out, idle)
	sat := fmt.Sprintf("saturated read bandwidth (the most the curve delivered): %.2f GB/s", a.SaturatedGBps)
	switch {
	case a.PublishedHiGBps <= 0:
	case a.PublishedLoGBps == a.PublishedHiGBps:
		sat += fmt.Sprintf("; published %.1f GB/s, %+.1f%% (%s)", a.PublishedHiGBps, 100*(a.SaturatedGBps/a.PublishedHiGBps-1), a.ReadSource)
	default:
		sat += fmt.Sprintf("; published %.1f-%.1f GB/s (%s)", a.PublishedLoGBps, a.PublishedHiGBps, a.ReadSource)
	}
	return append(out, sat)
}

// timingModelName names m's model: "ideal (memory ideal, link gate)" or the
// device preset with its models.
func timingModelName(m timing.Config) string {
	if !m.Detailed() {
		return fmt.Sprintf("memory %s, link %s", m.Memory.Model, m.LinkModel())
	}
	return fmt.Sprintf("device %s (memory %s, link %s)", m.Device.Preset, m.Memory.Model, m.LinkModel())
}
