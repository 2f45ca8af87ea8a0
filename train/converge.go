package train

import (
	"fmt"
	"math"
)

// PlateauRule decides whether a run's validation accuracy has reached its
// plateau: the least-squares slope of the accuracy (in points) over the
// run's last Window epochs is under MaxSlope points per epoch. A slope
// over a window, rather than the last epoch's gain alone, keeps one noisy
// epoch of a plateaued run (a few hundred test images: one image is 0.2
// points) from failing it, and still fails a run that is rising. A run of
// fewer than Window epochs has not shown a plateau and fails.
//
// The rule needs nothing beyond the run itself, so every tier can check
// it within its budget; it does not compare against the same run at twice
// the budget (no tier trains that run).
type PlateauRule struct {
	Window   int
	MaxSlope float64
}

// Plateau is the rule the training block judges its FP32 references by:
// the slope over the last 5 epochs under 0.5 points per epoch. Five, not
// three: on 2,000 test images a plateaued run's accuracy moves 1-1.5
// points from epoch to epoch, so a 3-epoch slope ((y3 - y1)/2) has a
// standard deviation near 1 point/epoch and failed a third of flat runs
// (measured on the standard tier's validated study); over 5 epochs it is
// sigma/sqrt(10), and the training block applies the rule to the mean
// curve over seeds, which divides it by sqrt(seeds) again.
var Plateau = PlateauRule{Window: 5, MaxSlope: 0.5}

func (r PlateauRule) String() string {
	return fmt.Sprintf("least-squares slope of validation accuracy over the last %d epochs < %g points/epoch", r.Window, r.MaxSlope)
}

// Convergence is PlateauRule's finding on one run.
type Convergence struct {
	// LastGain is the last epoch's gain in points (accuracy of the last
	// epoch minus the one before; 0 for a one-epoch run).
	LastGain float64
	// Slope is the least-squares slope in points per epoch over the
	// window (NaN when the run is shorter than the window).
	Slope     float64
	Converged bool
	// Reason says why a run failed ("" when it passed).
	Reason string
}

// Check applies the rule to accs, a run's validation accuracy per epoch
// in percent (EpochStat.ValAcc × 100), first epoch first.
func (r PlateauRule) Check(accs []float64) Convergence {
	c := Convergence{Slope: math.NaN()}
	if n := len(accs); n >= 2 {
		c.LastGain = accs[n-1] - accs[n-2]
	}
	for _, a := range accs {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			c.Reason = fmt.Sprintf("accuracy %v is not finite", a)
			return c
		}
	}
	if r.Window < 2 || len(accs) < r.Window {
		c.Reason = fmt.Sprintf("%d epochs, the rule needs at least %d", len(accs), max(r.Window, 2))
		return c
	}
	w := accs[len(accs)-r.Window:]
	// slope = Σ (x - x̄)(y - ȳ) / Σ (x - x̄)², x = 0 .. Window-1.
	xm := float64(r.Window-1) / 2
	var ym, sxy, sxx float64
	for _, y := range w {
		ym += y
	}
	ym /= float64(len(w))
	for i, y := range w {
		dx := float64(i) - xm
		sxy += dx * (y - ym)
		sxx += dx * dx
	}
	c.Slope = sxy / sxx
	c.Converged = c.Slope < r.MaxSlope
	if !c.Converged {
		c.Reason = fmt.Sprintf("still rising %.2f points/epoch", c.Slope)
	}
	return c
}

// AccuracyCurve returns r's validation accuracy per epoch in percent.
func (r *Result) AccuracyCurve() []float64 {
	out := make([]float64, len(r.Epochs))
	for i, e := range r.Epochs {
		out[i] = 100 * e.ValAcc
	}
	return out
}
