package replay

import (
	"math"
	"testing"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

func TestCompareHand(t *testing.T) {
	ns := sim.Nanosecond
	bs := []timing.Bucket{{Lines: 10}, {Lines: 0}, {Lines: 5}}
	for _, tc := range []struct {
		name              string
		id, lb            Run
		fwd, back         sim.Time
		wantInc, wantStep float64
		wantBusy, wantOv  float64
		wantTail          sim.Time
		hidden            bool
	}{
		// Fast-forward: 1000 ns -> 1010 ns, 2 busy periods of a 5 ns
		// pipeline: 10 ns exposed <= 2 x 5 ns, hidden. Step = 500 +
		// max(800, 1000) = 1500 ns. Busy 600 -> 606 ns, 300 of it in
		// backward.
		{"fast-forward hidden", Run{RunTime: 1000 * ns, Busy: 600 * ns, BusyInBackward: 300 * ns},
			Run{RunTime: 1010 * ns, Busy: 606 * ns, Periods: 2}, 500 * ns, 800 * ns,
			1, 100 * 10.0 / 1500, 1, 50, 200 * ns, true},
		// Exact: periods are the 2 non-empty buckets; 11 ns > 10 ns.
		{"exact exposed", Run{RunTime: 1000 * ns, Exact: true}, Run{RunTime: 1011 * ns, Exact: true}, 0, 2000 * ns,
			1.1, 100 * 11.0 / 2000, 0, 0, 0, false},
	} {
		got := Compare(tc.id, tc.lb, bs, tc.fwd, tc.back, 5*ns)
		for _, c := range []struct {
			what      string
			got, want float64
		}{{"increment", got.IncrementPct, tc.wantInc}, {"step", got.StepIncrementPct, tc.wantStep},
			{"busy", got.BusyIncrementPct, tc.wantBusy}, {"overlap", got.OverlapPct, tc.wantOv}} {
			if math.Abs(c.got-c.want) > 1e-12 {
				t.Errorf("%s: %s %v, want %v", tc.name, c.what, c.got, c.want)
			}
		}
		if got.ExposedTail != tc.wantTail || got.Hidden != tc.hidden || got.Exposed != tc.lb.RunTime-tc.id.RunTime {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
	// One period at least: 5 ns over zero periods is still one fill.
	if !Hidden(5*ns, 5*ns, 0) || Hidden(6*ns, 5*ns, 1) {
		t.Error("Hidden with no or one period")
	}
	// Resolution at DDR5ExtrapolationPct = 0.9%: 1000 -> 1004 ns (0.4%) with
	// an extrapolated period is within 0.9% of 1000 + 1004 ns = 18.04 ns,
	// so not resolved; 1019 ns (19 ns) is; without extrapolation every
	// increment is.
	for _, c := range []struct {
		lb   sim.Time
		ex   int
		want bool
	}{{1004 * ns, 1, false}, {1019 * ns, 1, true}, {1004 * ns, 0, true}, {992 * ns, 2, false}} {
		got := Compare(Run{RunTime: 1000 * ns, Extrapolated: c.ex}, Run{RunTime: c.lb}, bs, 0, 0, 5*ns)
		if got.Resolved != c.want {
			t.Errorf("%v against 1000 ns with %d extrapolated periods: resolved %v, want %v", c.lb, c.ex, got.Resolved, c.want)
		}
	}
	if !(Check{RelErrPct: -0.1}).Within() || (Check{RelErrPct: 0.11}).Within() {
		t.Error("Within at the 0.1% tolerance")
	}
}
