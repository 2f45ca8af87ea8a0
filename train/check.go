package train

import (
	"fmt"
	"math"
	"reflect"

	"github.com/neuronfabric/nfabric/nn"
)

// cosineSlack is how far past ±1 a recorded cosine may lie: dot /
// sqrt(|u|^2 |m|^2) in float64 can exceed 1 by a few ulps, never by more.
const cosineSlack = 1e-9

// CheckConsistent reports the first place where a finished run contradicts
// itself or holds a value no run produces: a policy that does not parse
// or whose label is not its label; parameter counts out of range; traffic
// that is not the policy's on those counts (an FP32 run relabelled
// G-Binary still carries FP32's traffic); epochs not numbered 1, 2, ...;
// an accuracy outside [0, 1], a loss that is negative or not finite, a
// cosine outside [-1, 1]; a final accuracy that is not the last epoch's.
// Run's results pass; a result read back from a file (saved study runs,
// a reproduce shard) may not.
func (r Result) CheckConsistent() error {
	p, err := ParsePolicy(r.Policy)
	if err != nil {
		return err
	}
	if r.Label != p.Label() {
		return fmt.Errorf("label %q, but policy %s is %q", r.Label, r.Policy, p.Label())
	}
	if r.Params < 1 || r.Head < 0 || r.Head > r.Params {
		return fmt.Errorf("%d parameters with a head of %d: want params >= 1 and 0 <= head <= params", r.Params, r.Head)
	}
	var sizes PerGroup[int64]
	sizes[nn.Backbone], sizes[nn.Head] = int64(r.Params-r.Head), int64(r.Head)
	want := groupTraffic(sizes, p)
	if !reflect.DeepEqual(r.Traffic.Paper, want.Paper) || !reflect.DeepEqual(r.Traffic.Stored, want.Stored) {
		return fmt.Errorf("traffic ratio %v (paper accounting), but policy %s on %d parameters (head %d) sends %v", r.Traffic.Paper.Ratio, r.Policy, r.Params, r.Head, want.Paper.Ratio)
	}
	if s := r.Traffic.ScaleBits; s < 0 || math.IsNaN(s) || math.Mod(s, 32) != 0 {
		return fmt.Errorf("scale agreement of %v bits: want a multiple of 32 >= 0", s)
	}
	if len(r.Epochs) == 0 {
		return fmt.Errorf("no epochs")
	}
	for i, e := range r.Epochs {
		switch {
		case e.Epoch != i+1:
			return fmt.Errorf("epoch %d is numbered %d", i+1, e.Epoch)
		case !unit(e.ValAcc) || !unit(e.TrainAcc):
			return fmt.Errorf("epoch %d: accuracies %v (validation) and %v (training), want both in [0, 1]", e.Epoch, e.ValAcc, e.TrainAcc)
		case !loss(e.TrainLoss) || !loss(e.ValLoss):
			return fmt.Errorf("epoch %d: losses %v (training) and %v (validation), want both finite and >= 0", e.Epoch, e.TrainLoss, e.ValLoss)
		}
	}
	if last := r.Epochs[len(r.Epochs)-1].ValAcc; r.Final != last {
		return fmt.Errorf("final accuracy %v, but the last epoch's validation accuracy is %v", r.Final, last)
	}
	for i, s := range r.Steps {
		if s.Epoch < 1 || s.Epoch > len(r.Epochs) || !unit(s.Acc) || !loss(s.Loss) {
			return fmt.Errorf("step %d: epoch %d, accuracy %v, loss %v out of range", i+1, s.Epoch, s.Acc, s.Loss)
		}
	}
	for _, d := range r.Diags {
		if d.Epoch < 1 || d.Epoch > len(r.Epochs) || d.Steps < 0 {
			return fmt.Errorf("diagnostics of epoch %d over %d steps: out of range", d.Epoch, d.Steps)
		}
		cs := []Cosines{d.Binary, d.Ternary}
		if d.Formats != nil {
			cs = append(cs, d.Formats[:]...)
		}
		for _, c := range cs {
			for _, v := range append([]float64{c.Global}, c.Groups[:]...) {
				if !(math.Abs(v) <= 1+cosineSlack) {
					return fmt.Errorf("diagnostics of epoch %d: cosine %v outside [-1, 1]", d.Epoch, v)
				}
			}
		}
	}
	if r.Timing.Steps < 0 || r.Timing.ControllerTransactions < 0 {
		return fmt.Errorf("timing: %d steps, %d controller transactions", r.Timing.Steps, r.Timing.ControllerTransactions)
	}
	return nil
}

// unit reports whether v is a fraction in [0, 1].
func unit(v float64) bool { return v >= 0 && v <= 1 }

// loss reports whether v is a finite loss >= 0.
func loss(v float64) bool { return v >= 0 && v <= math.MaxFloat64 }
