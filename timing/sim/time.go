package sim

import (
	"fmt"
	"math"
)

// Time is simulated time in integer picoseconds. Integer time makes event
// order exact: two events at the same Time run in the order they were
// scheduled (see Engine), never in an order that depends on rounding.
type Time int64

// Time units.
const (
	Picosecond  Time = 1
	Nanosecond       = 1000 * Picosecond
	Microsecond      = 1000 * Nanosecond
	Millisecond      = 1000 * Microsecond
	Second           = 1000 * Millisecond
)

// Never is later than any reachable simulated time.
const Never = Time(math.MaxInt64)

// NS returns t in nanoseconds.
func (t Time) NS() float64 { return float64(t) / float64(Nanosecond) }

// String prints t in the largest unit that keeps it at or above 1, e.g.
// "465ps", "212.966ns", "1.5ms".
func (t Time) String() string {
	a := t
	if a < 0 {
		a = -a
	}
	switch {
	case a >= Second:
		return fmt.Sprintf("%gs", float64(t)/float64(Second))
	case a >= Millisecond:
		return fmt.Sprintf("%gms", float64(t)/float64(Millisecond))
	case a >= Microsecond:
		return fmt.Sprintf("%gus", float64(t)/float64(Microsecond))
	case a >= Nanosecond:
		return fmt.Sprintf("%gns", float64(t)/float64(Nanosecond))
	}
	return fmt.Sprintf("%dps", int64(t))
}

// FromNS converts nanoseconds to Time, rounding to the nearest picosecond.
func FromNS(ns float64) Time { return Time(math.Round(ns * float64(Nanosecond))) }
