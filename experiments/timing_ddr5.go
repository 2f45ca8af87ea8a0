package experiments

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// TimingDDR5 is the timing block's ddr5-preset part: Table 4 and the
// Fig. 3 envelope under the DDR5 + two-way CXL model, the anchor's
// mechanism ablations, and the loaded-latency curve of both presets.
type TimingDDR5 struct {
	Table4    []Table4Row        `json:"table4,omitempty"`
	Envelope  *Envelope          `json:"envelope,omitempty"`
	Ablations []timing.Ablation  `json:"ablations,omitempty"`
	Loaded    []PresetLoadPoints `json:"loaded_latency,omitempty"`
	// Contiguous holds the healthy scale-out rows under streams.layout
	// contiguous, the ablation of the ddr5 default (Table4 holds them on
	// scattered pages).
	Contiguous []Table4Row `json:"contiguous,omitempty"`
	// Periodic holds Table 4's rows as single pairs under the periodic
	// refresh schedule (memory.refresh_phases 0), the ablation of
	// the default (Table4's pairs are means over refresh schedules).
	Periodic []Table4Row `json:"periodic,omitempty"`
}

// PresetLoadPoints is one preset's loaded-latency curve.
type PresetLoadPoints struct {
	Preset string             `json:"preset"`
	Points []timing.LoadPoint `json:"points"`
}

func (r *TimingDDR5) merge(o TimingDDR5) {
	if o.Table4 != nil {
		r.Table4 = o.Table4
	}
	if o.Envelope != nil {
		r.Envelope = o.Envelope
	}
	if o.Ablations != nil {
		r.Ablations = o.Ablations
	}
	if o.Contiguous != nil {
		r.Contiguous = o.Contiguous
	}
	if o.Periodic != nil {
		r.Periodic = o.Periodic
	}
	r.Loaded = append(r.Loaded, o.Loaded...)
}

// projectionPreset is the device preset of the ddr5 part: the PCIe 6.0
// projection the former ddr5 preset became.
const projectionPreset = "projection-pcie6-x16"

// ddr5Setup is s with the ddr5 model preset (the same experiments).
func ddr5Setup(s TimingSetup) TimingSetup {
	m, _ := timing.PresetConfig(projectionPreset)
	s.Model = m
	return s
}

// timingDDR5Units are the ddr5-preset units of the timing block; the
// ddr5 Fig. 3 envelope runs in full mode only (its late-update panel
// simulates 10 ms of DRAM traffic).
func timingDDR5Units(cfg run.Config, s TimingSetup) []run.Unit[TimingResult] {
	d := ddr5Setup(s)
	one := func(f func(context.Context) (TimingDDR5, error)) func(context.Context, run.Config) (TimingResult, error) {
		return func(ctx context.Context, _ run.Config) (TimingResult, error) {
			r, err := f(ctx)
			return TimingResult{DDR5: &r}, err
		}
	}
	units := []run.Unit[TimingResult]{
		{Key: "ddr5/table4", Run: one(func(ctx context.Context) (TimingDDR5, error) {
			rows, err := RunTable4(ctx, d)
			return TimingDDR5{Table4: rows}, err
		})},
		{Key: "ddr5/layout", Run: one(func(ctx context.Context) (TimingDDR5, error) {
			rows, err := RunLayouts(ctx, d, []string{timing.LayoutContiguous})
			return TimingDDR5{Contiguous: rows}, err
		})},
		{Key: "ddr5/periodic", Run: one(func(ctx context.Context) (TimingDDR5, error) {
			p := d
			p.Model.Memory.RefreshPhases = 0
			rows, err := RunTable4(ctx, p)
			return TimingDDR5{Periodic: rows}, err
		})},
		{Key: "ddr5/ablations", Run: one(func(ctx context.Context) (TimingDDR5, error) {
			ab, err := timing.RunAblations(ctx, d.Model)
			return TimingDDR5{Ablations: ab}, err
		})},
	}
	if cfg.Full() {
		units = append(units, run.Unit[TimingResult]{Key: "ddr5/fig3", Run: one(func(ctx context.Context) (TimingDDR5, error) {
			env, err := RunEnvelope(ctx, d)
			return TimingDDR5{Envelope: &env}, err
		})})
	}
	for _, p := range timing.Presets() {
		p := p
		units = append(units, run.Unit[TimingResult]{Key: "loaded-latency/" + p, Run: one(func(ctx context.Context) (TimingDDR5, error) {
			ls := s
			ls.Model, _ = timing.PresetConfig(p)
			if err := ls.Validate(); err != nil {
				return TimingDDR5{}, err
			}
			pts, err := timing.RunLoadedLatency(ctx, ls.Model, ls.Experiments.LoadOutstanding)
			return TimingDDR5{Loaded: []PresetLoadPoints{{Preset: p, Points: pts}}}, err
		})})
	}
	return units
}

// detailedNote replaces the ideal preset's closed-form notes, which do
// not hold under the detailed models.
func detailedNote(m timing.Config) string {
	return fmt.Sprintf("Model: memory %s, link %s (%s); T_agg/path is the datapath's latency over this device's idle read, what a read exposes with nothing to overlap it; the ideal preset's other closed forms (saturation bandwidth, base path) do not hold here. Under the detailed models the bandwidth axis sets the CXL link's raw rate and the latency axis the round-trip port latency; exposure differences come from refresh, row conflicts, flit packing, the datapath's initiation rate and queue back-pressure ('nfabric reproduce --only timing' measures each in its ablation table).",
		m.Memory.Model, m.LinkModel(), m.Device.Link.Preset)
}

func detailedNotes(m timing.Config, res *report.Result) {
	for i := range res.Tables {
		res.Tables[i].Notes = []string{detailedNote(m)}
	}
}

// ddr5Layout lays out the ddr5 part beside the ideal rows and the paper.
func ddr5Layout(s TimingSetup, r TimingDDR5) (*report.Result, error) {
	res := &report.Result{Title: "Timing exposure under the projection device (projection-pcie6-x16)"}
	res.Tables = append(res.Tables, detailedRunsTable(projectionPreset, r.Table4), layoutTable(r.Table4, r.Contiguous), phasesTable(r.Table4, r.Periodic), ablationTable(r.Ablations))
	if r.Envelope != nil {
		env, err := envelopeLayout(ddr5Setup(s), TimingClosedForms(ddr5Setup(s)), *r.Envelope, false)
		if err != nil {
			return nil, err
		}
		for i := range env.Tables {
			t := &env.Tables[i]
			t.Name += "-ddr5"
			t.Title = "projection device: " + t.Title
			t.Notes = []string{detailedNote(ddr5Setup(s).Model)}
		}
		for i := range env.Figures {
			env.Figures[i].Name += "-ddr5"
			env.Figures[i].Title = "projection device: " + env.Figures[i].Title
		}
		res.Tables = append(res.Tables, env.Tables...)
		res.Figures = append(res.Figures, env.Figures...)
	}
	lt, lf, err := loadedLayout(r.Loaded)
	if err != nil {
		return nil, err
	}
	res.Tables = append(res.Tables, lt)
	res.Figures = append(res.Figures, lf)
	for _, row := range r.Table4 {
		if row.Group == GroupFullMiss {
			res.Summary = append(res.Summary, fmt.Sprintf("projection device: the full-LLC-miss anchor exposes %s%% (ideal preset and paper in the side-by-side table; paper 1.67%%).", exposure(row.Pair)))
		}
	}
	if len(r.Contiguous) > 0 {
		res.Summary = append(res.Summary, fmt.Sprintf("projection device, healthy scale-out (Table 4, scattered 4 KiB pages, the device presets' default): %s%%; the contiguous-layout ablation gives %s%%, the gap being a bank lock of its aligned sweeps (see ddr5-layout).",
			rangeOf(groupRows(r.Table4, GroupScaleHealthy)), rangeOf(r.Contiguous)))
	}
	return res, nil
}

// groupRows returns the rows of group g.
func groupRows(rows []Table4Row, g string) []Table4Row {
	var out []Table4Row
	for _, r := range rows {
		if r.Group == g {
			out = append(out, r)
		}
	}
	return out
}

// detailedRunsTable is Table 4's runs under the named device preset, with
// the DRAM and CXL counters (the projection's is table4-runs-ddr5).
func detailedRunsTable(preset string, rows []Table4Row) report.Table {
	name := "table4-runs-" + preset
	if preset == projectionPreset {
		name = "table4-runs-ddr5"
	}
	t := report.Table{Name: name, Title: preset + ": Table 4 runs with the DRAM and CXL counters (identity run)",
		Columns: []string{"row", "W", "N stacks", "link share", "identity µs", "low-bit µs", "overhead %", "T_agg/path %", "mean / p99 read ns (id)", "row-hit rate (id / low-bit)", "refreshes", "resp lines/flit", "resp link util %", "credit stalls", "pipeline wait ns/low-bit read"}}
	for _, r := range rows {
		id, lb := r.Pair.Identity, r.Pair.LowBit
		var hit, hitLow float64
		var refs, stalls int64
		if d := id.Detail; d != nil {
			hit, refs, stalls = d.RowHitRate, d.Refreshes, d.CreditStalls
		}
		if d := lb.Detail; d != nil {
			hitLow = d.RowHitRate
		}
		var util float64
		if id.Detail != nil {
			util = id.Detail.RespLinkUtil
		}
		t.AddRow(r.Group, r.Streams, r.Stacks, r.Share, fmt.Sprintf("%.3f", id.RunTime.NS()/1000), fmt.Sprintf("%.3f", lb.RunTime.NS()/1000),
			exposure(r.Pair), pct(r.ClosedFormPct), fmt.Sprintf("%.1f / %.0f", id.Latency.MeanNS, id.Latency.P99NS), fmt.Sprintf("%.3f / %.3f", hit, hitLow), refs,
			fmt.Sprintf("%.2f", id.RespLinesPerFlit()), pct(100*util), stalls, fmt.Sprintf("%.3f", lb.PipeWaitPerLowBitReadNS()))
	}
	return t
}

// layoutTable puts Table 4's healthy scale-out rows (the ddr5 default,
// scattered 4 KiB pages) beside the same rows with the buffers contiguous,
// the layout ablation.
func layoutTable(table4, contiguous []Table4Row) report.Table {
	t := report.Table{Name: "ddr5-layout", Title: "projection device: healthy scale-out rows (N = 1 is the full-LLC-miss anchor) with the streams' buffers on scattered 4 KiB pages (Table 4, the device presets' default) and contiguous (the ablation; streams.layout)",
		Columns: []string{"N stacks", "scattered overhead %", "row-hit rate (id / low-bit)", "contiguous overhead %", "row-hit rate (id / low-bit)"}}
	hits := func(p timing.Pair) string {
		if p.Identity.Detail == nil || p.LowBit.Detail == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f / %.3f", p.Identity.Detail.RowHitRate, p.LowBit.Detail.RowHitRate)
	}
	for _, ct := range contiguous {
		for _, sc := range table4 {
			if sc.Group == GroupScaleHealthy && sc.Stacks == ct.Stacks {
				t.AddRow(ct.Stacks, exposure(sc.Pair), hits(sc.Pair), exposure(ct.Pair), hits(ct.Pair))
			}
		}
	}
	t.Notes = []string{"Scattered (the device presets' default): every 4 KiB page of the streams' 16 MiB lands on a fixed-seed random frame, as an OS with 4 KiB pages places a buffer; both runs see the same row-hit rate and the exposure is the datapath's. Contiguous (ablation): stream s sweeps [s x 2 MiB, (s+1) x 2 MiB), regions aligned as on 2 MiB huge pages, all eight equal in length and started together. Two such sweeps that drift to a colliding offset share a bank in every sub-channel, slow down together and keep the offset; whether the identity or the low-bit run (or neither) falls into that lock depends on the start (the refresh phase), not on the datapath, so a row whose low-bit row-hit rate sits far below the identity run's measures the lock. Row hits fall with N because the 64-byte stack interleave leaves each stack 64/N lines of a page, spread over 8 sub-channels."}
	return t
}

// phasesTable puts Table 4's ddr5 rows (means over refresh schedules,
// the default) beside the single pairs under the periodic schedule.
func phasesTable(table4, periodic []Table4Row) report.Table {
	t := report.Table{Name: "ddr5-refresh-phases", Title: "projection device: Table 4 rows as the mean over refresh schedules (the default, memory.refresh_phases) and as one pair under the strictly periodic schedule (refresh_phases 0, the ablation)",
		Columns: []string{"row", "W", "N stacks", "link share", "schedules", "phased overhead %", "exposed ns/line (phased)", "one schedule ns/line (min / max)", "periodic overhead %", "exposed ns/line (periodic)"}}
	perLine := func(e sim.Time, p timing.Pair) string {
		return fmt.Sprintf("%.3f", e.NS()/float64(max(p.Identity.Lines, 1)))
	}
	for i, r := range table4 {
		if i >= len(periodic) {
			break
		}
		pe, spread := periodic[i].Pair, "-"
		if xs := r.Pair.PhaseExposed; len(xs) > 0 {
			spread = perLine(slices.Min(xs), r.Pair) + " / " + perLine(slices.Max(xs), r.Pair)
		}
		t.AddRow(r.Group, r.Streams, r.Stacks, r.Share, len(r.Pair.PhaseExposed), exposure(r.Pair), perLine(r.Pair.Exposed, r.Pair), spread, exposure(pe), perLine(pe.Exposed, pe))
	}
	t.Notes = []string{"A strictly periodic request chain (one stream, few reads outstanding) phase-locks onto a strictly periodic refresh, and the identity and low-bit runs, whose periods differ by the 2.5 ns datapath, lock at different phases: one periodic pair measures where refresh fell. Each dithered schedule (device.media.refresh_seed k) draws every REF's time within its own tREFI slot, the same refresh rate with no strict period; the mean over the schedules is the exposure averaged over refresh phase. For one stream with one read outstanding that mean is the datapath's 2.5 ns per read (go test ./timing -run TestPairExposureIsDatapath)."}
	return t
}

func ablationTable(ab []timing.Ablation) report.Table {
	t := report.Table{Name: "ddr5-ablations", Title: "projection device, full-LLC-miss anchor: exposed cost with one mechanism removed",
		Columns: []string{"mechanism removed", "change", "identity µs", "overhead %", "mean read ns (id / low-bit)", "p99 read ns (id)", "resp lines/flit", "pipeline wait ns/low-bit read"}}
	var base, noRef float64
	for _, a := range ab {
		id, lb := a.Pair.Identity, a.Pair.LowBit
		t.AddRow(a.Mechanism, a.Change, fmt.Sprintf("%.3f", id.RunTime.NS()/1000), pct(a.Pair.OverheadPct),
			fmt.Sprintf("%.1f / %.1f", id.Latency.MeanNS, lb.Latency.MeanNS), fmt.Sprintf("%.0f", id.Latency.P99NS),
			fmt.Sprintf("%.2f", id.RespLinesPerFlit()), fmt.Sprintf("%.3f", lb.PipeWaitPerLowBitReadNS()))
		switch a.Mechanism {
		case timing.MechNone:
			base = a.Pair.OverheadPct
		case timing.MechRefresh:
			noRef = a.Pair.OverheadPct
		}
	}
	t.Notes = []string{refreshAblationNote(base, noRef) + " Negative values: the low-bit run was faster (see the Table 4 note)."}
	return t
}

// refreshAblationNote says how much of the anchor's exposure the refresh
// ablation removed (from the measured percentages) and why refresh can
// matter: the streams' windows fill behind a refreshing channel.
func refreshAblationNote(base, noRef float64) string {
	part := "a minor part of it"
	if math.Abs(base-noRef) >= math.Abs(base)/2 {
		part = "most of it: the refresh stalls, not the datapath's latency, set it"
	}
	return fmt.Sprintf("Removing refresh alone moves the anchor's exposure from %.2f%% to %.2f%%, %s. With refresh the streams' windows fill behind each refreshing channel and drain in bursts after it, bursts that the 128 GB/s datapath serialises (pipeline wait) and that change how full the response flits are (lines per flit).", base, noRef, part)
}

func loadedLayout(curves []PresetLoadPoints) (report.Table, report.Figure, error) {
	t := report.Table{Name: "loaded-latency", Title: "Loaded latency: controller-read latency against delivered bandwidth (every read an LLC miss)",
		Columns: []string{"preset", "mode", "outstanding / stream", "delivered GiB/s", "mean ns", "p50 ns", "p99 ns"}}
	var series []report.Series
	for _, c := range curves {
		for _, mode := range []string{"identity", "lowbit"} {
			sr := report.Series{Name: c.Preset + ", " + mode, Dashed: mode == "lowbit"}
			for _, p := range c.Points {
				if p.Mode != mode {
					continue
				}
				t.AddRow(c.Preset, mode, p.Outstanding, fmt.Sprintf("%.2f", p.DeliveredGiBps), fmt.Sprintf("%.1f", p.Latency.MeanNS),
					fmt.Sprintf("%.0f", p.Latency.P50NS), fmt.Sprintf("%.0f", p.Latency.P99NS))
				sr.X, sr.Y = append(sr.X, p.DeliveredGiBps), append(sr.Y, p.Latency.MeanNS)
			}
			series = append(series, sr)
		}
	}
	var names []string
	for _, c := range curves {
		names = append(names, c.Preset)
	}
	t.Notes = []string{"Load is set by the per-stream outstanding limit (8 streams); latency runs from the stream's issue to the data's arrival, LLC lookup included. ideal: flat at lookup + 200 ns + one gate interval until the 128 GiB/s gate saturates. ddr5 (" + strings.Join(names, ", ") + "): the unloaded path is shorter (tRCD + tCL + BL/2 + front end + two port latencies and flits), the tail carries refresh (p99 near tRFC above the mean), and the curve bends where the flit link's line rate and the channels' queues saturate."}
	fig, err := report.LinePlot{Title: "Loaded latency (mean), ideal and ddr5", XLabel: "delivered bandwidth (GiB/s)", YLabel: "mean read latency (ns)", Series: series}.Figure("loaded-latency")
	return t, fig, err
}
