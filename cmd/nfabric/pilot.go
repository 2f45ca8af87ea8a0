package main

import (
	"context"
	"fmt"
	"os"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newPilotCmd) }

// pilotFlags holds the raw flag values of experiments.PilotOptions beyond
// the training flags.
type pilotFlags struct {
	of                  optFlags
	faultEpochs         string
	faultRate           float64
	warmup, cooldown    int64
	calibration         int64
	binMin, terMin      float64
	rungs               string
	demote              bool
	lossK, lossH        float64
	diagEvery           int
	full, asJSON, quiet bool
	tierS               string
	calibrate           bool
	out                 string
	telemetry           string
	liveData            string
}

const pilotLong = `pilot runs virtual-worker training whose layer groups follow the controller's
mode latches, with the control plane (Predictor, Commander, Supervisor and the
admission ladder) writing those latches. It runs the four scenarios of the
paper's Fig. 6 (always-fp32, always-g-binary, fp32-default admission,
g-binary-default recovery) with an injected degradation window (label noise),
the live admission loop on the hard workload, and the Commander's
telemetry-delay runs. The defaults are the reproduce block 'control': the
ResNet stand-in (--model resnet-standin) on Fashion-MNIST for Fig. 6 and the
Commander runs, and on mnist-stack100 (--live-data) for the live loop; the
training flags are those of 'nfabric train'. --model, --hidden, --epochs,
--train-n and --test-n apply to the live loop's workload too. The MLP
stand-ins of earlier rounds: --model mlp --data mnist --live-data
mnist-pairs100. --warmup and --cooldown are in steps (default: one epoch at
the default --train-n and --batch); the CUSUM and ladder defaults were
calibrated on the default workload (see the block's calibration table).`

const pilotExample = `  nfabric pilot
  nfabric pilot --seeds 3 --epochs 12 --fault-epochs 5-6 --fault-rate 0.5
  nfabric pilot --ladder-binary 0.5 --ladder-ternary 0.4 --warmup 100 --json
  nfabric pilot --full --out out/
  nfabric pilot --model mlp --data mnist --live-data mnist-pairs100 --cusum-k 0.3 --cusum-h 3
  nfabric pilot --calibrate --data mnist   # the CUSUM and ladder the procedure derives on MNIST
  nfabric pilot --telemetry t.csv   # the Commander runs read 'nfabric telemetry ns3' output`

func newPilotCmd() *cobra.Command {
	var pf pilotFlags
	def := experiments.PilotDefaults(run.TierQuick, 1)
	cmd := &cobra.Command{
		Use:     "pilot",
		Short:   "control-plane pilots: recovery (Fig. 6), live admission loop, telemetry delay (Sec. 8)",
		Long:    pilotLong,
		Example: pilotExample,
		Args:    cobra.NoArgs,
		RunE:    pf.run,
	}
	pf.of.add(cmd.Flags(), def.Train)
	pf.add(cmd.Flags(), def)
	cmd.AddCommand(newPilotFormatsCmd())
	return cmd
}

func (pf *pilotFlags) run(cmd *cobra.Command, _ []string) error {
	o, err := pilotOptions(cmd.Flags(), &pf.of, pf)
	if err != nil {
		return err
	}
	o.Logf = stderrLogf(cmd, pf.quiet)
	run := experiments.Pilots
	if pf.calibrate {
		run = func(ctx context.Context, o experiments.PilotOptions) (*report.Result, error) { return o.Calibrate(ctx) }
	}
	res, err := run(cmd.Context(), o)
	if err != nil {
		return err
	}
	return printResult(cmd, res, pf.asJSON, pf.out)
}

// pilotOptions is the block's defaults overwritten by the flags the user
// set, checked before anything trains.
func pilotOptions(fs *pflag.FlagSet, of *optFlags, pf *pilotFlags) (experiments.PilotOptions, error) {
	tier, err := reproduceTier(fs, pf.tierS, false, pf.full)
	if err != nil {
		return experiments.PilotOptions{}, err
	}
	o := experiments.PilotDefaults(tier, of.seed)
	if err := of.apply(fs, &o.Train); err != nil {
		return o, err
	}
	o.LiveFollowsTrain(fs.Changed)
	if err := pf.apply(fs, &o); err != nil {
		return o, err
	}
	return o, o.Validate()
}

func (pf *pilotFlags) add(f *pflag.FlagSet, def experiments.PilotOptions) {
	f.StringVar(&pf.tierS, "tier", "quick", "start from this tier's configuration: quick, standard (five paired seeds of every pilot) or full")
	f.BoolVar(&pf.full, "full", false, "alias of --tier full (long)")
	f.BoolVar(&pf.calibrate, "calibrate", false, "only run the calibration procedure (always-fp32 over the epochs before the fault window) and print the thresholds it derives beside the configured ones")
	f.BoolVar(&pf.asJSON, "json", false, "print JSON")
	f.BoolVar(&pf.quiet, "quiet", false, "no progress on stderr")
	dirFlag(f, &pf.out, "out", "", "also write the block's files (Markdown, JSON, SVG) into this directory")
	f.Float64Var(&pf.faultRate, "fault-rate", def.Fault.Rate, "label-noise rate of the degradation window (0 disables it)")
	f.StringVar(&pf.faultEpochs, "fault-epochs", fmt.Sprintf("%d-%d", def.Fault.StartEpoch, def.Fault.EndEpoch), "epochs of the degradation window, FIRST-LAST")
	f.Int64Var(&pf.warmup, "warmup", def.Control.WarmupSteps, "FP32 warm-up steps before any admission")
	f.Int64Var(&pf.cooldown, "cooldown", def.Control.CooldownSteps, "FP32 cooldown steps after a recovery alarm")
	f.Int64Var(&pf.calibration, "calibration", def.Control.CalibrationSteps, "FP32 calibration steps before re-admission")
	binMin, _ := def.Control.Ladder.Min(lowbit.Binary)
	terMin, _ := def.Control.Ladder.Min(lowbit.Ternary)
	f.Float64Var(&pf.binMin, "ladder-binary", binMin, "admission ladder: minimum G-Binary cosine")
	f.Float64Var(&pf.terMin, "ladder-ternary", terMin, "admission ladder: minimum G-Ternary cosine")
	f.StringVar(&pf.rungs, "ladder-rungs", def.Control.Ladder.String(), "admission ladder: every rung as FORMAT:MIN,... (g-binary, g-ternary, int8, bfp8); --ladder-binary and --ladder-ternary then override their rungs")
	f.BoolVar(&pf.demote, "ladder-demote", def.Control.Demote, "a failing diagnostic moves an admitted group to the next rung up that passes (not in the paper)")
	f.Float64Var(&pf.lossK, "cusum-k", def.Control.LossK, "Supervisor loss CUSUM slack K (relative loss excess)")
	f.Float64Var(&pf.lossH, "cusum-h", def.Control.LossH, "Supervisor loss CUSUM threshold H")
	f.IntVar(&pf.diagEvery, "diag-every", def.DiagEvery, "steps between cosine diagnostics")
	f.StringVar(&pf.liveData, "live-data", def.Hard.Data, "data set of the live admission loop (100 classes: mnist-stack100, fashion-stack100, mnist-pairs100, cifar100)")
	f.StringVar(&pf.telemetry, "telemetry", "", "telemetry CSV for the Commander runs (from 'nfabric telemetry'; default: synthetic episodes)")
}

// readTelemetryFile reads the --telemetry trace.
func readTelemetryFile(path string) ([]control.Telemetry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--telemetry: %w", err)
	}
	defer f.Close()
	tel, err := control.ReadTelemetry(f)
	if err != nil {
		return nil, fmt.Errorf("--telemetry %s: %w", path, err)
	}
	return tel, nil
}

// applyThresholds sets the admission ladder from --ladder-rungs, then the
// --ladder-binary and --ladder-ternary rungs, --ladder-demote, and the
// Supervisor's --cusum-k and --cusum-h.
func (pf *pilotFlags) applyThresholds(fs *pflag.FlagSet, o *experiments.PilotOptions) error {
	if fs.Changed("ladder-rungs") {
		r, err := control.ParseLadder(pf.rungs)
		if err != nil {
			return usagef("--ladder-rungs: %v", err)
		}
		o.Control.Ladder = r
	}
	if fs.Changed("ladder-binary") {
		o.Control.Ladder = o.Control.Ladder.With(lowbit.Binary, pf.binMin)
	}
	if fs.Changed("ladder-ternary") {
		o.Control.Ladder = o.Control.Ladder.With(lowbit.Ternary, pf.terMin)
	}
	if fs.Changed("ladder-demote") {
		o.Control.Demote = pf.demote
	}
	for name, kv := range map[string]struct {
		dst *float64
		val float64
	}{"cusum-k": {&o.Control.LossK, pf.lossK}, "cusum-h": {&o.Control.LossH, pf.lossH}} {
		if fs.Changed(name) {
			*kv.dst = kv.val
		}
	}
	return nil
}

// apply overwrites o with the flags the user set.
func (pf *pilotFlags) apply(fs *pflag.FlagSet, o *experiments.PilotOptions) error {
	if fs.Changed("live-data") {
		o.Hard.Data = pf.liveData
	}
	if fs.Changed("fault-rate") {
		o.Fault.Rate = pf.faultRate
	}
	if fs.Changed("fault-epochs") {
		if err := o.Fault.ParseEpochs(pf.faultEpochs); err != nil {
			return err
		}
	}
	for name, kv := range map[string]struct {
		dst *int64
		val int64
	}{"warmup": {&o.Control.WarmupSteps, pf.warmup}, "cooldown": {&o.Control.CooldownSteps, pf.cooldown}, "calibration": {&o.Control.CalibrationSteps, pf.calibration}} {
		if fs.Changed(name) {
			*kv.dst = kv.val
		}
	}
	if fs.Changed("diag-every") {
		o.DiagEvery = pf.diagEvery
	}
	if pf.telemetry != "" {
		var err error
		if o.Telemetry, err = readTelemetryFile(pf.telemetry); err != nil {
			return err
		}
	}
	return pf.applyThresholds(fs, o)
}
