package control_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Calibrate the Supervisor's CUSUM on a fault-free loss record and the
// ladder on the backbone's warm-up cosines, then run a plane with both
// (K and H checked by hand: a Python loop over the same record gives
// 0.05320 and 0.13301).
func ExampleCalibrateCUSUM() {
	record := []float64{2.0, 1.8, 1.7, 1.75, 1.6, 1.55, 1.6, 1.5, 1.45, 1.5, 1.4, 1.42}
	lc, err := control.CalibrateCUSUM(record, 0.2, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	var warmup [lowbit.NumFormats]float64
	warmup[lowbit.Binary], warmup[lowbit.Ternary] = 0.623, 0.499
	ladder, err := control.CalibrateLadder([]lowbit.Format{lowbit.Binary, lowbit.Ternary}, warmup)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("K %.3f H %.3f over %d steps; ladder %.2f / %.2f\n", lc.K, lc.H, lc.Steps, ladder[0].Min, ladder[1].Min)

	cfg := control.DefaultConfig("backbone")
	cfg.LossK, cfg.LossH, cfg.LossAlpha, cfg.Ladder = lc.K, lc.H, 0.2, ladder
	cfg.Default, cfg.WarmupSteps = control.LowBitDefault, 2
	plane, err := control.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The record itself raises no alarm; a loss that doubles does.
	for i, l := range append(record, 3, 3) {
		if _, err := plane.Step(control.Event{Type: control.EvStep, Step: int64(i)}); err != nil {
			fmt.Println(err)
			return
		}
		if _, err := plane.Step(control.Event{Type: control.EvLoss, Step: int64(i), Loss: l}); err != nil {
			fmt.Println(err)
			return
		}
		if plane.Alarms() > 0 {
			fmt.Println("alarm at step", i)
			break
		}
	}
	// Output:
	// K 0.053 H 0.133 over 10 steps; ladder 0.60 / 0.45
	// alarm at step 12
}
