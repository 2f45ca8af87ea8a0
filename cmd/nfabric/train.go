package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newTrainCmd) }

func newTrainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "train",
		Short: "virtual-worker training with low-bit aggregation (Sec. 7)",
		Long: `train runs data-parallel training with W virtual workers (each batch split into
W shards) and an aggregation rule per layer group: fp32 (mean), g-binary and
g-ternary (through the cxl controller model), majority-sign (MajoritySignSGD,
software) and sign-of-mean. Extensions beyond the paper: +ef (error feedback)
and the g-ternary gates /worker[:TAU] and /margin:T.

A policy is one rule for every group ("g-binary") or one per group
("backbone=g-ternary,head=fp32"); a rule may carry its own learning rate
("fp32@0.01").

  run        one run of one policy, with checkpoint/resume
  validated  the Fig. 4 analogue (five rules, several seeds)
  boundary   the Table 6 / Fig. 5 / Table 5 analogue (seven policies, the
             learning-rate ablation and cosine diagnostics)
  sweep      choose the FP32 or the sign learning rate, or the schedule, on
             held-out training images (the procedure behind the studies'
             --lr, --sign-lr and --schedule defaults)

Data sets: mnist, fashion-mnist, mnist-stack100 and fashion-stack100 (the
100-class stand-ins), mnist-pairs100 (the earlier one), and cifar10 / cifar100
from their binary files with --data-dir.`,
		Example: `  nfabric train run --data mnist --model mlp --policy g-binary --epochs 3
  nfabric train run --data mnist-pairs100 --policy backbone=g-ternary,head=fp32 --checkpoint run.ckpt --resume
  nfabric train validated --seeds 3
  nfabric train sweep --study boundary --rule sign --lrs 3e-5,1e-4,3e-4,1e-3
  nfabric train sweep --study validated --rule fp32 --lrs 0.02,0.05,0.1,0.2,0.4
  nfabric train sweep --study boundary --tier standard --seeds 2 --schedules constant,cosine,cosine:warmup=1,step
  nfabric train boundary --full --out out/
  nfabric train boundary --data cifar100 --data-dir ~/cifar-100-binary --model resnet18 --augment --epochs 30`,
	}
	cmd.AddCommand(newTrainRunCmd(), newTrainStudyCmd("validated"), newTrainStudyCmd("boundary"), newTrainSweepCmd())
	return cmd
}

// optFlags holds the raw flag values of experiments.TrainOptions.
type optFlags struct {
	data, dataDir, model, layout  string
	hidden                        []int
	trainN, testN, perClass       int
	epochs, batch, workers, seeds int
	lr, signLR, momentum, wd      float32
	schedule                      string
	seed                          uint64
	augment                       bool
	diagEpoch, diagSteps          int
	extensions, allPolicies       bool
}

func (f *optFlags) add(fs *pflag.FlagSet, o experiments.TrainOptions) {
	fs.StringVar(&f.data, "data", o.Data, "data set: mnist, fashion-mnist, mnist-pairs100, mnist-stack100, fashion-stack100, cifar10, cifar100")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory of the data set's files (default: its standard location)")
	fs.IntVar(&f.trainN, "train-n", o.TrainN, "keep the first N training images (0: all)")
	fs.IntVar(&f.testN, "test-n", o.TestN, "keep the first N test images (0: all)")
	fs.IntVar(&f.perClass, "per-class", o.PerClass, "keep at most N training images per class (0: no limit)")
	fs.StringVar(&f.model, "model", o.Model, "model: mlp, cnn, resnet18, resnet-mini, resnet-standin (the stand-ins' ResNet) or resnet-standin-small (the earlier one)")
	fs.IntSliceVar(&f.hidden, "hidden", o.Hidden, "MLP hidden widths, comma-separated")
	fs.IntVar(&f.epochs, "epochs", o.Epochs, "epochs")
	fs.IntVar(&f.batch, "batch", o.Batch, "global batch size (split over the workers)")
	fs.IntVar(&f.workers, "workers", o.Workers, "virtual workers W")
	fs.IntVar(&f.seeds, "seeds", o.Seeds, "seeds per policy")
	fs.Uint64Var(&f.seed, "seed", o.Seed, "first seed")
	fs.Float32Var(&f.lr, "lr", o.LR, "learning rate of FP32 groups")
	fs.Float32Var(&f.signLR, "sign-lr", o.SignLR, "learning rate of sign-rule groups")
	fs.Float32Var(&f.momentum, "momentum", o.Momentum, "SGD momentum (applied to the aggregate)")
	fs.Float32Var(&f.wd, "wd", o.WeightDecay, "weight decay")
	fs.StringVar(&f.schedule, "schedule", o.Schedule.String(), "learning-rate schedule, the same factor for every rule: constant, cosine[:warmup=EPOCHS][:floor=F] or step[:gamma=G][:at=E1+E2][:warmup=EPOCHS]")
	fs.StringVar(&f.layout, "layout", o.Layout.String(), "controller payload layout: worker-major or element-major (the paper's packet)")
	fs.BoolVar(&f.augment, "augment", o.Augment, "CIFAR-style augmentation (4-pixel random crop, horizontal flip)")
	fs.IntVar(&f.diagEpoch, "diag-epoch", o.DiagEpoch, "epoch of the cosine diagnostics (0: the last)")
	fs.IntVar(&f.diagSteps, "diag-steps", o.DiagSteps, "steps measured in the diagnostic epoch (0: all)")
	fs.BoolVar(&f.extensions, "extensions", o.Extensions, "boundary: also run the extensions beyond the paper (error feedback, margin and worker gates)")
	fs.BoolVar(&f.allPolicies, "all-policies", false, "run every policy row of the study (the quick configuration runs a subset; --full runs all)")
}

// apply overwrites o with the flags the user set.
func (f *optFlags) apply(fs *pflag.FlagSet, o *experiments.TrainOptions) error {
	set := func(name string) bool { return fs.Changed(name) }
	if err := requirePositive(fs, "epochs", "batch", "workers"); err != nil {
		return err
	}
	if err := f.applyData(fs, o); err != nil {
		return err
	}
	for _, kv := range []struct {
		name string
		dst  *int
		val  int
	}{{"epochs", &o.Epochs, f.epochs}, {"batch", &o.Batch, f.batch}, {"workers", &o.Workers, f.workers}, {"seeds", &o.Seeds, f.seeds},
		{"diag-epoch", &o.DiagEpoch, f.diagEpoch}, {"diag-steps", &o.DiagSteps, f.diagSteps}} {
		if set(kv.name) {
			*kv.dst = kv.val
		}
	}
	if set("extensions") {
		o.Extensions = f.extensions
	}
	if f.allPolicies {
		o.Only = nil
	}
	if set("seed") {
		o.Seed = f.seed
	}
	if err := f.applyRates(fs, o); err != nil {
		return err
	}
	if set("augment") {
		o.Augment = f.augment
	} else {
		o.DefaultAugment()
	}
	return o.Check()
}

// applyRates overwrites o's learning rates, schedule and payload layout
// with the flags the user set.
func (f *optFlags) applyRates(fs *pflag.FlagSet, o *experiments.TrainOptions) error {
	set := func(name string) bool { return fs.Changed(name) }
	for _, kv := range []struct {
		name string
		dst  *float32
		val  float32
	}{{"lr", &o.LR, f.lr}, {"sign-lr", &o.SignLR, f.signLR}, {"momentum", &o.Momentum, f.momentum}, {"wd", &o.WeightDecay, f.wd}} {
		if set(kv.name) {
			*kv.dst = kv.val
		}
	}
	if set("schedule") {
		sc, err := train.ParseSchedule(f.schedule)
		if err != nil {
			return fmt.Errorf("--schedule: %w", err)
		}
		o.Schedule = sc
	}
	if set("layout") {
		l, err := lowbit.ParseLayout(f.layout)
		if err != nil {
			return usagef("--layout: %v", err)
		}
		o.Layout = l
	}
	return nil
}

// applyData overwrites o's data and model fields with the flags the user
// set.
func (f *optFlags) applyData(fs *pflag.FlagSet, o *experiments.TrainOptions) error {
	set := func(name string) bool { return fs.Changed(name) }
	if set("data") {
		if !slices.Contains(data.Names(), f.data) {
			return usagef("--data %q: want one of %s", f.data, strings.Join(data.Names(), ", "))
		}
		o.Data = f.data
	}
	o.DataDir = f.dataDir
	if set("train-n") {
		o.TrainN = f.trainN
	}
	if set("test-n") {
		o.TestN = f.testN
	}
	if set("per-class") {
		o.PerClass = f.perClass
	}
	if set("model") {
		o.Model = f.model
	}
	if set("hidden") {
		if len(f.hidden) == 0 || slices.Min(f.hidden) < 1 {
			return usagef("--hidden %v: want positive comma-separated widths", f.hidden)
		}
		o.Hidden = f.hidden
	}
	return nil
}

func stderrLogf(cmd *cobra.Command, quiet bool) func(string, ...any) {
	if quiet {
		return nil
	}
	w := cmd.ErrOrStderr()
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

// checkRunFlags refuses train run's flags that cannot apply to one run.
func checkRunFlags(cmd *cobra.Command, logEvery int, resume bool, checkpoint string) error {
	if logEvery < 0 {
		return usagef("--log-every %d < 0", logEvery)
	}
	for _, name := range []string{"seeds", "extensions", "all-policies"} {
		if cmd.Flags().Changed(name) {
			return usagef("--%s does not apply to train run (one policy, one seed: use --seed; see train validated/boundary)", name)
		}
	}
	if resume && checkpoint == "" {
		return usagef("--resume needs --checkpoint FILE")
	}
	return nil
}

// trainRunFlags are train run's flags.
type trainRunFlags struct {
	of                    optFlags
	policy, checkpoint    string
	resume, asJSON, quiet bool
	logEvery              int
	out                   string
}

func newTrainRunCmd() *cobra.Command {
	var r trainRunFlags
	def := experiments.RunOptions()
	cmd := &cobra.Command{
		Use:   "run --policy POLICY [flags]",
		Short: "train one policy for one seed; checkpoint after every epoch, resume with --resume",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return r.run(cmd, def) },
	}
	f := cmd.Flags()
	r.of.add(f, def)
	f.StringVar(&r.policy, "policy", "fp32", "aggregation policy, e.g. g-binary or backbone=g-ternary,head=fp32")
	fileFlag(f, &r.checkpoint, "checkpoint", "", "checkpoint file written after every epoch")
	f.BoolVar(&r.resume, "resume", false, "resume from --checkpoint when it exists")
	f.IntVar(&r.logEvery, "log-every", 0, "progress line every N steps (0: per epoch)")
	f.BoolVar(&r.asJSON, "json", false, "print the result as JSON")
	f.BoolVarP(&r.quiet, "quiet", "q", false, "no progress on stderr")
	dirFlag(f, &r.out, "out", "", "also write the result's tables (and JSON) into this directory")
	return cmd
}

func (r *trainRunFlags) run(cmd *cobra.Command, o experiments.TrainOptions) error {
	if err := r.of.apply(cmd.Flags(), &o); err != nil {
		return err
	}
	p, err := train.ParsePolicy(r.policy)
	if err != nil {
		return usagef("--policy: %v", err)
	}
	if err := checkRunFlags(cmd, r.logEvery, r.resume, r.checkpoint); err != nil {
		return err
	}
	o.Logf = stderrLogf(cmd, r.quiet)
	cfg := o.Config(p, o.Seed)
	cfg.Checkpoint, cfg.Resume, cfg.LogEvery = r.checkpoint, r.resume, r.logEvery
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	sets, info, err := o.LoadSets()
	if err != nil {
		return err
	}
	res, err := train.Run(cmd.Context(), cfg, sets)
	if err != nil {
		return err
	}
	return printResult(cmd, experiments.TrainRunResult(res, info, o.Seed), r.asJSON, r.out)
}

// trainStudyLong follows a study's Short line in its help.
const trainStudyLong = `.

Defaults are the reproduce block's quick tier (three seeds, a subset of the
policy rows: --all-policies runs every row); --tier standard starts from the
standard tier (converging FP32 references, five paired seeds) and --tier full
(or --full) from the full one (every row on all 60,000 images: about an hour
for validated and eight for boundary on 2 cores). Any flag given overrides
the tier's value.`

// trainStudy is what tells train validated from train boundary apart.
type trainStudy struct {
	name     string // experiments.StudyValidated or experiments.StudyBoundary
	short    string
	defaults func(run.Tier, uint64) experiments.TrainOptions
	run      func(context.Context, experiments.TrainOptions) (*report.Result, error)
}

// lookupTrainStudy returns the study 'train which' runs: boundary, or
// else validated.
func lookupTrainStudy(which string) trainStudy {
	if which == "boundary" {
		return trainStudy{experiments.StudyBoundary,
			"Table 6 / Fig. 5 / Table 5 analogue: layer-aware admission on the 100-class stand-in (or CIFAR-100)",
			experiments.BoundaryOptions, experiments.Boundary}
	}
	return trainStudy{experiments.StudyValidated,
		"Fig. 4 analogue: FP32, G-Binary, G-Ternary, MajoritySignSGD and SignOfMean over several seeds",
		experiments.ValidatedOptions, experiments.Validated}
}

// studyFlags holds a study command's flags beyond the training options.
type studyFlags struct {
	of     optFlags
	full   bool
	tierS  string
	asJSON bool
	quiet  bool
	wall   bool
	out    string
	saved  []string
}

func (f *studyFlags) add(fs *pflag.FlagSet, o experiments.TrainOptions) {
	f.of.add(fs, o)
	fs.StringVar(&f.tierS, "tier", "quick", "start from this tier's configuration: quick, standard or full")
	fs.BoolVar(&f.full, "full", false, "alias of --tier full")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
	fs.BoolVar(&f.wall, "wall-clock", false, "add step-time-by-phase tables (wall clock: they differ from run to run)")
	dirFlag(fs, &f.out, "out", "", "also write tables, figures and JSON into this directory")
	fs.StringSliceVar(&f.saved, "runs", nil, "lay out the study from runs saved by earlier --out runs (their training-STUDY.json files, e.g. seeds 1-2 and 3-5 trained apart) instead of training; they must cover the options' rows and seeds exactly")
}

func newTrainStudyCmd(which string) *cobra.Command {
	var sf studyFlags
	st := lookupTrainStudy(which)
	cmd := &cobra.Command{
		Use:   which + " [flags]",
		Short: st.short,
		Long:  st.short + trainStudyLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tier, err := reproduceTier(cmd.Flags(), sf.tierS, false, sf.full)
			if err != nil {
				return err
			}
			o := st.defaults(tier, 1)
			if err := sf.of.apply(cmd.Flags(), &o); err != nil {
				return err
			}
			o.Changed = budgetChanged(cmd.Flags())
			o.Logf = stderrLogf(cmd, sf.quiet)
			o.WallClock = sf.wall
			res, err := studyResult(cmd, st.run, st.name, o, sf.saved)
			if err != nil {
				return err
			}
			return printResult(cmd, res, sf.asJSON, sf.out)
		},
	}
	sf.add(cmd.Flags(), st.defaults(run.TierQuick, 1))
	return cmd
}

// studyResult trains the study, or lays it out from saved runs.
func studyResult(cmd *cobra.Command, run func(context.Context, experiments.TrainOptions) (*report.Result, error), study string, o experiments.TrainOptions, saved []string) (*report.Result, error) {
	if len(saved) == 0 {
		return run(cmd.Context(), o)
	}
	return experiments.SavedStudy(study, o, saved)
}

// budgetChanged reports whether a flag changed a study's options from its
// tier's (anything but the tier, the first seed, the data directory and
// the output and --runs flags).
func budgetChanged(fs *pflag.FlagSet) bool {
	changed := false
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "tier", "full", "seed", "data-dir", "json", "quiet", "wall-clock", "out", "runs":
		default:
			changed = true
		}
	})
	return changed
}

const trainSweepLong = `sweep chooses one learning rate, or the learning-rate schedule, on a study's
options (its --tier configuration, quick unless said, with one seed, unless
flags say otherwise): --rule sign trains each sign rule of --rules uniformly at
each sign rate of --lrs; --rule fp32 trains FP32 at each FP32 rate; --schedules
trains each rule of --rules (default fp32,g-binary,g-ternary) under each
schedule, at the options' rates. Runs are validated on training images they
never train on (images --train-n .. --train-n + --test-n of the training split,
never the test split), and the rate or schedule with the highest mean held-out
accuracy over the rules and seeds is chosen.`

// sweepFlags are train sweep's flags.
type sweepFlags struct {
	of                  optFlags
	study, family, tier string
	rates, rules        []string
	scheds              []string
	asJSON, quiet       bool
	out                 string
}

func (f *sweepFlags) add(fs *pflag.FlagSet) {
	def, _ := experiments.SweepOptions(experiments.StudyBoundary, run.TierQuick) // a known study: never an error
	f.of.add(fs, def)
	fs.StringVar(&f.study, "study", experiments.StudyBoundary, "whose options: validated or boundary")
	fs.StringVar(&f.family, "rule", "sign", "whose rate to sweep: sign (the sign rules' rate) or fp32 (FP32's rate)")
	fs.StringSliceVar(&f.rates, "lrs", nil, "learning rates to try, comma-separated (default "+strings.Join(experiments.SweepSignLRs, ",")+" for sign, "+strings.Join(experiments.SweepFP32LRs, ",")+" for fp32)")
	fs.StringSliceVar(&f.rules, "rules", []string{"g-binary", "g-ternary"}, "the rules to train, comma-separated: with --rule sign, sign rules; with --schedules, any (default there "+strings.Join(experiments.SweepScheduleRules, ",")+")")
	fs.StringSliceVar(&f.scheds, "schedules", nil, "sweep these learning-rate schedules (see --schedule) instead of a rate, e.g. constant,cosine,cosine:warmup=1,step")
	fs.StringVar(&f.tier, "tier", "quick", "start from this tier's configuration of the study: quick, standard or full")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on stderr")
	dirFlag(fs, &f.out, "out", "", "also write the table and JSON into this directory")
}

// run sweeps a rate, or the schedules when --schedules is given.
func (f *sweepFlags) run(cmd *cobra.Command) error {
	tier, err := reproduceTier(cmd.Flags(), f.tier, false, false)
	if err != nil {
		return err
	}
	o, err := experiments.SweepOptions(f.study, tier)
	if err != nil {
		return err
	}
	if len(f.scheds) > 0 {
		return f.scheduleSweep(cmd, o)
	}
	rs, grid, err := experiments.SweepRates(f.family, f.rules, cmd.Flags().Changed("rules"), f.rates)
	if err != nil {
		return err
	}
	if err := f.options(cmd, &o, rs); err != nil {
		return err
	}
	res, _, err := experiments.LRSweep(cmd.Context(), f.study, o, grid, rs)
	if err != nil {
		return err
	}
	return printResult(cmd, res, f.asJSON, f.out)
}

// options overwrites the sweep's starting options o with the flags the
// user set, checks them for a sweep over rs before anything runs, and
// sets the progress log.
func (f *sweepFlags) options(cmd *cobra.Command, o *experiments.TrainOptions, rs []train.Rule) error {
	if err := f.of.apply(cmd.Flags(), o); err != nil {
		return err
	}
	if err := o.CheckSweep(rs); err != nil {
		return err
	}
	o.Logf = stderrLogf(cmd, f.quiet)
	return nil
}

func newTrainSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep [flags]",
		Short: "choose the FP32 or the sign learning rate, or the schedule, on held-out training images",
		Long:  trainSweepLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.add(cmd.Flags())
	return cmd
}

// scheduleSweep runs train sweep --schedules from the starting options
// o: every rule of --rules under every schedule, at the options' rates.
func (f *sweepFlags) scheduleSweep(cmd *cobra.Command, o experiments.TrainOptions) error {
	for _, name := range []string{"rule", "lrs", "schedule"} {
		if cmd.Flags().Changed(name) {
			return usagef("--%s does not apply to a schedule sweep (--schedules)", name)
		}
	}
	rules := f.rules
	if !cmd.Flags().Changed("rules") {
		rules = experiments.SweepScheduleRules
	}
	rs, ss, err := experiments.SweepSchedules(rules, f.scheds)
	if err != nil {
		return err
	}
	if err := f.options(cmd, &o, rs); err != nil {
		return err
	}
	res, _, err := experiments.ScheduleSweep(cmd.Context(), f.study, o, ss, rs)
	if err != nil {
		return err
	}
	return printResult(cmd, res, f.asJSON, f.out)
}
