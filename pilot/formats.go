package pilot

import (
	"context"
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

// FormatConfig is a format-admission pilot, the ladder with more rungs
// (control.Ladder: G-Binary, G-Ternary, INT8, BFP8) on one run:
//
//	epochs 1..WarmupEpochs:   every group on FP32; over the last DiagSteps
//	                          steps of the warm-up, every format's cosine to
//	                          the FP32 mean, per group (train.StepFormatCosines)
//	end of warm-up:           Ladder.Admit on each group's mean cosines
//	epochs WarmupEpochs+1..:  each group on its admitted format's rule
//	                          (train.FormatRule), SGD velocity cleared on a switch
//
// Unlike Run's pilots, which follow the controller's mode latches (only
// the paper's modes have one), this pilot swaps the loop's aggregator once,
// so it can admit the formats beyond the paper. Nothing chooses the plan
// but the ladder and the measured cosines.
type FormatConfig struct {
	// Train holds the model, workers, batch, epochs, learning rates and
	// seed; its Policy is ignored.
	Train train.Config
	// WarmupEpochs run on FP32, 1 to Train.Epochs-1.
	WarmupEpochs int
	// DiagSteps is how many of the warm-up's last steps are measured
	// (at least 1; all of the last epoch's when it has fewer).
	DiagSteps int
	// Ladder is the admission ladder: control.ExtendedLadder or a
	// calibrated one.
	Ladder control.Ladder
}

// FormatResult is a finished format-admission pilot.
type FormatResult struct {
	Seed uint64 `json:"seed"`
	// Warmup are the cosines the ladder admitted on: the mean over
	// WarmupSteps measured steps.
	Warmup       train.FormatCosines `json:"warmup"`
	WarmupEpochs int                 `json:"warmup_epochs"`
	WarmupSteps  int                 `json:"warmup_steps"`
	Ladder       control.Ladder      `json:"ladder"`
	// Admitted is each group's format and Reasons the ladder's sentence.
	Admitted train.PerGroup[string] `json:"admitted"`
	Reasons  train.PerGroup[string] `json:"reasons"`
	// Plan is the admitted policy (train.ParsePolicy reads it) and Label
	// its name; Traffic its payload per worker and step.
	Plan    string        `json:"plan"`
	Label   string        `json:"label"`
	Traffic train.Traffic `json:"traffic"`
	// Epochs are every epoch's statistics, warm-up included.
	Epochs         []train.EpochStat `json:"epochs"`
	Final          float64           `json:"final_acc"`
	VelocityResets int               `json:"velocity_resets"`
}

// RunFormats runs one format-admission pilot on sets (see FormatConfig).
// It stops with ctx's error once ctx is done.
func RunFormats(ctx context.Context, cfg FormatConfig, sets *data.Sets) (*FormatResult, error) {
	tc := cfg.Train
	tc.Policy = train.Uniform(train.RuleSpec{Rule: train.FormatRule(lowbit.FP32)})
	if tc.Workers == 0 {
		tc.Workers = 8
	}
	switch {
	case cfg.WarmupEpochs < 1 || cfg.WarmupEpochs >= tc.Epochs:
		return nil, fmt.Errorf("format pilot: warm-up of %d epochs; want 1 to %d (epochs %d)", cfg.WarmupEpochs, tc.Epochs-1, tc.Epochs)
	case cfg.DiagSteps < 1:
		return nil, fmt.Errorf("format pilot: diagnostic steps %d < 1", cfg.DiagSteps)
	}
	if err := cfg.Ladder.Validate(); err != nil {
		return nil, fmt.Errorf("format pilot: %w", err)
	}
	if err := cfg.Ladder.CheckWorkers(tc.Workers); err != nil {
		return nil, fmt.Errorf("format pilot: %w", err)
	}
	l, err := train.Start(tc, sets)
	if err != nil {
		return nil, fmt.Errorf("format pilot: %w", err)
	}
	m := l.Stepper.Model
	res := &FormatResult{Seed: tc.Seed, Ladder: cfg.Ladder.Ordered(), WarmupEpochs: cfg.WarmupEpochs}
	meter := &warmupMeter{epoch: cfg.WarmupEpochs, steps: cfg.DiagSteps, loop: l}
	l.Hooks = train.Hooks{
		AfterAggregate: meter.afterAggregate,
		EndEpoch: func(e *train.EpochStat) error {
			res.Epochs = append(res.Epochs, *e)
			if tc.Logf != nil {
				tc.Logf("format pilot seed %d epoch %d/%d: loss %.4f val acc %.4f", tc.Seed, e.Epoch, tc.Epochs, e.TrainLoss, e.ValAcc)
			}
			if e.Epoch != cfg.WarmupEpochs {
				return nil
			}
			var err error
			if res.Warmup, res.WarmupSteps, err = meter.mean(); err != nil {
				return err
			}
			plan, err := res.admit(cfg.Ladder)
			if err != nil {
				return err
			}
			agg, err := train.NewAggregator(m, plan, tc.Workers, tc.Layout)
			if err != nil {
				return fmt.Errorf("admitted plan %s: %w", plan, err)
			}
			l.Agg = agg
			res.Plan, res.Label, res.Traffic = plan.String(), plan.Label(), train.PolicyTraffic(m, plan)
			return nil
		},
	}
	if err := l.Run(ctx, 1, tc.Epochs); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("format pilot: %w", err)
	}
	res.Final = res.Epochs[len(res.Epochs)-1].ValAcc
	res.VelocityResets = l.VelocityResets
	return res, nil
}

// warmupMeter averages every format's cosines over the last steps of one
// warm-up epoch.
type warmupMeter struct {
	epoch, steps int
	loop         *train.Loop
	sum          train.FormatCosines
	n            int
}

func (w *warmupMeter) afterAggregate(s *train.Step) error {
	if s.Epoch != w.epoch || s.InEpoch <= s.Batches-w.steps {
		return nil
	}
	fc, err := train.StepFormatCosines(w.loop.Stepper.Model, w.loop.Stepper.Grads)
	if err != nil {
		return err
	}
	for f := range w.sum {
		w.sum[f].Global += fc[f].Global
		for g := range w.sum[f].Groups {
			w.sum[f].Groups[g] += fc[f].Groups[g]
		}
	}
	w.n++
	return nil
}

// mean returns the average and the number of steps measured.
func (w *warmupMeter) mean() (train.FormatCosines, int, error) {
	var out train.FormatCosines
	if w.n == 0 {
		return out, 0, fmt.Errorf("no warm-up diagnostics were measured")
	}
	inv := 1 / float64(w.n)
	for f := range w.sum {
		out[f].Global = w.sum[f].Global * inv
		for g := range w.sum[f].Groups {
			out[f].Groups[g] = w.sum[f].Groups[g] * inv
		}
	}
	return out, w.n, nil
}

// WarmupCosines trains tc's model on FP32 for warmup epochs and returns
// every format's cosines, per group, averaged over the last diagSteps
// steps of the last epoch, and how many steps that was: the calibration
// record of the format ladder (control.CalibrateLadder), from an
// always-FP32 run of the workload as the paper's pilots calibrate.
func WarmupCosines(ctx context.Context, tc train.Config, warmup, diagSteps int, sets *data.Sets) (train.FormatCosines, int, error) {
	tc.Policy = train.Uniform(train.RuleSpec{Rule: train.FormatRule(lowbit.FP32)})
	tc.Epochs = warmup
	if tc.Workers == 0 {
		tc.Workers = 8
	}
	if warmup < 1 || diagSteps < 1 {
		return train.FormatCosines{}, 0, fmt.Errorf("format calibration: warm-up %d epochs and %d steps; want at least 1 each", warmup, diagSteps)
	}
	l, err := train.Start(tc, sets)
	if err != nil {
		return train.FormatCosines{}, 0, fmt.Errorf("format calibration: %w", err)
	}
	meter := &warmupMeter{epoch: warmup, steps: diagSteps, loop: l}
	l.Hooks = train.Hooks{AfterAggregate: meter.afterAggregate}
	if err := l.Run(ctx, 1, warmup); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return train.FormatCosines{}, 0, ctx.Err()
		}
		return train.FormatCosines{}, 0, fmt.Errorf("format calibration: %w", err)
	}
	return meter.mean()
}

// admit admits each group's format on the warm-up cosines.
func (res *FormatResult) admit(rungs control.Ladder) (train.Policy, error) {
	var plan train.Policy
	for _, g := range nn.Groups() {
		var cos [lowbit.NumFormats]float64
		for f := range cos {
			cos[f] = res.Warmup[f].Groups[g]
		}
		f, why := rungs.Admit(cos)
		plan[g] = train.RuleSpec{Rule: train.FormatRule(f)}
		res.Admitted[g], res.Reasons[g] = f.String(), why
	}
	return plan, nil
}
