// Package replay streams a training step's gradient buckets through the
// timing model at their ready times (paper Sec. 5.2, Fig. 2): each bucket's
// cache lines become ready when backward produces its last gradient, so
// early buckets are communicated while later layers still run backward.
// It compares the identity (FP32, no aggregation) run with the G-Binary run,
// whose reads also cross the aggregation datapath.
//
// # Fast-forward
//
// A full GPT-3 step is about 11 billion cache lines, far beyond event-by-
// event simulation. The fast-forward exploits two facts of the model: the
// W request streams are closed loops that serve their own lines in order,
// and once they are busy the system repeats itself every round of
// P = W x outstanding lines. Let T(C) be the time to serve C lines, all
// ready at 0, on an idle system. The calibrator simulates T(C) with the
// timing package's event model for C <= DirectLines, and extends it beyond
// in closed form: T(C) = T(C0) + (C - C0) b, with C0 congruent to C modulo
// P just below DirectLines and b the steady-state cost per line measured
// between DirectLines - SlopeLines and DirectLines.
//
// Buckets are then served in busy periods. A bucket that arrives on an
// idle system starts a period at its ready time s; within a period the
// streams see one continuous sequence of lines, so the period's k-th
// bucket completes at
//
//	finish = max(s + T(W * max_s n_s), ready + T(L))
//
// where n_s counts the lines dealt to stream s so far in the period (bucket
// lines go round-robin to the streams) and the second term covers a bucket
// that arrives after the streams ran dry, which shifts the period's
// effective start. Validate compares the fast-forward with full event
// simulation of the same trace.
//
// # Under ddr5
//
// The recurrence needs a stateless, shift-invariant path: the time to
// serve a bucket must depend only on the lines before it in its period.
// The ddr5 memory breaks that. Its refreshes and command clock are fixed
// in absolute time, so the calibrator simulates T(C) at the period's
// start phase modulo tREFI; that makes the recurrence exact for a bucket
// that starts on an idle system (up to DirectLines lines). A bucket that
// arrives while the streams drain finds row buffers, a refresh phase and
// a flit-packing state the idle calibration never saw, so FastForward
// event-simulates every queued period of at most ExactPeriodLines lines
// with its buckets at their own ready times (refine). Consecutive periods
// share one simulation up to that bound, carrying the state an idle gap
// leaves (open rows, ring positions, refresh and link state); when the
// simulated end passes the next period's start, the simulation absorbs
// that period and runs again. Beyond DirectLines, T(C) runs piecewise
// linearly through anchors simulated at phase 0 (tAnchored).
//
// Two kinds of period keep the recurrence and are counted in
// Run.Extrapolated: one-bucket periods above DirectLines (simulating each
// at its own phase would cost a full simulation of every bucket) and
// queued periods above ExactPeriodLines (the one GPT-3 period of 10.9
// billion lines). Their error is measured against event simulation of
// the same buckets, on cases that take those paths: one-bucket periods of
// 300,000 and 1,000,000 lines from refresh phases other than 0, a queued
// period of 3,145,728 lines (beyond the last anchor), and the recurrence
// forced onto the scaled bert-large trace. DDR5ExtrapolationPct is the
// bound they are held to; Increment.Resolved says where an increment is
// smaller than the two runs' bound. What is left is where refreshes
// (295 ns each) fall in a run's first and last microseconds. Before the
// ddr5 preset hashed its bank address (DDR5Config.BankHash) the streams
// conflicted in one bank in lockstep, the start phase moved a
// 65,536-line run by up to 7%, and these paths were 0.3% to 2.4% off.
package replay

import (
	"fmt"
	"math"
	"sort"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/workload"
)

// Mode selects the controller path of a run.
type Mode uint8

const (
	// Identity is the FP32 no-aggregation reference: reads bypass the
	// datapath.
	Identity Mode = iota
	// LowBit sends every read through the G-Binary aggregation datapath.
	LowBit
)

// ModeFor returns the replay path of controller mode m: LowBit when m
// goes through the low-bit datapath (cxl.Mode.LowBit), else Identity.
func ModeFor(m cxl.Mode) Mode {
	if m.LowBit() {
		return LowBit
	}
	return Identity
}

// Controller returns the controller mode the path stands for, whose name
// it goes by: cxl.Aggregate(lowbit.Binary) for LowBit, cxl.Identity otherwise.
func (m Mode) Controller() cxl.Mode {
	if m == LowBit {
		return cxl.Aggregate(lowbit.Binary)
	}
	return cxl.Identity
}

func (m Mode) String() string { return m.Controller().String() }

func (m Mode) window() timing.Window {
	if m == LowBit {
		return timing.All
	}
	return timing.None
}

// Lines returns the cache lines of a bucket of n bytes: ceil(n / 64)
// (lowbit.Lines).
func Lines(n int64) int64 { return lowbit.Lines(n) }

// Buckets converts a workload trace into timing buckets (FP32 bytes in
// 64-byte lines, ready times in picoseconds from the start of backward).
func Buckets(tr *workload.Trace) []timing.Bucket {
	out := make([]timing.Bucket, len(tr.Buckets))
	for i, b := range tr.Buckets {
		out[i] = timing.Bucket{Ready: sim.Time(b.ReadyPS), Lines: Lines(b.Bytes)}
	}
	return out
}

// Run is the outcome of one replay in one mode.
type Run struct {
	Mode string `json:"mode"`
	// RunTime is when the last line completed, from the start of backward.
	RunTime sim.Time `json:"run_time_ps"`
	// Finish is each bucket's completion time (fast-forward only; exact
	// runs report only RunTime).
	Finish []sim.Time `json:"-"`
	// Busy is the time the controller path had at least one bucket in
	// service; BusyInBackward is the part of it before backward ended.
	Busy           sim.Time `json:"busy_ps"`
	BusyInBackward sim.Time `json:"busy_in_backward_ps"`
	// Periods counts busy periods (idle-to-busy starts); fast-forward only.
	Periods int `json:"periods"`
	// Lines is the total lines served.
	Lines int64 `json:"lines"`
	// Events counts simulated events (calibration runs for fast-forward).
	Events int64 `json:"events"`
	// Exact reports a full event simulation.
	Exact bool `json:"exact"`
	// Extrapolated counts the busy periods that the ddr5 fast-forward
	// served by the calibrated recurrence instead of event simulation
	// (one-bucket periods above DirectLines, queued periods above
	// ExactPeriodLines); their error is bounded by DDR5ExtrapolationPct,
	// not zero. Always 0 under ideal and for exact runs.
	Extrapolated int `json:"extrapolated_periods"`
}

// DirectLines is the largest busy-period size the calibrator simulates
// directly; SlopeLines is the span of the steady-state slope measurement.
const (
	DirectLines = 1 << 17
	SlopeLines  = 1 << 16
)

// Calibrator caches the calibration runs of one configuration and mode:
// T(C), the time to serve C lines ready at 0 on an idle system.
type Calibrator struct {
	cfg    timing.Config
	mode   Mode
	period int64 // W x outstanding lines: one round of the closed loops
	memo   map[calKey]sim.Time
	// refresh is the period after which the model repeats in absolute time
	// (tREFI under the ddr5 memory, whose refreshes and command clock are
	// fixed to absolute time; 0 when the model is shift-invariant), and
	// phase the current busy period's start modulo it.
	refresh, phase sim.Time
	slope          float64 // ps per line in steady state; 0 until measured
	exactLimit     int64   // see refine; ExactPeriodLines
	Events         int64
}

// NewCalibrator returns a calibrator for cfg in mode m.
func NewCalibrator(cfg timing.Config, m Mode) (*Calibrator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := int64(cfg.Streams.Count) * int64(cfg.Streams.Outstanding)
	c := &Calibrator{cfg: cfg, mode: m, period: max(p, 1), memo: map[calKey]sim.Time{}, exactLimit: ExactPeriodLines}
	if cfg.Memory.Model == timing.MemoryDRAM {
		if cfg.Device.Media.RefreshSeed != 0 {
			// The calibration memoises T(C) per start phase modulo tREFI,
			// which holds only for the strictly periodic schedule.
			return nil, fmt.Errorf("replay: memory.ddr5.refresh_seed %d: the fast-forward needs the periodic refresh schedule (refresh_seed 0)", cfg.Device.Media.RefreshSeed)
		}
		c.refresh = cfg.Device.Media.RefreshInterval()
	}
	return c, nil
}

// calKey memoises T(C) per refresh phase.
type calKey struct {
	lines int64
	phase sim.Time
}

// setStart tells the calibrator that a busy period starts at s.
func (c *Calibrator) setStart(s sim.Time) {
	if c.refresh > 0 {
		c.phase = s % c.refresh
	}
}

// direct simulates C lines ready at 0 (memoised).
func (c *Calibrator) direct(C int64) (sim.Time, error) {
	return c.directAt(C, c.phase)
}

// directAt simulates C lines ready at phase on an idle system and returns
// the time from phase to the last completion (memoised).
func (c *Calibrator) directAt(C int64, phase sim.Time) (sim.Time, error) {
	k := calKey{C, phase}
	if t, ok := c.memo[k]; ok {
		return t, nil
	}
	r, err := timing.Simulate(c.cfg, timing.Replay{Buckets: []timing.Bucket{{Ready: phase, Lines: C}}}, c.mode.window())
	if err != nil {
		return 0, fmt.Errorf("calibrate %d lines: %w", C, err)
	}
	c.Events += r.Events
	t := max(r.RunTime-phase, 0)
	c.memo[k] = t
	return t, nil
}

// T returns the time to serve C lines, all ready at 0, on an idle system:
// simulated for C <= DirectLines; beyond, T(C0) + (C - C0) b with C0 the
// size in (DirectLines - P, DirectLines] congruent to C modulo the loop
// period P = W x outstanding (the completion pattern repeats every round),
// and b the steady-state cost per line measured over SlopeLines.
func (c *Calibrator) T(C int64) (sim.Time, error) {
	if C <= DirectLines {
		return c.direct(C)
	}
	if c.refresh > 0 {
		return c.tAnchored(C)
	}
	if c.slope == 0 {
		// The slope spans many refresh intervals; phase 0 stands for all.
		hi, err := c.directAt(DirectLines, 0)
		if err != nil {
			return 0, err
		}
		lo, err := c.directAt(DirectLines-SlopeLines, 0)
		if err != nil {
			return 0, err
		}
		c.slope = float64(hi-lo) / SlopeLines
	}
	k := (C - DirectLines + c.period - 1) / c.period
	C0 := C - k*c.period
	// Phase 0 stands for all beyond DirectLines (under ddr5 see
	// tAnchored), so a long replay calibrates once, not once per busy
	// period.
	t0, err := c.directAt(C0, 0)
	if err != nil {
		return 0, err
	}
	return t0 + sim.Time(math.Round(c.slope*float64(C-C0))), nil
}

// FastForward serves buckets with the calibrated recurrence (see the
// package doc); under a memory model that is not shift-invariant (ddr5)
// it then event-simulates the queued busy periods of at most
// ExactPeriodLines lines (see refine). Buckets must be in nondecreasing
// ready order.
func FastForward(c *Calibrator, buckets []timing.Bucket, backward sim.Time) (Run, error) {
	r, starts, err := c.recurrence(buckets, backward)
	if err != nil || c.refresh == 0 {
		return r, err
	}
	return c.refine(buckets, backward, r, starts)
}

// recurrence serves buckets with the calibrated recurrence and returns
// the run with the index of each busy period's first bucket.
func (c *Calibrator) recurrence(buckets []timing.Bucket, backward sim.Time) (Run, []int, error) {
	if !sort.SliceIsSorted(buckets, func(i, j int) bool { return buckets[i].Ready < buckets[j].Ready }) {
		return Run{}, nil, fmt.Errorf("replay: buckets are not in nondecreasing ready order")
	}
	w := int64(c.cfg.Streams.Count)
	perStream := make([]int64, w)
	var maxStream int64
	r := Run{Mode: c.mode.String(), Finish: make([]sim.Time, len(buckets))}
	var prev, start sim.Time // completion so far; effective start of the busy period
	busyStart := sim.Time(-1)
	var starts []int
	closeBusy := func(end sim.Time) {
		if busyStart < 0 {
			return
		}
		r.Busy += end - busyStart
		if backward > busyStart {
			r.BusyInBackward += min(end, backward) - busyStart
		}
		busyStart = -1
	}
	for i, b := range buckets {
		if b.Lines < 0 || b.Ready < 0 {
			return Run{}, nil, fmt.Errorf("replay: bucket %d has %d lines ready at %v", i, b.Lines, b.Ready)
		}
		if b.Lines == 0 {
			r.Finish[i] = max(prev, b.Ready)
			continue
		}
		if busyStart < 0 || b.Ready >= prev {
			// The system is idle: a new busy period starts.
			closeBusy(prev)
			busyStart, start = b.Ready, b.Ready
			c.setStart(b.Ready)
			r.Periods++
			starts = append(starts, i)
			clear(perStream)
			maxStream = 0
		}
		q, rem := b.Lines/w, b.Lines%w
		for s := range perStream {
			perStream[s] += q
			if int64(s) < rem {
				perStream[s]++
			}
			maxStream = max(maxStream, perStream[s])
		}
		tq, err := c.T(w * maxStream)
		if err != nil {
			return Run{}, nil, err
		}
		ti, err := c.T(b.Lines)
		if err != nil {
			return Run{}, nil, err
		}
		queued, idle := start+tq, b.Ready+ti
		f := queued
		if idle > queued {
			// The bucket arrived after the streams ran dry: the period
			// continues from its arrival.
			f = idle
			start += idle - queued
		}
		r.Finish[i] = f
		prev = max(prev, f)
		r.Lines += b.Lines
	}
	closeBusy(prev)
	r.RunTime = prev
	r.Events = c.Events
	return r, starts, nil
}

// Exact runs the full event simulation of buckets in mode m.
func Exact(cfg timing.Config, buckets []timing.Bucket, m Mode) (Run, error) {
	res, err := timing.Simulate(cfg, timing.Replay{Buckets: buckets}, m.window())
	if err != nil {
		return Run{}, err
	}
	return Run{Mode: m.String(), RunTime: res.RunTime, Lines: res.Lines, Events: res.Events, Exact: true}, nil
}

// Scale shrinks a bucket trace by an integer factor k, dividing both the
// lines and the ready times by k (at least one line per non-empty bucket),
// so that queueing keeps its shape while the trace becomes small enough to
// simulate event by event.
func Scale(buckets []timing.Bucket, k int64) []timing.Bucket {
	out := make([]timing.Bucket, len(buckets))
	for i, b := range buckets {
		l := b.Lines / k
		if l == 0 && b.Lines > 0 {
			l = 1
		}
		out[i] = timing.Bucket{Ready: b.Ready / sim.Time(k), Lines: l}
	}
	return out
}

// Check is one fast-forward against event simulation comparison.
type Check struct {
	Mode      string   `json:"mode"`
	Buckets   int      `json:"buckets"`
	Lines     int64    `json:"lines"`
	Exact     sim.Time `json:"exact_ps"`
	Fast      sim.Time `json:"fast_ps"`
	RelErrPct float64  `json:"rel_err_pct"`
}

// Validate runs buckets both ways in mode m and returns the comparison.
func Validate(cfg timing.Config, buckets []timing.Bucket, backward sim.Time, m Mode) (Check, error) {
	ex, err := Exact(cfg, buckets, m)
	if err != nil {
		return Check{}, err
	}
	c, err := NewCalibrator(cfg, m)
	if err != nil {
		return Check{}, err
	}
	ff, err := FastForward(c, buckets, backward)
	if err != nil {
		return Check{}, err
	}
	ch := Check{Mode: m.String(), Buckets: len(buckets), Lines: ex.Lines, Exact: ex.RunTime, Fast: ff.RunTime}
	if ex.RunTime > 0 {
		ch.RelErrPct = 100 * float64(ff.RunTime-ex.RunTime) / float64(ex.RunTime)
	}
	return ch, nil
}
