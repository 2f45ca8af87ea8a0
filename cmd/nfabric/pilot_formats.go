package main

import (
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/spf13/cobra"
)

// formatsPilotFlags are the flags of `nfabric pilot formats` beyond the
// training flags.
type formatsPilotFlags struct {
	of            optFlags
	rungs         string
	warmup        int
	calSeed       uint64
	asJSON, quiet bool
	out           string
}

// newPilotFormatsCmd is `nfabric pilot formats`: the formats block's
// format-admission pilot with the user's workload and ladder.
func newPilotFormatsCmd() *cobra.Command {
	var ff formatsPilotFlags
	def := experiments.FormatsOptionsFor(run.TierQuick, 1)
	cmd := &cobra.Command{
		Use:   "formats",
		Short: "format-admission pilot: FP32 warm-up, then the ladder over G-Binary, G-Ternary, INT8 and BFP8 per group",
		Long: `pilot formats trains on FP32 for --warmup-epochs, measures every format's
cosine to the FP32 mean per layer group over the warm-up's last diagnostic
steps, admits each group to the lowest-traffic rung whose cosine passes
(G-Binary 1, G-Ternary 1.58, INT8 8, BFP8 8.125 bits per element; FP32
otherwise) and trains the remaining epochs on that plan. INT8 and BFP8 go
beyond the paper. --rungs calibrate (the default) floors the backbone's
cosines of an FP32 warm-up with --calibration-seed to 0.05, as the formats
block does; otherwise --rungs lists format:min_cosine entries. The defaults
are the formats block's pilot (the 100-class stand-in, quick budget).`,
		Example: `  nfabric pilot formats
  nfabric pilot formats --rungs g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95
  nfabric pilot formats --rungs int8:0.99 --epochs 4 --warmup-epochs 2 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return ff.run(cmd, def) },
	}
	ff.of.add(cmd.Flags(), def.Pilot)
	f := cmd.Flags()
	f.StringVar(&ff.rungs, "rungs", "calibrate", "the ladder: 'calibrate', or format:min_cosine entries (g-binary, g-ternary, int8, bfp8), e.g. g-binary:0.75,int8:0.95")
	f.IntVar(&ff.warmup, "warmup-epochs", def.PilotWarmup, "FP32 epochs before admission")
	f.Uint64Var(&ff.calSeed, "calibration-seed", def.CalibrationSeed, "seed of the calibration warm-up (--rungs calibrate)")
	f.BoolVar(&ff.asJSON, "json", false, "print JSON")
	f.BoolVar(&ff.quiet, "quiet", false, "no progress on stderr")
	dirFlag(f, &ff.out, "out", "", "also write the result's files (Markdown, JSON) into this directory")
	return cmd
}

// run checks the flags (usage errors before anything trains) and runs the
// pilot.
func (ff *formatsPilotFlags) run(cmd *cobra.Command, o experiments.FormatsOptions) error {
	if err := ff.of.apply(cmd.Flags(), &o.Pilot); err != nil {
		return err
	}
	o.PilotWarmup, o.CalibrationSeed = ff.warmup, ff.calSeed
	var r control.Ladder
	if ff.rungs != "calibrate" {
		var err error
		if r, err = control.ParseLadder(ff.rungs); err != nil {
			return usagef("--rungs: %v", err)
		}
	}
	o.Pilot.Logf = stderrLogf(cmd, ff.quiet)
	res, err := experiments.FormatsPilotReport(cmd.Context(), o, r)
	if err != nil {
		return err
	}
	return printResult(cmd, res, ff.asJSON, ff.out)
}
