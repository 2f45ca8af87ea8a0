package replay

import (
	"math"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// RunMode replays buckets in mode m: by full event simulation when exact,
// otherwise by the calibrated fast-forward.
func RunMode(cfg timing.Config, buckets []timing.Bucket, backward sim.Time, m Mode, exact bool) (Run, error) {
	if exact {
		return Exact(cfg, buckets, m)
	}
	c, err := NewCalibrator(cfg, m)
	if err != nil {
		return Run{}, err
	}
	return FastForward(c, buckets, backward)
}

// Increment is what the low-bit datapath adds to a replay: the same
// buckets replayed in Identity and LowBit mode (Sec. 5.2, Fig. 2(b)), and
// the identity run's overlap with backward (Fig. 2(a)).
type Increment struct {
	// Exposed = LowBit.RunTime - Identity.RunTime.
	Exposed sim.Time
	// IncrementPct = 100 Exposed / Identity.RunTime (per replay).
	IncrementPct float64
	// StepIncrementPct = 100 Exposed / (forward + max(backward,
	// Identity.RunTime)) (per training step).
	StepIncrementPct float64
	// BusyIncrementPct = 100 (Busy_lowbit - Busy_id) / Busy_id: the cost
	// per unit of controller busy time (fast-forward only, else 0).
	BusyIncrementPct float64
	// OverlapPct is the share of the identity run's busy time inside
	// backward (fast-forward only, else 0).
	OverlapPct float64
	// ExposedTail is the identity run's communication past backward.
	ExposedTail sim.Time
	// Hidden: see Hidden.
	Hidden bool
	// Resolved is false when either run extrapolated a busy period
	// (Run.Extrapolated) and the exposed time is within the two runs'
	// error bound, DDR5ExtrapolationPct of each run time: the sign and
	// size of such an increment are not measured.
	Resolved bool
}

// Compare measures the increment of lb over id, two replays of buckets
// with the given forward and backward times through a datapath of the
// given pipeline latency.
func Compare(id, lb Run, buckets []timing.Bucket, forward, backward, pipeline sim.Time) Increment {
	inc := Increment{Exposed: lb.RunTime - id.RunTime, ExposedTail: max(0, id.RunTime-backward)}
	if id.RunTime > 0 {
		inc.IncrementPct = 100 * float64(inc.Exposed) / float64(id.RunTime)
	}
	if step := forward + max(backward, id.RunTime); step > 0 {
		inc.StepIncrementPct = 100 * float64(inc.Exposed) / float64(step)
	}
	periods := lb.Periods
	if lb.Exact {
		periods = nonEmpty(buckets)
	}
	inc.Hidden = Hidden(inc.Exposed, pipeline, periods)
	inc.Resolved = id.Extrapolated == 0 && lb.Extrapolated == 0 ||
		math.Abs(float64(inc.Exposed)) > DDR5ExtrapolationPct/100*float64(id.RunTime+lb.RunTime)
	if !id.Exact && id.Busy > 0 {
		inc.OverlapPct = 100 * float64(id.BusyInBackward) / float64(id.Busy)
		inc.BusyIncrementPct = 100 * float64(lb.Busy-id.Busy) / float64(id.Busy)
	}
	return inc
}

// Hidden reports whether a replay's exposed time is no more than one
// pipeline fill per busy period of the controller: no per-line cost
// survives, only fills. It is timing.Pair.Hidden (at most one fill over a
// run) generalised to runs with several busy periods; exact runs, which do
// not count periods, pass one per non-empty bucket, an upper bound.
func Hidden(exposed, pipeline sim.Time, periods int) bool {
	return exposed <= pipeline*sim.Time(max(periods, 1))
}

func nonEmpty(buckets []timing.Bucket) int {
	n := 0
	for _, b := range buckets {
		if b.Lines > 0 {
			n++
		}
	}
	return n
}

// TolerancePct is how far (percent of run time) the fast-forward may be
// from full event simulation for a Check to pass.
const TolerancePct = 0.1

// Within reports whether the fast-forward is within TolerancePct of the
// event simulation.
func (c Check) Within() bool { return math.Abs(c.RelErrPct) <= TolerancePct }
