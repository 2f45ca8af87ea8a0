package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const reproduceLong = `reproduce runs every registered evidence block of the paper (or those named
with --only) and writes, for each block, a JSON file, a Markdown table with the
paper's figures beside ours, and its SVG figures into --out, plus REPORT.md
linking them and index.html, the whole report on one self-contained page
(open it in a browser). Files are written atomically. --tier chooses the
budget: quick (the default) keeps the whole run to minutes and its training
verdicts indicative unless the runs converge; standard is the training
block's middle tier (converged FP32 references, five paired seeds, about an
hour on 2 cores; blocks without a standard configuration run their quick
one); full runs the configurations behind the notes (hours). --quick and
--full are aliases of --tier quick and --tier full.

--shard i/n runs only part i of n of the units of work (units are seed x
policy x configuration runs) and writes --out/shard-i-of-n.json instead of
the report. The units are dealt to the n parts by their estimated CPU time,
longest first, so that the parts take about as long; 'reproduce --list
--shard i/n' prints every part's estimate and part i's units. Run all n shards (on as many
machines as you like, with the same --only/--tier/--seed), gather the
shard files and run 'nfabric report merge DIR...' to write the same out/ a
single run writes, byte for byte.

--seeds N runs N paired seeds in every block that runs seeds (the training
studies, the formats rows, the control pilots) instead of the tier's: the
number the ledger's "seeds to decide" column gives for an inconclusive claim
(run it sharded on a cluster: docs/running.md).

--jobs n runs up to n cores' worth of units at once, across blocks: units
that keep one core busy (replay's event simulations, the hardware flow's
tools, the ns-3 run) run side by side, and units whose goroutines use every
core (training, the pilots, the timing sweeps) run alone. It changes wall
time, never a byte of output. The default, 0, means GOMAXPROCS.`
const reproduceExample = `  nfabric reproduce
  nfabric reproduce --only functional,timing --out results
  nfabric reproduce --tier standard
  nfabric reproduce --full --seed 7
  nfabric reproduce --tier standard --only training --seeds 40
  nfabric reproduce --list --tier standard
  nfabric reproduce --list --shard 0/4 --tier standard
  nfabric reproduce --jobs 1            # one unit at a time, with each block's CPU time
  nfabric reproduce --shard 0/4 --out shards   # ... through 3/4, then:
  nfabric report merge shards --out out`

// listBlocks prints each selected block with its number of units and
// their estimated CPU time, and the total.
func listBlocks(cmd *cobra.Command, bs []run.Block, cfg run.Config) error {
	w := cmd.OutOrStdout()
	var n int
	var total time.Duration
	for _, b := range bs {
		us, err := b.Units(cfg)
		if err != nil {
			return err
		}
		var est time.Duration
		for _, u := range us {
			est += u.Cost
		}
		n, total = n+len(us), total+est
		fmt.Fprintf(w, "%-12s %3d units  %7.0f CPU-s  %s\n", b.Name, len(us), est.Seconds(), b.Title)
	}
	fmt.Fprintf(w, "%-12s %3d units  %7.0f CPU-s  estimated (the blocks' cost models)\n", "total", n, total.Seconds())
	return nil
}

// listShards prints every shard's units and estimated CPU time, then the
// units of shard sh.
func listShards(cmd *cobra.Command, bs []run.Block, cfg run.Config, sh run.Shard) error {
	plans, err := run.PlanShards(bs, cfg, sh.Of)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	for i, p := range plans {
		fmt.Fprintf(w, "shard %d/%d: %3d units, estimated %7.0f CPU-s\n", i, sh.Of, len(p.Units), p.Cost.Seconds())
	}
	fmt.Fprintf(w, "shard %d/%d runs:\n", sh.Index, sh.Of)
	for _, u := range plans[sh.Index].Units {
		fmt.Fprintf(w, "  %-56s %7.1f CPU-s\n", u.Block+"/"+u.Key, u.Cost.Seconds())
	}
	return nil
}

// selectBlocks returns the blocks --only names (all when it is not given);
// an unknown name, or a given --only that names none, is a usage error.
func selectBlocks(cmd *cobra.Command, only []string) ([]run.Block, error) {
	var names []string
	if cmd.Flags().Changed("only") {
		var err error
		if names, err = onlyNames(only); err != nil {
			return nil, err
		}
	}
	bs, err := run.Select(names)
	if err != nil {
		return nil, usagef("--only: %v", err)
	}
	if len(bs) == 0 {
		return nil, fmt.Errorf("no evidence blocks are registered")
	}
	return bs, nil
}

// onlyNames is --only's block names, blanks dropped; none is a usage error.
func onlyNames(only []string) ([]string, error) {
	var names []string
	for _, n := range only {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, usagef("--only %q names no block (see --list)", strings.Join(only, ","))
	}
	return names, nil
}

// runShard runs one --shard of the units and writes its shard file.
func runShard(cmd *cobra.Command, bs []run.Block, cfg run.Config, sh run.Shard, out string) error {
	path, err := run.RunShard(cmd.Context(), bs, cfg, sh, out, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", path)
	return nil
}

// reproduceFlags are reproduce's flags.
type reproduceFlags struct {
	only              []string
	tierS, out, shard string
	full, quick, list bool
	seed              uint64
	seeds, jobs       int
}

func (f *reproduceFlags) add(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.only, "only", nil, "block names to run, comma-separated or repeated (see --list)")
	fs.StringVar(&f.tierS, "tier", "quick", "budget: quick, standard or full")
	fs.BoolVar(&f.full, "full", false, "alias of --tier full (long)")
	fs.BoolVar(&f.quick, "quick", false, "alias of --tier quick (the default)")
	dirFlag(fs, &f.out, "out", "out", "output directory")
	fs.Uint64Var(&f.seed, "seed", 1, "base random seed")
	fs.IntVar(&f.seeds, "seeds", 0, "paired seeds of every block that runs seeds (training, formats, control), e.g. what the ledger's 'seeds to decide' asks for (0: the tier's)")
	fs.BoolVar(&f.list, "list", false, "list the blocks (of --only) with their units of work and estimated CPU time at the --tier's configuration and exit; with --shard i/n, every shard's estimated CPU time and shard i's units")
	fs.IntVar(&f.jobs, "jobs", 0, "run units taking up to this many cores at once (0: GOMAXPROCS); output is the same for every value")
	fs.StringVar(&f.shard, "shard", "", "run only shard i/n of the units and write --out/shard-i-of-n.json (merge with 'nfabric report merge')")
}

// run lists, runs a shard or runs the whole report, as the flags say.
func (f *reproduceFlags) run(cmd *cobra.Command) error {
	tier, err := reproduceTier(cmd.Flags(), f.tierS, f.quick, f.full)
	if err != nil {
		return err
	}
	cfg := run.Config{Tier: tier, Seed: f.seed, Seeds: f.seeds, Jobs: f.jobs}
	if err := cfg.Validate(); err != nil {
		return err
	}
	bs, err := selectBlocks(cmd, f.only)
	if err != nil {
		return err
	}
	var sh run.Shard
	if f.shard != "" {
		if sh, err = run.ParseShard(f.shard); err != nil {
			return usagef("--shard: %v", err)
		}
	}
	switch {
	case f.list && f.shard != "":
		return listShards(cmd, bs, cfg, sh)
	case f.list:
		return listBlocks(cmd, bs, cfg)
	case f.shard != "":
		return runShard(cmd, bs, cfg, sh, f.out)
	}
	outs, err := run.Run(cmd.Context(), bs, cfg, f.out, cmd.ErrOrStderr())
	if len(outs) > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s\n", filepath.Join(f.out, "index.html"), filepath.Join(f.out, "REPORT.md"))
	}
	if err != nil {
		return err
	}
	return run.FailedBlocks(outs)
}

func newReproduceCmd() *cobra.Command {
	var f reproduceFlags
	cmd := &cobra.Command{
		Use:     "reproduce",
		Short:   "run the paper's evidence blocks and write tables, figures, index.html and REPORT.md",
		Long:    reproduceLong,
		Example: reproduceExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	f.add(cmd.Flags())
	return cmd
}

// reproduceTier resolves --tier and its aliases --quick and --full; two
// that disagree are a usage error.
func reproduceTier(fs *pflag.FlagSet, name string, quick, full bool) (run.Tier, error) {
	if full && quick {
		return 0, usagef("--quick and --full are exclusive")
	}
	tier, err := run.ParseTier(name)
	if err != nil {
		return 0, usagef("--tier: %v", err)
	}
	if !full && !quick {
		return tier, nil
	}
	alias := run.TierQuick
	if full {
		alias = run.TierFull
	}
	if fs.Changed("tier") && tier != alias {
		return 0, usagef("--tier %s contradicts --%s", tier, alias)
	}
	return alias, nil
}
