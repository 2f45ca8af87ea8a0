package pilot

import (
	"fmt"
	"math"
	"slices"
)

// CheckConsistent reports the first place where a pilot's result
// contradicts itself or holds a value no run produces: epochs not numbered
// 1, 2, ...; an accuracy, low-bit share or traffic ratio outside [0, 1]; a
// loss that is negative or not finite; a step count that is not its
// losses'; a cosine outside [-1, 1]; a final accuracy that is not the last
// epoch's. Run's results pass; one read back from a shard may not.
func (r Result) CheckConsistent() error {
	if len(r.Epochs) == 0 {
		return fmt.Errorf("no epochs")
	}
	for i, e := range r.Epochs {
		switch {
		case e.Epoch != i+1:
			return fmt.Errorf("epoch %d is numbered %d", i+1, e.Epoch)
		case !unit(e.ValAcc) || !unit(e.Traffic) || slices.ContainsFunc(e.LowBit[:], func(v float64) bool { return !unit(v) }):
			return fmt.Errorf("epoch %d: accuracy %v, traffic %v, low-bit shares %v: want each in [0, 1]", e.Epoch, e.ValAcc, e.Traffic, e.LowBit)
		case !(e.TrainLoss >= 0 && e.TrainLoss <= math.MaxFloat64):
			return fmt.Errorf("epoch %d: loss %v, want finite and >= 0", e.Epoch, e.TrainLoss)
		}
	}
	if last := r.Epochs[len(r.Epochs)-1].ValAcc; r.Final != last {
		return fmt.Errorf("final accuracy %v, but the last epoch's is %v", r.Final, last)
	}
	switch {
	case !unit(r.LowBitSteps) || !unit(r.Traffic):
		return fmt.Errorf("low-bit share %v and traffic %v: want both in [0, 1]", r.LowBitSteps, r.Traffic)
	case r.Steps != len(r.Losses):
		return fmt.Errorf("%d steps with %d losses", r.Steps, len(r.Losses))
	case r.Alarms < 0 || r.LatchOps < 0 || r.VelocityResets < 0:
		return fmt.Errorf("negative counts: %d alarms, %d latch writes, %d velocity resets", r.Alarms, r.LatchOps, r.VelocityResets)
	}
	for i, l := range r.Losses {
		if !(l >= 0 && l <= math.MaxFloat64) {
			return fmt.Errorf("step %d: loss %v, want finite and >= 0", i+1, l)
		}
	}
	ds := r.Diags
	if r.Warmup != nil {
		ds = append(ds[:len(ds):len(ds)], *r.Warmup)
	}
	for _, d := range ds {
		for _, v := range slices.Concat([]float64{d.Binary.Global, d.Ternary.Global}, d.Binary.Groups[:], d.Ternary.Groups[:]) {
			if !(math.Abs(v) <= 1+1e-9) {
				return fmt.Errorf("diagnostics of step %d: cosine %v outside [-1, 1]", d.Step, v)
			}
		}
	}
	return nil
}

// unit reports whether v is a fraction in [0, 1].
func unit(v float64) bool { return v >= 0 && v <= 1 }
