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
// event simulation. Once a bucket's lines stream through the controller the
// system is in a steady state: each extra line costs the same time. The
// fast-forward therefore simulates, with the timing package's event model,
// only a few calibration runs per configuration and mode, each starting
// from an idle system:
//
//	T1(L)  one bucket of L lines ready at 0                (exact service of an idle start)
//	Tn(L)  n buckets of L lines, all ready at 0            (buckets queued behind each other)
//
// for every distinct bucket size L of the trace, with n >= 2 the smallest
// count giving at least SlopeLines queued lines after the first bucket, and
// derives the per-line steady-state cost b(L) = (Tn(L) - T1(L)) / ((n-1) L). It then serves the buckets
// in order with the max-plus recurrence
//
//	finish[i] = max(ready[i] + T1(L[i]), finish[i-1] + b(L[i]) L[i])
//
// — a bucket either starts on an idle system (first term, exact up to the
// cache and gate state the calibration run started from) or queues behind
// its predecessor with the pipeline already full (second term). Validate
// compares the fast-forward with full event simulation of the same trace.
package replay

import (
	"fmt"
	"math"
	"sort"

	"github.com/neuronfabric/nfabric/timing"
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

func (m Mode) String() string {
	if m == LowBit {
		return "g-binary"
	}
	return "identity"
}

func (m Mode) window() timing.Window {
	if m == LowBit {
		return timing.All
	}
	return timing.None
}

// Lines returns the cache lines of a bucket of n bytes: ceil(n / 64).
func Lines(n int64) int64 { return (n + timing.LineBytes - 1) / timing.LineBytes }

// Buckets converts a workload trace into timing buckets (FP32 bytes in
// 64-byte lines, ready times in picoseconds from the start of backward).
func Buckets(tr *workload.Trace) []timing.Bucket {
	out := make([]timing.Bucket, len(tr.Buckets))
	for i, b := range tr.Buckets {
		out[i] = timing.Bucket{Ready: timing.Time(b.ReadyPS), Lines: Lines(b.Bytes)}
	}
	return out
}

// Run is the outcome of one replay in one mode.
type Run struct {
	Mode string `json:"mode"`
	// RunTime is when the last line completed, from the start of backward.
	RunTime timing.Time `json:"run_time_ps"`
	// Finish is each bucket's completion time (fast-forward only; exact
	// runs report only RunTime).
	Finish []timing.Time `json:"-"`
	// Busy is the time the controller path had at least one bucket in
	// service; BusyInBackward is the part of it before backward ended.
	Busy           timing.Time `json:"busy_ps"`
	BusyInBackward timing.Time `json:"busy_in_backward_ps"`
	// Lines is the total lines served.
	Lines int64 `json:"lines"`
	// Events counts simulated events (calibration runs for fast-forward).
	Events int64 `json:"events"`
	// Exact reports a full event simulation.
	Exact bool `json:"exact"`
}

// SlopeLines is the least number of queued lines a slope calibration run
// serves after its first bucket (the run repeats small buckets to reach it).
const SlopeLines = 1 << 16

// calibration holds T1 and the steady-state slope for one bucket size.
type calibration struct {
	t1    timing.Time
	slope float64 // ps per line
}

// Calibrator caches the calibration runs of one configuration and mode.
type Calibrator struct {
	cfg    timing.Config
	mode   Mode
	cache  map[int64]calibration
	Events int64
}

// NewCalibrator returns a calibrator for cfg in mode m.
func NewCalibrator(cfg timing.Config, m Mode) (*Calibrator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Calibrator{cfg: cfg, mode: m, cache: map[int64]calibration{}}, nil
}

func (c *Calibrator) get(L int64) (calibration, error) {
	if cal, ok := c.cache[L]; ok {
		return cal, nil
	}
	r1, err := timing.Simulate(c.cfg, timing.Replay{Buckets: []timing.Bucket{{Ready: 0, Lines: L}}}, c.mode.window())
	if err != nil {
		return calibration{}, fmt.Errorf("calibrate %d lines: %w", L, err)
	}
	// The slope needs enough queued lines to leave the start-up transient
	// behind: at least SlopeLines beyond the first bucket.
	n := max(int64(2), 1+(SlopeLines+L-1)/L)
	queue := make([]timing.Bucket, n)
	for i := range queue {
		queue[i] = timing.Bucket{Ready: 0, Lines: L}
	}
	r2, err := timing.Simulate(c.cfg, timing.Replay{Buckets: queue}, c.mode.window())
	if err != nil {
		return calibration{}, fmt.Errorf("calibrate %d lines: %w", L, err)
	}
	c.Events += r1.Events + r2.Events
	cal := calibration{t1: r1.RunTime, slope: float64(r2.RunTime-r1.RunTime) / float64((n-1)*L)}
	c.cache[L] = cal
	return cal, nil
}

// FastForward serves buckets with the calibrated max-plus recurrence (see
// the package doc). Buckets must be in nondecreasing ready order.
func FastForward(c *Calibrator, buckets []timing.Bucket, backward timing.Time) (Run, error) {
	if !sort.SliceIsSorted(buckets, func(i, j int) bool { return buckets[i].Ready < buckets[j].Ready }) {
		return Run{}, fmt.Errorf("replay: buckets are not in nondecreasing ready order")
	}
	r := Run{Mode: c.mode.String(), Finish: make([]timing.Time, len(buckets))}
	var prev timing.Time
	var busyStart timing.Time = -1
	closeBusy := func(end timing.Time) {
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
			return Run{}, fmt.Errorf("replay: bucket %d has %d lines ready at %v", i, b.Lines, b.Ready)
		}
		if b.Lines == 0 {
			r.Finish[i] = max(prev, b.Ready)
			continue
		}
		cal, err := c.get(b.Lines)
		if err != nil {
			return Run{}, err
		}
		idle := b.Ready + cal.t1
		queued := prev + timing.Time(math.Round(cal.slope*float64(b.Lines)))
		f := max(idle, queued)
		if busyStart < 0 || b.Ready >= prev {
			closeBusy(prev)
			busyStart = b.Ready
		}
		r.Finish[i] = f
		prev = max(prev, f)
		r.Lines += b.Lines
	}
	closeBusy(prev)
	r.RunTime = prev
	r.Events = c.Events
	return r, nil
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
		out[i] = timing.Bucket{Ready: b.Ready / timing.Time(k), Lines: l}
	}
	return out
}

// Check is one fast-forward against event simulation comparison.
type Check struct {
	Mode      string      `json:"mode"`
	Buckets   int         `json:"buckets"`
	Lines     int64       `json:"lines"`
	Exact     timing.Time `json:"exact_ps"`
	Fast      timing.Time `json:"fast_ps"`
	RelErrPct float64     `json:"rel_err_pct"`
}

// Validate runs buckets both ways in mode m and returns the comparison.
func Validate(cfg timing.Config, buckets []timing.Bucket, backward timing.Time, m Mode) (Check, error) {
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
