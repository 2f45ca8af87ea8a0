package timing

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// job is one identity/low-bit pair to run.
type job struct {
	cfg    Config
	w      Workload
	window Window
}

// runJobs runs the pairs on up to GOMAXPROCS goroutines. Each pair runs on
// its own engine and results land by index, so the output does not depend
// on scheduling or GOMAXPROCS.
func runJobs(ctx context.Context, jobs []job) ([]Pair, error) {
	out := make([]Pair, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				out[i], errs[i] = RunWindowPair(jobs[i].cfg, jobs[i].w, jobs[i].window)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Table 4 row groups, in the paper's row order.
const (
	GroupOneStream    = "1-request stream"
	GroupStreams      = "1-8 request streams"
	GroupFullMiss     = "full LLC miss"
	GroupScaleHealthy = "scale-out, healthy"
	GroupScaleCongest = "scale-out, congested"
)

// Row is one measured configuration behind Table 4.
type Row struct {
	Group string `json:"group"`
	// Streams (W), Stacks (N), Share (link.share) and FootprintMiB (per
	// stream) are the parameters that differ from the base model.
	Streams      int     `json:"streams"`
	Stacks       int     `json:"stacks"`
	Share        float64 `json:"share"`
	FootprintMiB float64 `json:"footprint_mib"`
	// Layout is streams.layout where it differs between rows (RunLayouts).
	Layout string `json:"layout,omitempty"`
	Pair   Pair   `json:"pair"`
}

// RunTable4 runs every configuration behind Table 4 from s.Model:
//
//   - 1-request stream: W = 1 (footprint and passes as configured);
//   - 1-8 request streams: W over s.Experiments.StreamCounts;
//   - full LLC miss: the model as configured (default: 8 x 2 MiB = 16 MiB
//     active footprint against the 8 MiB LLC);
//   - scale-out: N over s.Experiments.StackCounts, healthy (the model's
//     link.share) and congested (share = s.Experiments.CongestedShare).
func RunTable4(ctx context.Context, s Setup) ([]Row, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	base := s.Model
	var rows []Row
	var cfgs []Config
	add := func(group string, c Config) {
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

// rowOf is the Row of a Table 4 group run under c, before it has run.
func rowOf(group string, c Config) Row {
	return Row{Group: group, Streams: c.Streams.Count, Stacks: c.Controller.Stacks,
		Share: c.Link.Share, FootprintMiB: c.Streams.FootprintMiB}
}

// runRows validates cfgs[i] (errors prefixed by what), runs each as a whole
// sweep pair and sets it as rows[i].Pair.
func runRows(ctx context.Context, what string, rows []Row, cfgs []Config) ([]Row, error) {
	jobs := make([]job, len(cfgs))
	for i, c := range cfgs {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		jobs[i] = job{cfg: c, w: Sweep{}, window: All}
	}
	pairs, err := runJobs(ctx, jobs)
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
func RunLayouts(ctx context.Context, s Setup, layouts []string) ([]Row, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var rows []Row
	var cfgs []Config
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

// Point is one point of a Fig. 3 panel: X on the panel's axis, Series
// naming the line it belongs to.
type Point struct {
	Series string  `json:"series"`
	X      float64 `json:"x"`
	Pair   Pair    `json:"pair"`
	// HitRate is the identity run's LLC hit fraction (panel c).
	HitRate float64 `json:"hit_rate"`
}

// DelayPoint is one point of Fig. 3(d).
type DelayPoint struct {
	DelayMS float64 `json:"delay_ms"`
	// Exposed is the run-time cost of the late update: reads issued during
	// the delay still took the low-bit datapath.
	Exposed Time `json:"exposed_ps"`
	// StepCostPct is Exposed relative to Experiments.StepMS, in percent.
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
	Bandwidth         []Point      `json:"bandwidth"`
	Latency           []Point      `json:"latency"`
	Footprint         []Point      `json:"footprint"`
	Delay             []DelayPoint `json:"delay"`
	ExposureBudgetPct float64      `json:"exposure_budget_pct"`
	StepMS            float64      `json:"step_ms"`
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
func RunEnvelope(ctx context.Context, s Setup) (Envelope, error) {
	if err := s.Validate(); err != nil {
		return Envelope{}, err
	}
	base, ex := s.Model, s.Experiments
	env := Envelope{ExposureBudgetPct: ex.ExposureBudgetPct, StepMS: ex.StepMS}
	var jobs []job
	var pts []*Point
	panel := func(dst *[]Point, series string, x float64, c Config) {
		*dst = append(*dst, Point{Series: series, X: x})
		jobs = append(jobs, job{cfg: c, w: Sweep{}, window: All})
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
	llcLines := int64(base.LLC.SizeMiB*(1<<20)) / LineBytes
	for _, r := range ex.FootprintRatios {
		c := base
		per := int64(math.Round(r*float64(llcLines))) / int64(c.Streams.Count)
		if per < 1 {
			per = 1
		}
		c.Streams.FootprintMiB = float64(per*LineBytes) / (1 << 20)
		panel(&env.Footprint, fmt.Sprintf("%d streams", c.Streams.Count), r, c)
	}
	// Panel (d): size each run from the time of one identity pass.
	one := base
	one.Streams.Passes = 1
	r1, err := Simulate(one, Sweep{}, None)
	if err != nil {
		return Envelope{}, err
	}
	nd := len(jobs)
	for _, d := range ex.DelaysMS {
		delay := fromNS(d * 1e6)
		passes := int(int64(delay)/max(int64(r1.RunTime), 1)) + 2
		c := base
		c.Streams.Passes = passes
		if err := c.Validate(); err != nil {
			return Envelope{}, fmt.Errorf("experiments.delays_ms: %g ms needs %d passes: %w", d, passes, err)
		}
		env.Delay = append(env.Delay, DelayPoint{DelayMS: d, Passes: passes})
		jobs = append(jobs, job{cfg: c, w: Sweep{}, window: Window{0, delay}})
	}
	for _, j := range jobs {
		if err := j.cfg.Validate(); err != nil {
			return Envelope{}, fmt.Errorf("envelope configuration: %w", err)
		}
	}
	pairs, err := runJobs(ctx, jobs)
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

// WithLinkGiBps returns c with each stack's link bandwidth set to bw GiB/s
// per direction: link.bandwidth_gibps under the gate; under the cxl link
// the transfer rate that gives a raw rate of bw GiB/s on the configured
// lanes (flit framing and headers then take their share of it).
func (c Config) WithLinkGiBps(bw float64) Config {
	c.Link.BandwidthGiBps = bw
	if c.LinkModel() == LinkCXL {
		x := &c.Link.CXL
		x.TransferGTps = bw * (1 << 30) * 8 / (float64(x.Lanes) * x.EncodingEfficiency * 1e9)
	}
	return c
}

// WithAccessLatencyNS returns c with the memory access latency the Fig. 3(b)
// panel sweeps set to ns: memory.latency_ns under the ideal memory; under
// ddr5, whose DRAM latency follows from its timing, the CXL port latency
// is set to ns/2 per direction, so the sweep adds the same fixed round trip.
func (c Config) WithAccessLatencyNS(ns float64) Config {
	c.Memory.LatencyNS = ns
	if c.Memory.Model == MemoryDDR5 {
		c.Link.CXL.PortLatencyNS = ns / 2
	}
	return c
}
