package stats

import (
	"errors"
	"math"
	"testing"
)

// Student's t quantiles from a printed table (two-sided 95%: the 0.975
// quantile).
func TestTQuantileTable(t *testing.T) {
	for _, c := range []struct {
		nu   int
		want float64
	}{{1, 12.706}, {2, 4.303}, {4, 2.776}, {9, 2.262}, {29, 2.045}} {
		if got := TQuantile(0.975, c.nu); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("t_{0.975,%d} = %.4f, table %.3f", c.nu, got, c.want)
		}
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Hand-computed paired t intervals: d = x - y, mean ± t_{0.975,n-1} s/√n.
func TestPairedTHand(t *testing.T) {
	for _, c := range []struct {
		name   string
		x, y   []float64
		lo, hi float64
	}{
		// d = 1..5: mean 3, s² = 2.5, s/√5 = 0.70711, t = 2.776445.
		{"d=1..5", []float64{11, 12, 13, 14, 15}, []float64{10, 10, 10, 10, 10}, 1.03676, 4.96324},
		// d = 0.5, 1.5, -0.5, 2.5, 1: mean 1, s² = 1.25, s/√5 = 0.5.
		{"straddles 2", []float64{70.5, 71.5, 69.5, 72.5, 71}, []float64{70, 70, 70, 70, 70}, 1 - 2.776445*0.5, 1 + 2.776445*0.5},
		// n = 2: d = 1, 3: mean 2, s = √2, s/√2 = 1, t_{0.975,1} = 12.7062.
		{"n=2", []float64{1, 3}, []float64{0, 0}, 2 - 12.7062, 2 + 12.7062},
	} {
		iv, err := PairedT(c.x, c.y, Level)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !near(iv.Lo, c.lo, 1e-3) || !near(iv.Hi, c.hi, 1e-3) || iv.N != len(c.x) || iv.Method != "paired t" {
			t.Errorf("%s: got %+v, want [%.4f, %.4f]", c.name, iv, c.lo, c.hi)
		}
	}
}

func TestPairedTErrors(t *testing.T) {
	if _, err := PairedT([]float64{1}, []float64{2}, Level); !errors.Is(err, ErrTooFew) {
		t.Errorf("one seed: %v, want ErrTooFew", err)
	}
	if _, err := PairedT([]float64{1, 2}, []float64{2}, Level); err == nil {
		t.Error("unequal lengths accepted")
	}
	if _, err := PairedT([]float64{1, math.NaN()}, []float64{2, 2}, Level); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := MeanT([]float64{1, 2}, 1); err == nil {
		t.Error("level 1 accepted")
	}
}

// Fieller's interval, hand-computed: a = 8..12, b = 16 14 18 22 20:
// ā = 10, b̄ = 18, s_aa = 2.5, s_bb = 10, s_ab = 4, q = t²/5 = 1.541714;
// A = 324 - 10q, B = -2(180 - 4q), C = 100 - 2.5q, roots 0.48739 and
// 0.63926 (also found by bisection on the t statistic of a - θb).
func TestFiellerHand(t *testing.T) {
	a := []float64{8, 9, 10, 11, 12}
	b := []float64{16, 14, 18, 22, 20}
	iv, err := Fieller(a, b, Level)
	if err != nil {
		t.Fatal(err)
	}
	if !near(iv.Estimate, 10.0/18, 1e-12) || !near(iv.Lo, 0.48739, 1e-4) || !near(iv.Hi, 0.63926, 1e-4) {
		t.Fatalf("got %+v, want [0.48739, 0.63926]", iv)
	}
	// The ends are where the paired t interval of a - θb touches 0 (the
	// definition, through MeanT: a different code path).
	for _, th := range []float64{iv.Lo, iv.Hi} {
		d := make([]float64, len(a))
		for i := range a {
			d[i] = a[i] - th*b[i]
		}
		m, err := MeanT(d, Level)
		if err != nil {
			t.Fatal(err)
		}
		if !near(m.Lo, 0, 1e-9) && !near(m.Hi, 0, 1e-9) {
			t.Errorf("θ = %g: t interval of a - θb is [%g, %g], want an end at 0", th, m.Lo, m.Hi)
		}
	}
	// Against "recovers at least half": straddles, so inconclusive.
	if d := Decide(iv, AtLeast(0.5)); d != Straddles {
		t.Errorf("Decide = %v, want straddles", d)
	}
}

// A denominator indistinguishable from 0 gives an unbounded interval,
// which decides nothing.
func TestFiellerUnbounded(t *testing.T) {
	iv, err := Fieller([]float64{1, 2, 3}, []float64{-1, 0.5, 1}, Level)
	if err != nil {
		t.Fatal(err)
	}
	if iv.Bounded() {
		t.Fatalf("got bounded %+v", iv)
	}
	for _, r := range []Region{AtLeast(0.5), AtMost(0.5), Within(1)} {
		if d := Decide(iv, r); d != Straddles {
			t.Errorf("%+v: %v, want straddles", r, d)
		}
	}
}

func TestDecide(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		iv   Interval
		r    Region
		want Decision
	}{
		{Interval{Lo: -1, Hi: 1.5}, Within(2), Inside},
		{Interval{Lo: -0.39, Hi: 2.39}, Within(2), Straddles},
		{Interval{Lo: 2.1, Hi: 4}, Within(2), Outside},
		{Interval{Lo: -4, Hi: -2.1}, Within(2), Outside},
		{Interval{Lo: 6, Hi: 9}, AtLeast(5), Inside},
		{Interval{Lo: 1, Hi: 4.9}, AtLeast(5), Outside},
		{Interval{Lo: 4, Hi: 6}, AtLeast(5), Straddles},
		{Interval{Lo: -inf, Hi: inf}, AtLeast(5), Straddles},
		{Interval{Lo: -3, Hi: -0.1}, AtMost(0), Inside},
	} {
		if got := Decide(c.iv, c.r); got != c.want {
			t.Errorf("Decide(%+v, %+v) = %v, want %v", c.iv, c.r, got, c.want)
		}
	}
}

func TestIntervalString(t *testing.T) {
	iv := Interval{Estimate: 3, Lo: 1.036, Hi: 4.963, N: 5, Method: "paired t", Level: 0.95}
	if got, want := iv.String(), "95% CI [1.04, 4.96], paired t, n = 5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSeedsToDecideByHand checks the power rule against n worked out from
// printed t tables: with m = 1.5 and s = 1 against [-2, 2] (δ = 0.5),
// t(0.975, 16)/√17 = 2.1199/4.1231 = 0.514 and t(0.975, 17)/√18 =
// 2.1098/4.2426 = 0.497, so n = 18; the same by symmetry for m = 3, s = 2
// outside [-2, 2] (δ = 1); with m = 4, s = 3 against [5, ∞) (δ = 1),
// t(0.975, 36)·3/√37 = 2.0281·3/6.0828 = 1.0003 and t(0.975, 37)·3/√38 =
// 2.0262·3/6.1644 = 0.9861, so n = 38; at 80% power and m = 1.5, s = 1,
// (t(0.975, 32) + t(0.8, 32))/√33 = (2.0369 + 0.8530)/5.7446 = 0.5031 and
// (t(0.975, 33) + t(0.8, 33))/√34 = (2.0345 + 0.8527)/5.8310 = 0.4952,
// so n = 34.
func TestSeedsToDecideByHand(t *testing.T) {
	for _, c := range []struct {
		m, s  float64
		r     Region
		power float64
		n     int
		ok    bool
	}{
		{1.5, 1, Within(2), 0.5, 18, true},
		{-1.5, 1, Within(2), 0.5, 18, true},
		{3, 2, Within(2), 0.5, 18, true},
		{4, 3, AtLeast(5), 0.5, 38, true},
		{1.5, 1, Within(2), 0.8, 34, true},
		{1, 0, AtLeast(0), 0.5, 2, true},
		{2, 1, Within(2), 0.5, 0, false},           // on the boundary: no n decides it
		{0, 1e-9, AtLeast(1), 0.5, 2, true},        // tiny SD
		{0.5, 1e3, AtLeast(0.5001), 0.5, 0, false}, // beyond a million seeds
		{math.NaN(), 1, Within(2), 0.5, 0, false},
		{1, -1, Within(2), 0.5, 0, false},
		{1, 1, Within(2), 0.4, 0, false},
	} {
		n, ok := SeedsToDecide(c.m, c.s, c.r, Level, c.power)
		if n != c.n || ok != c.ok {
			t.Errorf("SeedsToDecide(%g, %g, %v, power %g) = %d, %v; want %d, %v", c.m, c.s, c.r, c.power, n, ok, c.n, c.ok)
		}
	}
}

// TestSeedsToDecideClears: at the n the rule returns, an interval of n
// values with the same mean and SD lies on the decided side (MeanT and
// Decide agree), and at n - 1 it does not.
func TestSeedsToDecideClears(t *testing.T) {
	sample := func(n int, m, s float64) []float64 {
		// n values with mean m and sample SD s exactly: ±a around m.
		d := make([]float64, n)
		a := s * math.Sqrt(float64(n-1)/float64(n))
		for i := range d {
			d[i] = m + a
			if i%2 == 1 {
				d[i] = m - a
			}
		}
		if n%2 == 1 { // odd: one value at m, the rest ±b
			b := s * math.Sqrt(float64(n-1)/float64(n-1))
			for i := range d {
				d[i] = m + b
				if i%2 == 1 {
					d[i] = m - b
				}
			}
			d[n-1] = m
		}
		return d
	}
	for _, c := range []struct {
		m, s float64
		r    Region
		want Decision
	}{{-1.66, 1.28, Within(2), Inside}, {13.5, 4.5, AtLeast(5), Inside}, {0.45, 0.3, AtLeast(0.5), Outside}} {
		n, ok := SeedsToDecide(c.m, c.s, c.r, Level, 0.5)
		if !ok {
			t.Fatalf("%+v: no n", c)
		}
		for _, k := range []int{n - 1, n} {
			iv, err := MeanT(sample(k, c.m, c.s), Level)
			if err != nil {
				t.Fatal(err)
			}
			if got := Decide(iv, c.r); (got == c.want) != (k == n) {
				t.Errorf("%+v: n = %d; at %d seeds the interval %v is %v", c, n, k, iv, got)
			}
		}
	}
}

// TestMeanSD checks the one mean/SD against hand-computed values: the
// classic {2, 4, 4, 4, 5, 5, 7, 9} has mean 5 and squared deviations
// summing to 32, so the n-1 SD is sqrt(32/7); one value has no spread
// and no values give zeros.
func TestMeanSD(t *testing.T) {
	for _, tc := range []struct {
		xs       []float64
		mean, sd float64
	}{
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7)},
		{[]float64{1, 3}, 2, math.Sqrt2},
		{[]float64{-0.5}, -0.5, 0},
		{nil, 0, 0},
	} {
		m, s := MeanSD(tc.xs)
		if math.Abs(m-tc.mean) > 1e-15 || math.Abs(s-tc.sd) > 1e-15 {
			t.Errorf("MeanSD(%v) = %v, %v; want %v, %v", tc.xs, m, s, tc.mean, tc.sd)
		}
	}
}
