package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newPilotCmd) }

func newPilotCmd() *cobra.Command {
	var (
		of                  optFlags
		full, asJSON, quiet bool
		out, faultEpochs    string
		faultRate           float64
		warmup, cooldown    int64
		calibration         int64
		binMin, terMin      float64
		lossK, lossH        float64
		diagEvery           int
	)
	def := experiments.PilotDefaults(false, 1)
	cmd := &cobra.Command{
		Use:   "pilot",
		Short: "control-plane pilots: recovery (Fig. 6), live admission loop, telemetry delay (Sec. 8)",
		Long: `pilot runs virtual-worker training whose layer groups follow the controller's
mode latches, with the control plane (Predictor, Commander, Supervisor and the
admission ladder) writing those latches. It runs the four scenarios of the
paper's Fig. 6 (always-fp32, always-g-binary, fp32-default admission,
g-binary-default recovery) with an injected degradation window (label noise),
the live admission loop on the hard workload, and the Commander's
telemetry-delay runs. The defaults are the reproduce block 'control'; the
training flags are those of 'nfabric train'.`,
		Example: `  nfabric pilot
  nfabric pilot --seeds 3 --epochs 12 --fault-epochs 5-6 --fault-rate 0.5
  nfabric pilot --ladder 0.5,0.4 --warmup 100 --json
  nfabric pilot --full --out out/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := experiments.PilotDefaults(full, of.seed)
			if err := of.apply(cmd.Flags(), &o.Train); err != nil {
				return err
			}
			fs := cmd.Flags()
			if fs.Changed("fault-rate") {
				if !(faultRate >= 0 && faultRate <= 1) {
					return usagef("--fault-rate %v out of [0, 1]", faultRate)
				}
				o.Fault.Rate = faultRate
			}
			if fs.Changed("fault-epochs") {
				a, b, ok := strings.Cut(faultEpochs, "-")
				s, err1 := strconv.Atoi(a)
				e, err2 := strconv.Atoi(b)
				if !ok || err1 != nil || err2 != nil || s < 1 || e < s {
					return usagef("--fault-epochs %q: want FIRST-LAST, e.g. 4-5", faultEpochs)
				}
				o.Fault.StartEpoch, o.Fault.EndEpoch = s, e
			}
			for name, kv := range map[string]struct {
				dst *int64
				val int64
			}{"warmup": {&o.Control.WarmupSteps, warmup}, "cooldown": {&o.Control.CooldownSteps, cooldown}, "calibration": {&o.Control.CalibrationSteps, calibration}} {
				if fs.Changed(name) {
					*kv.dst = kv.val
				}
			}
			if fs.Changed("ladder-binary") {
				o.Control.Ladder.BinaryMin = binMin
			}
			if fs.Changed("ladder-ternary") {
				o.Control.Ladder.TernaryMin = terMin
			}
			if fs.Changed("cusum-k") {
				o.Control.LossK = lossK
			}
			if fs.Changed("cusum-h") {
				o.Control.LossH = lossH
			}
			if fs.Changed("diag-every") {
				if diagEvery < 0 {
					return usagef("--diag-every %d is negative", diagEvery)
				}
				o.DiagEvery = diagEvery
			}
			cc := o.Control
			cc.Groups = pilot.Groups()
			if err := cc.Validate(); err != nil {
				return usagef("%v", err)
			}
			o.Logf = stderrLogf(cmd, quiet)
			res, err := experiments.Pilots(cmd.Context(), o)
			if err != nil {
				return err
			}
			return printResult(cmd, res, asJSON, out)
		},
	}
	f := cmd.Flags()
	of.add(f, def.Train)
	f.BoolVar(&full, "full", false, "start from the full configuration (long)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	f.StringVar(&out, "out", "", "also write the block's files (Markdown, JSON, SVG) into this directory")
	f.Float64Var(&faultRate, "fault-rate", def.Fault.Rate, "label-noise rate of the degradation window (0 disables it)")
	f.StringVar(&faultEpochs, "fault-epochs", fmt.Sprintf("%d-%d", def.Fault.StartEpoch, def.Fault.EndEpoch), "epochs of the degradation window, FIRST-LAST")
	f.Int64Var(&warmup, "warmup", def.Control.WarmupSteps, "FP32 warm-up steps before any admission")
	f.Int64Var(&cooldown, "cooldown", def.Control.CooldownSteps, "FP32 cooldown steps after a recovery alarm")
	f.Int64Var(&calibration, "calibration", def.Control.CalibrationSteps, "FP32 calibration steps before re-admission")
	f.Float64Var(&binMin, "ladder-binary", def.Control.Ladder.BinaryMin, "admission ladder: minimum G-Binary cosine")
	f.Float64Var(&terMin, "ladder-ternary", def.Control.Ladder.TernaryMin, "admission ladder: minimum G-Ternary cosine")
	f.Float64Var(&lossK, "cusum-k", def.Control.LossK, "Supervisor loss CUSUM slack K (relative loss excess)")
	f.Float64Var(&lossH, "cusum-h", def.Control.LossH, "Supervisor loss CUSUM threshold H")
	f.IntVar(&diagEvery, "diag-every", def.DiagEvery, "steps between cosine diagnostics")
	return cmd
}
