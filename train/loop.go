package train

import (
	"context"
	"fmt"
	"time"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// Loop is the one training loop every driver runs (Run, the control-plane
// pilots of package pilot, and any future driver): per epoch, the
// Stepper's batches; per step, forward and backward of W shards, the
// Aggregator's update direction, SGD with each group's learning rate;
// per epoch, validation on the test split. Drivers add their own work
// through Hooks; the mechanics above, and the rules below, live only here.
//
// Learning rate: each step, group g trains with Config.RuleLR of the rule
// the aggregation applied to g that step (for a latched aggregator, the
// rule its latches selected), times Config.Schedule's factor of the step,
// which is the same for every group and every rule.
//
// Velocity reset: when the rule of a group differs from the rule it had on
// the loop's previous step, the group's SGD velocity is cleared before the
// update. The velocity accumulates update directions, whose scale differs
// by orders of magnitude between a sign vote (|d| = 1) and an FP32 mean,
// so carrying it across a switch would turn the last sign steps into a
// huge FP32 step (we saw training diverge that way); a runtime switching
// precision would re-initialise that optimizer state too. A fixed policy
// never switches, so it never resets. FP32, Int8 and BFP8 all apply the
// mean (Int8 and BFP8 approximate it), so a switch among them keeps the
// velocity.
//
// A Loop is not safe for concurrent use; the Stepper parallelises each
// step over the workers.
type Loop struct {
	Stepper *Stepper
	Agg     *Aggregator
	Opt     *nn.SGD
	// Test is the validation split, evaluated after every epoch.
	Test  *data.Dataset
	Hooks Hooks
	// Timing accumulates wall-clock time per phase; Timing.Diag is the
	// time spent in AfterAggregate hooks.
	Timing Timing
	// VelocityResets counts group rule switches, at each of which the
	// group's velocity was cleared.
	VelocityResets int

	cfg     Config
	dst     [][]float32
	prev    Policy
	stepped bool
	steps   int
}

// Hooks are a driver's points of entry into a Loop. A nil hook is skipped;
// an error from a hook stops the loop and is returned, wrapped with the
// epoch and step.
type Hooks struct {
	// BeforeStep runs before forward and backward, with the batch in
	// Stepper.X and Stepper.Y (s.N images); it may rewrite the labels
	// or the aggregator's mode latches. s.Loss, s.Correct, s.Policy and
	// s.LRFactor are not set yet.
	BeforeStep func(s *Step) error
	// AfterAggregate runs once the step's update direction is aggregated
	// and applied by SGD; the workers' gradients (Stepper.Grads) and the
	// aggregator's FP32 mean are still those of the step.
	AfterAggregate func(s *Step) error
	// EndEpoch runs after the epoch's validation.
	EndEpoch func(e *EpochStat) error
}

// Step is one step of a Loop.
type Step struct {
	// Epoch is 1-based; Index counts the loop's steps from 0 across epochs
	// (the step clock); InEpoch counts the epoch's steps from 1; Batches is
	// the number of steps in the epoch.
	Epoch, Index, InEpoch, Batches int
	// N is the number of images of the batch.
	N int
	// Loss is the batch's mean training loss and Correct the number of
	// images classified correctly, before the update.
	Loss    float64
	Correct int
	// Policy is the aggregation the step applied, per group.
	Policy Policy
	// LRFactor is the schedule's factor the step's rates were multiplied
	// by (Config.Schedule; 1 when constant).
	LRFactor float64
}

// NewLoop returns the loop of cfg (validated by the caller, defaults
// applied) over model m: cfg.Workers replicas on train, the aggregator agg,
// SGD with cfg.Momentum and cfg.WeightDecay, validation on test.
func NewLoop(cfg Config, m *nn.Model, agg *Aggregator, train, test *data.Dataset) *Loop {
	cfg.defaults()
	return &Loop{
		Stepper: NewStepper(cfg, m, train),
		Agg:     agg,
		Opt:     nn.NewSGD(m, cfg.LR, cfg.Momentum, cfg.WeightDecay),
		Test:    test,
		cfg:     cfg,
		dst:     m.NewGrads(),
	}
}

// Run trains epochs first to last (1-based, inclusive). It stops with
// ctx's error at the next step once ctx is done.
func (l *Loop) Run(ctx context.Context, first, last int) error {
	for epoch := first; epoch <= last; epoch++ {
		if err := l.epoch(ctx, epoch); err != nil {
			return err
		}
	}
	return nil
}

// epoch runs one epoch's steps, then validates.
func (l *Loop) epoch(ctx context.Context, epoch int) error {
	st := l.Stepper
	b, err := st.Batches(epoch)
	if err != nil {
		return err
	}
	s := Step{Epoch: epoch, Batches: b.Batches()}
	var lossSum, accSum float64
	for n := b.Next(st.X, st.Y); n > 0; n = b.Next(st.X, st.Y) {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.InEpoch++
		s.Index, s.N, s.Loss, s.Correct, s.Policy, s.LRFactor = l.steps, n, 0, 0, Policy{}, 0
		if err := l.step(&s); err != nil {
			return fmt.Errorf("epoch %d step %d: %w", epoch, s.InEpoch, err)
		}
		l.steps++
		lossSum += s.Loss
		accSum += float64(s.Correct) / float64(n)
	}
	t0 := time.Now()
	vl, va, err := Evaluate(st.Reps, l.Test, 8*64)
	if err != nil {
		return err
	}
	l.Timing.Eval += time.Since(t0)
	es := EpochStat{Epoch: epoch, ValAcc: va, ValLoss: vl}
	if s.InEpoch > 0 {
		es.TrainLoss, es.TrainAcc = lossSum/float64(s.InEpoch), accSum/float64(s.InEpoch)
	}
	if l.Hooks.EndEpoch != nil {
		if err := l.Hooks.EndEpoch(&es); err != nil {
			return fmt.Errorf("epoch %d: %w", epoch, err)
		}
	}
	return nil
}

// step runs one step of s.N images: hooks, forward/backward, aggregation,
// velocity reset, SGD.
func (l *Loop) step(s *Step) error {
	if l.Hooks.BeforeStep != nil {
		if err := l.Hooks.BeforeStep(s); err != nil {
			return err
		}
	}
	t0 := time.Now()
	loss, correct, err := l.Stepper.Step(s.N)
	if err != nil {
		return err
	}
	s.Loss, s.Correct = loss, correct
	t1 := time.Now()
	if err := l.Agg.Aggregate(l.Stepper.Grads, l.dst); err != nil {
		return err
	}
	t2 := time.Now()
	s.Policy = l.Agg.Policy()
	s.LRFactor = l.cfg.Schedule.Factor((s.Epoch-1)*s.Batches+s.InEpoch-1, s.Batches, l.cfg.Epochs)
	l.update(s.Policy, s.LRFactor)
	t3 := time.Now()
	if l.Hooks.AfterAggregate != nil {
		if err := l.Hooks.AfterAggregate(s); err != nil {
			return err
		}
	}
	l.Timing.Diag += time.Since(t3)
	l.Timing.Compute += t1.Sub(t0)
	l.Timing.Aggregate += t2.Sub(t1)
	l.Timing.Optimizer += t3.Sub(t2)
	l.Timing.Steps++
	return nil
}

// update clears the velocity of every group whose rule switched, then
// applies the aggregate with each group's learning rate times the
// schedule's factor.
func (l *Loop) update(pol Policy, factor float64) {
	m := l.Stepper.Model
	var lrs [nn.NumGroups]float32
	for _, g := range nn.Groups() {
		lrs[g] = l.cfg.RuleLR(pol[g])
		if factor != 1 {
			lrs[g] = float32(float64(lrs[g]) * factor)
		}
		if l.stepped && updateKind(pol[g].Rule) != updateKind(l.prev[g].Rule) {
			for i, prm := range m.Params {
				if prm.Group == g {
					clear(l.Opt.Vel[i])
				}
			}
			l.VelocityResets++
		}
	}
	l.prev, l.stepped = pol, true
	for i, prm := range m.Params {
		l.Opt.StepParam(i, l.dst[i], lrs[prm.Group])
	}
}

// updateKind is what a velocity reset compares: the rule, except that the
// rules that apply the mean (FP32 and the summed formats) are one kind.
func updateKind(r Rule) Rule {
	if r.Sum() {
		return FormatRule(lowbit.FP32)
	}
	return r
}
