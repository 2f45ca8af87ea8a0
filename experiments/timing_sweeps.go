package experiments

import (
	"context"
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Table 4 row groups, in the paper's row order.
const (
	GroupOneStream    = "1-request stream"
	GroupStreams      = "1-8 request streams"
	GroupFullMiss     = "full LLC miss"
	GroupScaleHealthy = "scale-out, healthy"
	GroupScaleCongest = "scale-out, congested"
)

// Table4Row is one measured configuration behind Table 4.
type Table4Row struct {
	Group string `json:"group"`
	// Streams (W), Stacks (N), Share (link.share) and FootprintMiB (per
	// stream) are the parameters that differ from the base model.
	Streams      int     `json:"streams"`
	Stacks       int     `json:"stacks"`
	Share        float64 `json:"share"`
	FootprintMiB float64 `json:"footprint_mib"`
	// Layout is streams.layout where it differs between rows (RunLayouts).
	Layout string      `json:"layout,omitempty"`
	Pair   timing.Pair `json:"pair"`
	// ClosedFormPct is the row's latency-bound exposure, T_agg / path
	// latency: the datapath's latency over the idle read of the row's
	// configuration (timing.Config.IdleRead: every stage of the path, the
	// LLC lookup, host stages, link, device and memory), in percent. It is
	// what the row would expose with no queueing to overlap the datapath
	// and no DRAM state that differs between the two runs.
	ClosedFormPct float64 `json:"closed_form_pct"`
}

// RunTable4 runs every configuration behind Table 4 from s.Model:
//
//   - 1-request stream: W = 1 (footprint and passes as configured);
//   - 1-8 request streams: W over s.Experiments.StreamCounts;
//   - full LLC miss: the model as configured (default: 8 x 2 MiB = 16 MiB
//     active footprint against the 8 MiB LLC);
//   - scale-out: N over s.Experiments.StackCounts, healthy (the model's
//     link.share) and congested (share = s.Experiments.CongestedShare).
func RunTable4(ctx context.Context, s TimingSetup) ([]Table4Row, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	base := s.Model
	var rows []Table4Row
	var cfgs []timing.Config
	add := func(group string, c timing.Config) {
		rows = append(rows, rowOf(group, c))
		cfgs = append(cfgs, c)
	}
	c := base
	c.Streams.Count = 1
	add(GroupOneStream, c)
	for _, w := range s.Experiments.StreamCounts {
		c := base
		c.Streams.Count = w
		add(GroupStreams, c)
	}
	add(GroupFullMiss, base)
	for _, n := range s.Experiments.StackCounts {
		c := base
		c.Controller.Stacks = n
		add(GroupScaleHealthy, c)
	}
	for _, n := range s.Experiments.StackCounts {
		c := base
		c.Controller.Stacks = n
		c.Link.Share = s.Experiments.CongestedShare
		add(GroupScaleCongest, c)
	}
	return runRows(ctx, "table 4 configuration", rows, cfgs)
}

// rowOf is the Table4Row of a Table 4 group run under c, before it has run.
func rowOf(group string, c timing.Config) Table4Row {
	return Table4Row{Group: group, Streams: c.Streams.Count, Stacks: c.Controller.Stacks,
		Share: c.Link.Share, FootprintMiB: c.Streams.FootprintMiB, ClosedFormPct: closedFormPct(c)}
}

// runRows validates cfgs[i] (errors prefixed by what), runs each as a whole
// sweep pair and sets it as rows[i].Pair.
func runRows(ctx context.Context, what string, rows []Table4Row, cfgs []timing.Config) ([]Table4Row, error) {
	jobs := make([]timing.PairJob, len(cfgs))
	for i, c := range cfgs {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		jobs[i] = timing.PairJob{Config: c, W: timing.Sweep{}, Window: timing.All}
	}
	pairs, err := timing.RunPairs(ctx, jobs)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Pair = pairs[i]
	}
	return rows, nil
}

// RunLayouts runs Table 4's healthy scale-out rows (N over
// s.Experiments.StackCounts; N = 1 is the full-LLC-miss anchor) once for
// each streams.layout in layouts, in that order: the comparison that
// tells a bank lock of aligned equal sweeps (contiguous) from the
// datapath's cost (see StreamsConfig.Layout).
func RunLayouts(ctx context.Context, s TimingSetup, layouts []string) ([]Table4Row, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var rows []Table4Row
	var cfgs []timing.Config
	for _, l := range layouts {
		for _, n := range s.Experiments.StackCounts {
			c := s.Model
			c.Controller.Stacks, c.Streams.Layout = n, l
			r := rowOf(GroupScaleHealthy, c)
			r.Layout = l
			rows, cfgs = append(rows, r), append(cfgs, c)
		}
	}
	return runRows(ctx, "layout rows", rows, cfgs)
}

// EnvelopePoint is one point of a Fig. 3 panel: X on the panel's axis, Series
// naming the line it belongs to.
type EnvelopePoint struct {
	Series string      `json:"series"`
	X      float64     `json:"x"`
	Pair   timing.Pair `json:"pair"`
	// HitRate is the identity run's LLC hit fraction (panel c).
	HitRate float64 `json:"hit_rate"`
	// ClosedFormPct is the point's T_agg / path latency, in percent
	// (Table4Row.ClosedFormPct).
	ClosedFormPct float64 `json:"closed_form_pct"`
}

// DelayPoint is one point of Fig. 3(d).
type DelayPoint struct {
	DelayMS float64 `json:"delay_ms"`
	// Exposed is the run-time cost of the late update: reads issued during
	// the delay still took the low-bit datapath.
	Exposed sim.Time `json:"exposed_ps"`
	// StepCostPct is Exposed relative to TimingParams.StepMS, in percent.
	StepCostPct float64 `json:"step_cost_pct"`
	// ExposedPerDelayPct is Exposed / delay, in percent: the exposure rate
	// while the stale mode lasts.
	ExposedPerDelayPct float64 `json:"exposed_per_delay_pct"`
	// BreakEvenStepMS is the step time at which the cost would be 0.04%
	// (the paper's bound at 10 ms).
	BreakEvenStepMS float64 `json:"break_even_step_ms"`
	Passes          int     `json:"passes"`
}

// Envelope holds the four panels of Fig. 3.
type Envelope struct {
	Bandwidth         []EnvelopePoint `json:"bandwidth"`
	Latency           []EnvelopePoint `json:"latency"`
	Footprint         []EnvelopePoint `json:"footprint"`
	Delay             []DelayPoint    `json:"delay"`
	ExposureBudgetPct float64         `json:"exposure_budget_pct"`
	StepMS            float64         `json:"step_ms"`
}

// PaperDelayBoundPct is the step cost below which the paper places a 10 ms
// late mode update (Sec. 5.3); used only to report a break-even step time.
const PaperDelayBoundPct = 0.04

// RunEnvelope runs the Fig. 3 sweeps from s.Model (the full-LLC-miss anchor
// by default):
//
//	(a) link bandwidth x datapath depth;
//	(b) fixed memory-access latency;
//	(c) total active footprint / LLC size (per-stream footprint scaled);
//	(d) a late mode-latch update: the latch should leave low-bit mode at
//	    t = 0 but lands DelayMS later, so reads issued in [0, delay) still
//	    take the pipeline. The runs are made long enough (passes) to outlast
//	    the delay. The stale mode is taken to be the low-bit one because that
//	    is the direction with a timing cost; a late switch into low-bit mode
//	    costs traffic, not datapath time.
func RunEnvelope(ctx context.Context, s TimingSetup) (Envelope, error) {
	if err := s.Validate(); err != nil {
		return Envelope{}, err
	}
	base, ex := s.Model, s.Experiments
	env := Envelope{ExposureBudgetPct: ex.ExposureBudgetPct, StepMS: ex.StepMS}
	var jobs []timing.PairJob
	var pts []*EnvelopePoint
	panel := func(dst *[]EnvelopePoint, series string, x float64, c timing.Config) {
		*dst = append(*dst, EnvelopePoint{Series: series, X: x, ClosedFormPct: closedFormPct(c)})
		jobs = append(jobs, timing.PairJob{Config: c, W: timing.Sweep{}, Window: timing.All})
	}
	for _, k := range ex.Depths {
		for _, bw := range ex.BandwidthsGiBps {
			c := base.WithLinkGiBps(bw)
			c.Controller.Stages = k
			panel(&env.Bandwidth, fmt.Sprintf("%d cycles", k), bw, c)
		}
	}
	for _, l := range ex.LatenciesNS {
		c := base.WithAccessLatencyNS(l)
		panel(&env.Latency, fmt.Sprintf("%d cycles", base.Controller.Stages), l, c)
	}
	llcLines := int64(base.LLC.SizeMiB*(1<<20)) / timing.LineBytes
	for _, r := range ex.FootprintRatios {
		c := base
		per := int64(math.Round(r*float64(llcLines))) / int64(c.Streams.Count)
		if per < 1 {
			per = 1
		}
		c.Streams.FootprintMiB = float64(per*timing.LineBytes) / (1 << 20)
		panel(&env.Footprint, fmt.Sprintf("%d streams", c.Streams.Count), r, c)
	}
	// Panel (d): size each run from the time of one identity pass.
	one := base
	one.Streams.Passes = 1
	r1, err := timing.Simulate(one, timing.Sweep{}, timing.None)
	if err != nil {
		return Envelope{}, err
	}
	nd := len(jobs)
	for _, d := range ex.DelaysMS {
		delay := sim.FromNS(d * 1e6)
		passes := int(int64(delay)/max(int64(r1.RunTime), 1)) + 2
		c := base
		c.Streams.Passes = passes
		if err := c.Validate(); err != nil {
			return Envelope{}, fmt.Errorf("experiments.delays_ms: %g ms needs %d passes: %w", d, passes, err)
		}
		env.Delay = append(env.Delay, DelayPoint{DelayMS: d, Passes: passes})
		jobs = append(jobs, timing.PairJob{Config: c, W: timing.Sweep{}, Window: timing.Window{From: 0, Until: delay}})
	}
	for _, j := range jobs {
		if err := j.Config.Validate(); err != nil {
			return Envelope{}, fmt.Errorf("envelope configuration: %w", err)
		}
	}
	pairs, err := timing.RunPairs(ctx, jobs)
	if err != nil {
		return Envelope{}, err
	}
	for i := range env.Bandwidth {
		pts = append(pts, &env.Bandwidth[i])
	}
	for i := range env.Latency {
		pts = append(pts, &env.Latency[i])
	}
	for i := range env.Footprint {
		pts = append(pts, &env.Footprint[i])
	}
	for i, p := range pts {
		p.Pair = pairs[i]
		if id := pairs[i].Identity; id.Lines > 0 {
			p.HitRate = float64(id.Hits) / float64(id.Hits+id.Misses)
		}
	}
	for i := range env.Delay {
		dp := &env.Delay[i]
		dp.Exposed = pairs[nd+i].Exposed
		ms := dp.Exposed.NS() / 1e6
		dp.StepCostPct = 100 * ms / ex.StepMS
		if dp.DelayMS > 0 {
			dp.ExposedPerDelayPct = 100 * ms / dp.DelayMS
		}
		dp.BreakEvenStepMS = 100 * ms / PaperDelayBoundPct
	}
	return env, nil
}

// Congested reports whether r's identity run measured congestion (see
// timing.Pair.Congested).
func (r Table4Row) Congested() bool { return r.Pair.Congested() }

// rowPairs are the rows' pairs, in order.
func rowPairs(rows []Table4Row) []timing.Pair {
	ps := make([]timing.Pair, len(rows))
	for i, r := range rows {
		ps[i] = r.Pair
	}
	return ps
}

// closedFormPct is T_agg / path latency for c, in percent: the pipeline's
// latency over the idle read of its whole path (Table4Row.ClosedFormPct).
func closedFormPct(c timing.Config) float64 {
	return 100 * c.PipelineLatency().NS() / c.IdleRead().NS()
}
