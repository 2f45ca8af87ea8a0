package control

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCalibrateCUSUMHand checks a record small enough to calibrate by
// hand: losses 1, 1, 2, 1 with weight 0.5 give the excess 0, 1, -1/3
// (averages 1, 1, 1.5), mean 2/9, sd sqrt(39)/9; K = mean + 2 sd, and the
// CUSUM never rises above 0, so H = 5 sd.
func TestCalibrateCUSUMHand(t *testing.T) {
	c, err := CalibrateCUSUM([]float64{1, 1, 2, 1}, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(39) / 9
	want := LossCalibration{K: 2.0/9 + 2*sd, H: 5 * sd, Mean: 2.0 / 9, SD: sd, MaxS: 0, Steps: 3}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"K", c.K, want.K}, {"H", c.H, want.H}, {"mean", c.Mean, want.Mean}, {"sd", c.SD, want.SD}, {"max S", c.MaxS, want.MaxS}} {
		if math.Abs(f.got-f.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if c.Steps != want.Steps {
		t.Errorf("steps %d, want %d", c.Steps, want.Steps)
	}
}

// noisyRecord is a falling loss with multiplicative per-batch noise, the
// shape of a fault-free training record.
func noisyRecord(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = (0.2 + 2*math.Exp(-float64(i)/40)) * math.Exp(0.15*r.NormFloat64())
	}
	return out
}

// TestCalibrateCUSUMBehaviour checks what the calibration is for, with
// the Supervisor itself as the judge: a plane configured with the
// calibrated K and H does not alarm on the record it was calibrated on,
// nor on a fresh fault-free record of the same kind, and alarms within a
// few steps once the loss doubles (a degradation window). The margin
// rule holds: the record's largest sum is at most H / CUSUMMargin.
func TestCalibrateCUSUMBehaviour(t *testing.T) {
	const warm, alpha = 20, 0.05
	rec := noisyRecord(200, 1)
	c, err := CalibrateCUSUM(rec, alpha, warm)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxS > c.H/CUSUMMargin+1e-12 || c.H < CUSUMThresholdSD*c.SD {
		t.Fatalf("H %v violates the margin rule (max S %v, sd %v)", c.H, c.MaxS, c.SD)
	}
	alarms := func(losses []float64) (first int) {
		cfg := DefaultConfig("g")
		cfg.Default, cfg.WarmupSteps, cfg.LossK, cfg.LossH, cfg.LossAlpha = LowBitDefault, 0, c.K, c.H, alpha
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range losses {
			if _, err := p.Step(Event{Type: EvStep, Step: int64(i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Step(Event{Type: EvLoss, Step: int64(i), Loss: l}); err != nil {
				t.Fatal(err)
			}
			if i >= warm && p.Alarms() > 0 {
				return i
			}
		}
		return -1
	}
	if s := alarms(rec); s >= 0 {
		t.Errorf("the calibration record alarms at step %d", s)
	}
	fresh := noisyRecord(200, 2)
	if s := alarms(fresh); s >= 0 {
		t.Errorf("a fresh fault-free record alarms at step %d", s)
	}
	faulty := append([]float64(nil), fresh...)
	for i := 100; i < 130; i++ {
		faulty[i] *= 2
	}
	if s := alarms(faulty); s < 100 || s > 110 {
		t.Errorf("doubled loss from step 100: first alarm at step %d, want 100-110", s)
	}
}

func TestCalibrateCUSUMErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		losses []float64
		alpha  float64
	}{
		{"alpha 0", []float64{1, 2, 3}, 0},
		{"alpha above 1", []float64{1, 2, 3}, 1.5},
		{"NaN loss", []float64{1, math.NaN(), 3}, 0.5},
		{"negative loss", []float64{1, -1, 3}, 0.5},
		{"too short", []float64{1, 2}, 0.5},
		{"constant", []float64{1, 1, 1, 1}, 0.5},
	} {
		if _, err := CalibrateCUSUM(tc.losses, tc.alpha, 1); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestCalibrateLadder(t *testing.T) {
	for _, tc := range []struct {
		bin, ter float64
		want     Ladder
	}{
		{0.612, 0.498, Ladder{BinaryMin: 0.6, TernaryMin: 0.45}},
		{0.45, 0.35, Ladder{BinaryMin: 0.45, TernaryMin: 0.35}}, // on the grid: unchanged
		{0.0499, 0.001, Ladder{BinaryMin: 0, TernaryMin: 0}},
		{-0.03, 1, Ladder{BinaryMin: -0.05, TernaryMin: 1}},
	} {
		got, err := CalibrateLadder(tc.bin, tc.ter)
		if err != nil || got != tc.want {
			t.Errorf("CalibrateLadder(%v, %v) = %+v, %v; want %+v", tc.bin, tc.ter, got, err, tc.want)
		}
		// The calibration group itself passes both rungs.
		if m, _ := got.Admit(tc.bin, tc.bin); !m.LowBit() {
			t.Errorf("CalibrateLadder(%v, %v): the calibration cosine is not admitted", tc.bin, tc.ter)
		}
	}
	for _, bad := range [][2]float64{{math.NaN(), 0}, {0, 1.5}, {-2, 0}} {
		if _, err := CalibrateLadder(bad[0], bad[1]); err == nil {
			t.Errorf("CalibrateLadder(%v) accepted", bad)
		}
	}
}

// TestCalibrateCUSUMFalling checks the floor on K: losses that halve nine
// times and then hold (weight 1: the average is the previous loss) have
// excess -1/2 nine times and 0 once: mean -0.45, sd sqrt(0.025), so
// mean + 2 sd < 0 and K is 0; the CUSUM of non-positive excesses stays 0,
// and H is 5 sd.
func TestCalibrateCUSUMFalling(t *testing.T) {
	losses := []float64{1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 2}
	c, err := CalibrateCUSUM(losses, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(0.025)
	if c.K != 0 || c.MaxS != 0 || math.Abs(c.H-5*sd) > 1e-12 || math.Abs(c.Mean+0.45) > 1e-12 {
		t.Errorf("got %+v; want K 0, max S 0, H %v, mean -0.45", c, 5*sd)
	}
}
