package report

import (
	"math"
	"strconv"
)

// timeUnits are the units FormatSeconds and TimeUnit choose from, largest
// first, with their size in seconds.
var timeUnits = []struct {
	name string
	size float64
}{{"s", 1}, {"ms", 1e-3}, {"µs", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}}

// FormatSeconds prints a time given in seconds with three significant
// digits in the largest unit (s, ms, µs, ns, ps) in which it is at least
// 1: 0.08731 prints as "87.3 ms", 4.1e-5 as "41.0 µs". It is the one
// formatting of times in tables, so a small time never prints as "0.04" in
// a column fixed to a larger unit. Times of 1000 s and more print in
// seconds without decimals; zero prints as "0 s".
func FormatSeconds(s float64) string {
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return strconv.FormatFloat(s, 'g', -1, 64) + " s"
	}
	r := roundSig(s, 3)
	for _, u := range timeUnits {
		if v := math.Abs(r) / u.size; v >= 1 || u.name == "ps" {
			return fixed3(r/u.size) + " " + u.name
		}
	}
	panic("unreachable")
}

// TimeUnit chooses the unit of an axis or column whose largest magnitude
// is maxSeconds: the largest unit in which maxSeconds is at least 1. Divide
// seconds by size to express them in it.
func TimeUnit(maxSeconds float64) (name string, size float64) {
	for _, u := range timeUnits {
		if math.Abs(maxSeconds) >= u.size {
			return u.name, u.size
		}
	}
	last := timeUnits[len(timeUnits)-1]
	return last.name, last.size
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(n-1)-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// fixed3 prints v with as many decimals as three significant digits need
// (v is already rounded to them): 2.00, 87.3, 100, 1234.
func fixed3(v float64) string {
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if d < 0 {
		d = 0
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}
