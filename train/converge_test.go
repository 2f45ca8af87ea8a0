package train

import (
	"math"
	"testing"
)

// The plateau rule's mechanics on synthetic accuracy curves, at a window of
// 3 epochs, whose least-squares slope is (y3 - y1)/2 by hand.
func TestPlateauRule(t *testing.T) {
	for _, c := range []struct {
		name      string
		accs      []float64
		converged bool
		slope     float64
		lastGain  float64
	}{
		// The quick tier's FP32 on mnist-stack100, measured: 3 → 15 → 30.
		{"rising", []float64{3, 15, 30}, false, 13.5, 15},
		{"slow rise", []float64{60, 61, 62, 63, 64}, false, 1, 1},
		{"plateaued", []float64{40, 70, 80, 85, 85.2, 85.3}, true, 0.15, 0.1},
		// Last epoch +0.5 (a last-gain-under-0.5 rule would fail it), but the
		// window shows no rise.
		{"noisy plateau", []float64{70, 84.9, 85.6, 84.4, 84.9}, true, -0.35, 0.5},
		{"falling", []float64{80, 79, 78}, true, -1, -1},
		{"slope at the threshold", []float64{50, 50.5, 51}, false, 0.5, 0.5},
		{"too short", []float64{85, 85.1}, false, math.NaN(), 0.1},
		{"not finite", []float64{85, math.NaN(), 85}, false, math.NaN(), math.NaN()},
	} {
		got := PlateauRule{Window: 3, MaxSlope: 0.5}.Check(c.accs)
		if got.Converged != c.converged {
			t.Errorf("%s: converged %v, want %v (%+v)", c.name, got.Converged, c.converged, got)
		}
		if (math.IsNaN(c.slope) != math.IsNaN(got.Slope)) || (!math.IsNaN(c.slope) && math.Abs(got.Slope-c.slope) > 1e-9) {
			t.Errorf("%s: slope %v, want %v", c.name, got.Slope, c.slope)
		}
		if !math.IsNaN(c.lastGain) && math.Abs(got.LastGain-c.lastGain) > 1e-9 {
			t.Errorf("%s: last gain %v, want %v", c.name, got.LastGain, c.lastGain)
		}
		if got.Converged != (got.Reason == "") {
			t.Errorf("%s: converged %v with reason %q", c.name, got.Converged, got.Reason)
		}
	}
}

// A wider window fits a line: slope of 1, 2, 4, 3 (x = 0..3) is
// Σ(x-1.5)(y-2.5)/Σ(x-1.5)² = 4/5 = 0.8.
func TestPlateauRuleWindow4(t *testing.T) {
	r := PlateauRule{Window: 4, MaxSlope: 0.5}
	got := r.Check([]float64{0, 1, 2, 4, 3})
	// x-x̄ = -1.5 -0.5 0.5 1.5; y-ȳ = -1.5 -0.5 1.5 0.5; Σ = 2.25+0.25+0.75+0.75 = 4; Σx² = 5.
	if math.Abs(got.Slope-0.8) > 1e-12 || got.Converged {
		t.Errorf("got %+v, want slope 0.8, not converged", got)
	}
}
