package control

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// TestCalibrateCUSUMHand checks a record small enough to calibrate by
// hand: losses 1, 1, 2, 1 with weight 0.5 give the excess 0, 1, -1/3
// (averages 1, 1, 1.5), mean 2/9, sd sqrt(39)/9; K = 2 sd, and the CUSUM
// never rises above 0 (every excess is below K), so H = 5 sd.
func TestCalibrateCUSUMHand(t *testing.T) {
	c, err := CalibrateCUSUM([]float64{1, 1, 2, 1}, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(39) / 9
	want := LossCalibration{K: 2 * sd, H: 5 * sd, Mean: 2.0 / 9, SD: sd, MaxS: 0, Steps: 3}
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
		out[i] = (0.3 + 1.5*math.Exp(-float64(i)/150)) * math.Exp(0.15*r.NormFloat64())
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
	paper := []lowbit.Format{lowbit.Binary, lowbit.Ternary}
	for _, tc := range []struct {
		bin, ter float64
		want     Ladder
	}{
		{0.612, 0.498, Ladder{{lowbit.Binary, 0.6}, {lowbit.Ternary, 0.45}}},
		{0.45, 0.35, Ladder{{lowbit.Binary, 0.45}, {lowbit.Ternary, 0.35}}}, // on the grid: unchanged
		{0.0499, 0.001, Ladder{{lowbit.Binary, 0}, {lowbit.Ternary, 0}}},
		{-0.03, 1, Ladder{{lowbit.Binary, -0.05}, {lowbit.Ternary, 1}}},
	} {
		cos := cosOf(tc.bin, tc.ter, math.NaN(), math.NaN())
		got, err := CalibrateLadder(paper, cos)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("CalibrateLadder(%v, %v) = %+v, %v; want %+v", tc.bin, tc.ter, got, err, tc.want)
		}
		// The calibration group itself passes its rungs: G-Binary's first.
		if f, why := got.Admit(cos); f != lowbit.Binary {
			t.Errorf("CalibrateLadder(%v, %v): the calibration cosines are admitted to %v (%s)", tc.bin, tc.ter, f, why)
		}
	}
	for _, bad := range [][2]float64{{math.NaN(), 0}, {0, 1.5}, {-2, 0}} {
		if _, err := CalibrateLadder(paper, cosOf(bad[0], bad[1], 0, 0)); err == nil {
			t.Errorf("CalibrateLadder(%v) accepted", bad)
		}
	}
	if _, err := CalibrateLadder([]lowbit.Format{lowbit.FP32}, cosOf(0, 0, 0, 0)); err == nil {
		t.Error("an FP32 rung calibrated")
	}
}

// TestCalibrateCUSUMMargin checks both branches of H, with max S
// recomputed here by a plain loop (weight 1: the average is the previous
// loss, so the excess is loss_t / loss_{t-1} - 1). Excess 0 nine times and
// then 1, 1 (losses 1 x 10, 2, 4): mean 2/11, sd 0.4045, K = 0.809, the
// CUSUM ends at 2(1 - K) = 0.382, below 5 sd = 2.02, so H = 5 sd; one jump
// of 3 (losses 1 x 10, 4): sd 0.949, S = 3 - 2 sd = 1.10 < 5 sd. Ninety
// flat steps and then ten rises of 10% (S grows by about 0.04 a step over
// K = 0.06) outgrow 5 sd, and H is twice the largest sum.
func TestCalibrateCUSUMMargin(t *testing.T) {
	for _, losses := range [][]float64{
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4},
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4},
	} {
		c, err := CalibrateCUSUM(losses, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		var xs []float64
		for i := 1; i < len(losses); i++ {
			xs = append(xs, losses[i]/losses[i-1]-1)
		}
		m, ss := 0.0, 0.0
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		sd := math.Sqrt(ss / float64(len(xs)-1))
		s, maxS := 0.0, 0.0
		for _, x := range xs {
			s = math.Max(0, s+x-2*sd)
			maxS = math.Max(maxS, s)
		}
		wantH := math.Max(5*sd, 2*maxS)
		if math.Abs(c.K-2*sd) > 1e-12 || math.Abs(c.MaxS-maxS) > 1e-12 || math.Abs(c.H-wantH) > 1e-12 {
			t.Errorf("losses %v: got %+v; want K %v, max S %v, H %v", losses, c, 2*sd, maxS, wantH)
		}
	}
	losses := []float64{1}
	for i := 0; i < 90; i++ {
		losses = append(losses, 1)
	}
	for i := 0; i < 10; i++ {
		losses = append(losses, losses[len(losses)-1]*1.1)
	}
	c, err := CalibrateCUSUM(losses, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.MaxS*2 > 5*c.SD) || math.Abs(c.H-2*c.MaxS) > 1e-12 {
		t.Errorf("steady rise: got %+v; want H = 2 max S > 5 sd", c)
	}
}
