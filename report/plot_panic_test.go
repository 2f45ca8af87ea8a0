package report

import (
	"math"
	"testing"
)

// TestLinePlotNeverPanics: values the plotting library cannot scale (a log
// axis spanning more than float64 can tick, subnormal values) give an
// error or a plot, never a panic.
func TestLinePlotNeverPanics(t *testing.T) {
	for _, ys := range [][]float64{
		{1e-300, 1e300},
		{math.SmallestNonzeroFloat64, 1},
		{1e-320, 1e-310},
		{math.MaxFloat64, math.MaxFloat64 / 2},
	} {
		lp := LinePlot{Title: "t", LogX: true, LogY: true, Series: []Series{{Name: "s", X: []float64{1, 2}, Y: ys}}}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Y %v: panic %v", ys, r)
				}
			}()
			lp.SVG()
		}()
	}
}
