// Package stats holds the interval estimates the evidence blocks judge
// the paper's claims on: a paired t interval for a mean difference over
// seeds, Fieller's interval for a ratio of paired means, and the rule
// that turns an interval and a criterion into a decision.
//
// The seeds of a study are paired by common random numbers (every policy
// of a seed starts from the same weights and sees the same batches), so a
// claim about a difference between two policies is a claim about the mean
// of the per-seed differences d_s = x_s - y_s; the seed-to-seed variation
// both policies share cancels in d_s.
package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Level is the confidence level of every interval the blocks print.
const Level = 0.95

// Interval is a two-sided confidence interval.
type Interval struct {
	// Estimate is the point estimate (the mean difference, or the ratio
	// of the means).
	Estimate float64
	// Lo and Hi bound the interval; an unbounded interval has Lo = -Inf
	// and Hi = +Inf.
	Lo, Hi float64
	// N is the number of paired seeds.
	N int
	// Method names the construction ("paired t", "Fieller").
	Method string
	// Level is the confidence level (0.95).
	Level float64
}

// Bounded reports whether both ends of the interval are finite.
func (iv Interval) Bounded() bool { return !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) }

// String is the interval as the claims ledger prints it:
// "95% CI [1.04, 4.96], paired t, n = 5"; an unbounded one reads
// "95% CI unbounded (...)".
func (iv Interval) String() string {
	if !iv.Bounded() {
		return fmt.Sprintf("%.0f%% CI unbounded (the denominator is not distinguishable from 0), %s, n = %d", 100*iv.Level, iv.Method, iv.N)
	}
	return fmt.Sprintf("%.0f%% CI [%.2f, %.2f], %s, n = %d", 100*iv.Level, iv.Lo, iv.Hi, iv.Method, iv.N)
}

// Scale returns the interval with estimate and ends multiplied by k > 0
// (a fraction printed as a percentage).
func (iv Interval) Scale(k float64) Interval {
	iv.Estimate, iv.Lo, iv.Hi = k*iv.Estimate, k*iv.Lo, k*iv.Hi
	return iv
}

// ErrTooFew is returned when fewer than two pairs are given: one seed has
// no spread, so no interval.
var ErrTooFew = errors.New("stats: an interval needs at least 2 paired seeds")

// TQuantile returns the p quantile of Student's t distribution with nu
// degrees of freedom (gonum's distuv.StudentsT); t_{0.975,4} = 2.776.
func TQuantile(p float64, nu int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(p)
}

// MeanT is the t interval of the mean of d at the given level:
// mean ± t_{(1+level)/2, n-1} · s/√n, s the sample standard deviation.
// Applied to per-seed differences it is the paired t interval.
func MeanT(d []float64, level float64) (Interval, error) {
	if err := checkPairs(len(d), len(d), level, d); err != nil {
		return Interval{}, err
	}
	n := float64(len(d))
	m, v := meanVar(d)
	h := TQuantile((1+level)/2, len(d)-1) * math.Sqrt(v/n)
	return Interval{Estimate: m, Lo: m - h, Hi: m + h, N: len(d), Method: "paired t", Level: level}, nil
}

// PairedT is the paired t interval of mean(x - y): x[s] and y[s] are the
// same seed's values of two policies.
func PairedT(x, y []float64, level float64) (Interval, error) {
	if len(x) != len(y) {
		return Interval{}, fmt.Errorf("stats: paired samples of %d and %d values", len(x), len(y))
	}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	return MeanT(d, level)
}

// Fieller is Fieller's interval for the ratio θ = mean(a)/mean(b) of two
// paired samples (a[s], b[s] from the same seed): the set of θ at which
// the paired t test of a - θ·b does not reject mean 0 at the level, i.e.
//
//	(ā - θ b̄)² ≤ t² (s_aa - 2θ s_ab + θ² s_bb) / n,   t = t_{(1+level)/2, n-1},
//
// with s the sample (co)variances. When b̄ is not distinguishable from 0
// (b̄² ≤ t² s_bb/n) the set is unbounded and Fieller returns Lo = -Inf,
// Hi = +Inf (a superset of it when it is the complement of an interval):
// no ratio can be decided then. Estimate is ā/b̄.
func Fieller(a, b []float64, level float64) (Interval, error) {
	if len(a) != len(b) {
		return Interval{}, fmt.Errorf("stats: paired samples of %d and %d values", len(a), len(b))
	}
	if err := checkPairs(len(a), len(b), level, a); err != nil {
		return Interval{}, err
	}
	if err := checkPairs(len(a), len(b), level, b); err != nil {
		return Interval{}, err
	}
	n := float64(len(a))
	ma, saa := meanVar(a)
	mb, sbb := meanVar(b)
	var sab float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
	}
	sab /= n - 1
	t := TQuantile((1+level)/2, len(a)-1)
	q := t * t / n
	iv := Interval{Estimate: ma / mb, N: len(a), Method: "Fieller", Level: level, Lo: math.Inf(-1), Hi: math.Inf(1)}
	// A θ² + B θ + C ≤ 0 with A = b̄² - q s_bb, B = -2(ā b̄ - q s_ab),
	// C = ā² - q s_aa.
	A := mb*mb - q*sbb
	B := -2 * (ma*mb - q*sab)
	C := ma*ma - q*saa
	disc := B*B - 4*A*C
	if A <= 0 || disc < 0 {
		return iv, nil
	}
	r := math.Sqrt(disc)
	iv.Lo, iv.Hi = (-B-r)/(2*A), (-B+r)/(2*A)
	return iv, nil
}

func checkPairs(na, nb int, level float64, xs []float64) error {
	if na < 2 || nb < 2 {
		return ErrTooFew
	}
	if !(level > 0 && level < 1) {
		return fmt.Errorf("stats: confidence level %v not in (0, 1)", level)
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("stats: sample value %v is not finite", x)
		}
	}
	return nil
}

// MeanSD returns the sample mean of xs and its standard deviation with
// the n-1 denominator, sqrt(sum (x - mean)^2 / (n - 1)): 0 and 0 for no
// values, the value and 0 for one. It is the one mean/SD the blocks and
// the calibrations print.
func MeanSD(xs []float64) (mean, sd float64) {
	switch len(xs) {
	case 0:
		return 0, 0
	case 1:
		return xs[0], 0
	}
	m, v := meanVar(xs)
	return m, math.Sqrt(v)
}

// meanVar returns the mean and the sample variance (n-1 denominator) of
// at least two values.
func meanVar(xs []float64) (m, v float64) {
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, v / float64(len(xs)-1)
}

// Region is a criterion's acceptance set [Lo, Hi] of the quantity an
// interval estimates; ±Inf makes it one-sided. Its ends are fixed before
// any run.
type Region struct{ Lo, Hi float64 }

// AtLeast is the region [x, +Inf); AtMost is (-Inf, x]; Within is [-x, x].
func AtLeast(x float64) Region { return Region{Lo: x, Hi: math.Inf(1)} }

// AtMost is the region (-Inf, x].
func AtMost(x float64) Region { return Region{Lo: math.Inf(-1), Hi: x} }

// Within is the region [-x, x].
func Within(x float64) Region { return Region{Lo: -x, Hi: x} }

// Decision is what an interval says about a criterion.
type Decision int

const (
	// Straddles: the interval overlaps the region and its complement.
	Straddles Decision = iota
	// Inside: the whole interval lies in the region.
	Inside
	// Outside: the whole interval lies outside the region.
	Outside
)

func (d Decision) String() string {
	return [...]string{"straddles", "inside", "outside"}[d]
}

// Decide places iv against r: Inside when Lo >= r.Lo and Hi <= r.Hi,
// Outside when Hi < r.Lo or Lo > r.Hi, Straddles otherwise (an unbounded
// interval is never Inside a bounded region nor Outside any region that
// is not empty).
func Decide(iv Interval, r Region) Decision {
	switch {
	case iv.Lo >= r.Lo && iv.Hi <= r.Hi:
		return Inside
	case iv.Hi < r.Lo || iv.Lo > r.Hi:
		return Outside
	}
	return Straddles
}

// SeedsToDecide is the power rule behind the ledger's "seeds to decide":
// the smallest number of paired seeds n >= 2 at which the t interval of
// the mean of per-seed values with the observed mean m and sample
// standard deviation s would lie wholly on one side of the nearest end of
// r, the side m is on (inside r when m is, else outside). With δ the
// distance from m to that end and t_q(ν) Student's quantile,
//
//	n = min { n >= 2 : (t_{(1+level)/2}(n-1) + t_power(n-1)) · s/√n < δ }.
//
// At power 0.5 (t_0.5 = 0) it is the n at which an interval centred on
// the present estimate just clears the criterion: if the estimate and the
// SD stay where they are, n seeds decide the claim; since a new estimate
// falls on either side of the present one, that n decides it about half
// the time. At power 0.8 it is the usual sample size of a one-sample t
// test with 80% power at a true mean m (the central-t approximation of
// the non-central t). ok is false when no n would do: m lies on an end
// of r (δ = 0), or an argument is not finite or out of range. When s = 0
// and δ > 0, n = 2.
func SeedsToDecide(m, s float64, r Region, level, power float64) (n int, ok bool) {
	if math.IsNaN(m) || math.IsInf(m, 0) || math.IsNaN(s) || math.IsInf(s, 0) || s < 0 ||
		!(level > 0 && level < 1) || !(power >= 0.5 && power < 1) {
		return 0, false
	}
	delta := math.Min(math.Abs(m-r.Lo), math.Abs(r.Hi-m)) // ±Inf ends are never nearest
	if !(delta > 0) || math.IsInf(delta, 0) {
		return 0, false
	}
	if s == 0 {
		return 2, true
	}
	half := func(n int) float64 {
		t := TQuantile((1+level)/2, n-1)
		if power != 0.5 {
			t += TQuantile(power, n-1)
		}
		return t * s / math.Sqrt(float64(n))
	}
	// t_q(ν) >= z_q, so no n below the normal approximation's qualifies:
	// start there and walk up.
	z := distuv.UnitNormal.Quantile((1+level)/2) + distuv.UnitNormal.Quantile(power)
	start := math.Floor(z * z * s * s / (delta * delta))
	if start > maxSeedsToDecide {
		return 0, false
	}
	for n = max(2, int(start)); n <= maxSeedsToDecide; n++ {
		if half(n) < delta {
			return n, true
		}
	}
	return 0, false
}

// maxSeedsToDecide bounds SeedsToDecide's search: past a million seeds a
// claim is undecidable in practice, and SeedsToDecide says so (ok false).
const maxSeedsToDecide = 1_000_000
