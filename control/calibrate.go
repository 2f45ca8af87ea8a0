package control

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/stats"
)

// Calibration procedures: the thresholds of the Supervisor's CUSUM and of
// the admission ladder derived from a fault-free FP32 run of the workload
// itself (its per-step losses and its warm-up cosine diagnostics), so that
// no threshold is carried over from another workload or tuned to a result.
// The paper calibrates its ladder on warm-up diagnostics and says the
// calibration is workload-specific (Sec. 8, Sec. 11); these make the
// procedure explicit and repeatable.
const (
	// CUSUMSlackSD is the CUSUM slack K in standard deviations of the
	// relative loss excess: the detector is designed for a sustained
	// shift of twice that (4 sd), the textbook rule K = shift/2 over an
	// in-control mean of 0.
	CUSUMSlackSD = 2
	// CUSUMThresholdSD is the decision threshold H in standard deviations
	// of the excess (the textbook h = 5 sd, Montgomery, Introduction to
	// Statistical Quality Control, Sec. 9.1).
	CUSUMThresholdSD = 5
	// CUSUMMargin is the factor by which H must exceed the largest
	// cumulative sum the calibration record itself reaches, so that the
	// fault-free record is at least this far from an alarm.
	CUSUMMargin = 2
	// LadderStep is the grid the ladder thresholds are floored to: a
	// group is admitted to a rung when its cosine reaches the calibration
	// backbone's, less at most this much.
	LadderStep = 0.05
)

// LossCalibration is the Supervisor's CUSUM calibrated on a fault-free
// record, with the statistics it was derived from.
type LossCalibration struct {
	// K and H are the slack and threshold (Config.LossK, LossH).
	K float64 `json:"k"`
	H float64 `json:"h"`
	// Mean and SD are those of the relative loss excess over the
	// calibration steps; MaxS is the largest cumulative sum the record
	// reaches with slack K; Steps is how many steps were used.
	Mean  float64 `json:"mean"`
	SD    float64 `json:"sd"`
	MaxS  float64 `json:"max_s"`
	Steps int     `json:"steps"`
}

// CalibrateCUSUM derives the CUSUM's slack and threshold from the per-step
// training losses of a fault-free FP32 run, fed through the Supervisor's
// own relative excess x_t = loss_t / L_{t-1} - 1 over the exponential
// average L with weight alpha. Steps before skip (the warm-up, while the
// loss falls fastest) update L but are not counted. With s the standard
// deviation of the counted x_t:
//
//	K = CUSUMSlackSD·s
//	H = max(CUSUMThresholdSD·s, CUSUMMargin·max_t S_t)
//
// where S_t is the CUSUM with slack K run over the counted steps: the
// record never alarms, with at least a factor CUSUMMargin to spare. The
// in-control mean of the excess is taken as 0, not as the record's mean:
// on a short early record the loss still falls faster than its lagging
// average, so the mean is negative (Mean reports it), and that trend
// vanishes as training converges, where a false alarm would cost most.
func CalibrateCUSUM(losses []float64, alpha float64, skip int) (LossCalibration, error) {
	if !(alpha > 0 && alpha <= 1) {
		return LossCalibration{}, fmt.Errorf("calibrate cusum: alpha %v not in (0, 1]", alpha)
	}
	if skip < 1 {
		skip = 1 // the first loss only starts the average
	}
	xs, err := lossExcess(losses, alpha, skip)
	if err != nil {
		return LossCalibration{}, err
	}
	if len(xs) < 2 {
		return LossCalibration{}, fmt.Errorf("calibrate cusum: %d losses after skipping %d, want at least 2", len(xs), skip)
	}
	var c LossCalibration
	c.Steps = len(xs)
	c.Mean, c.SD = stats.MeanSD(xs)
	c.K = CUSUMSlackSD * c.SD
	cs := CUSUM{K: c.K, H: math.Inf(1)}
	for _, x := range xs {
		if _, err := cs.Observe(x); err != nil {
			return LossCalibration{}, err
		}
		c.MaxS = math.Max(c.MaxS, cs.S())
	}
	c.H = math.Max(CUSUMThresholdSD*c.SD, CUSUMMargin*c.MaxS)
	if c.H <= 0 {
		return LossCalibration{}, fmt.Errorf("calibrate cusum: record gives H %v (is the loss constant?)", c.H)
	}
	return c, nil
}

// lossExcess returns the Supervisor's relative loss excess (the Plane's
// own lossAverage) for each loss from index skip on (the average runs over
// all of them).
func lossExcess(losses []float64, alpha float64, skip int) ([]float64, error) {
	var xs []float64
	var avg lossAverage
	for i, l := range losses {
		if !finite(l) || l < 0 {
			return nil, fmt.Errorf("calibrate cusum: loss %d is %v", i, l)
		}
		if x, ok := avg.excess(l); i >= skip && ok {
			xs = append(xs, x)
		}
		avg.add(l, alpha)
	}
	return xs, nil
}

// CalibrateLadder derives the admission ladder from a calibration group's
// warm-up cosines (cos indexed by format, train.StepFormatCosines of the
// backbone of the workload's fault-free FP32 run at the end of warm-up):
// each rung's threshold is that cosine floored to a multiple of
// LadderStep, so the calibration group passes every rung and another
// group is admitted to a rung when it is at least about as well aligned.
// The floor keeps the threshold from resting on the last digits of one
// run. formats chooses the rungs (the paper's pilots: G-Binary and
// G-Ternary).
func CalibrateLadder(formats []lowbit.Format, cos [lowbit.NumFormats]float64) (Ladder, error) {
	r := make(Ladder, 0, len(formats))
	for _, f := range formats {
		if !f.Valid() {
			return nil, fmt.Errorf("calibrate ladder: unknown format %v", f)
		}
		c := cos[f]
		if !finite(c) || math.Abs(c) > 1 {
			return nil, fmt.Errorf("calibrate ladder: %v cosine %v not in [-1, 1]", f, c)
		}
		r = append(r, Rung{Format: f, Min: floorToStep(c)})
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate ladder: %w", err)
	}
	return r, nil
}

// floorToStep floors a cosine to a multiple of LadderStep. The small
// epsilon keeps a cosine that is a multiple of the step (up to rounding)
// on its own grid point. Dividing by the grid's count per unit gives the
// float nearest k/20, which is the literal 0.45 for k = 9 (multiplying by
// 0.05 is not).
func floorToStep(v float64) float64 {
	n := math.Round(1 / LadderStep)
	return math.Floor(v*n+1e-9) / n
}
