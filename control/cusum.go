package control

import (
	"fmt"
	"math"
)

// CUSUM is Page's (1954) one-sided cumulative-sum detector for an upward
// shift in the mean of a sequence x_1, x_2, ...:
//
//	S_0 = 0,  S_t = max(0, S_{t-1} + x_t - K),  alarm at the first t with S_t > H.
//
// K is the slack (the shift below which nothing accumulates) and H the
// decision threshold; both are in the units of x. The Supervisor feeds it
// the relative loss excess x_t = loss_t / L_{t-1} - 1 over a slow
// exponential average L of past losses, so sustained loss growth alarms
// while ordinary step-to-step noise and steady improvement do not.
type CUSUM struct {
	K, H float64
	s    float64
}

// Observe adds x and reports whether S now exceeds H. A non-finite x is
// ignored and reported as an error; S is unchanged.
func (c *CUSUM) Observe(x float64) (alarm bool, err error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false, fmt.Errorf("cusum: observation %v is not finite", x)
	}
	c.s = math.Max(0, c.s+x-c.K)
	return c.s > c.H, nil
}

// S returns the current cumulative sum.
func (c *CUSUM) S() float64 { return c.s }

// Reset sets S back to 0 (after an alarm has been acted on).
func (c *CUSUM) Reset() { c.s = 0 }
