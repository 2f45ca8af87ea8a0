package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/spf13/cobra"
)

func newReproduceCmd() *cobra.Command {
	var (
		only  string
		full  bool
		quick bool
		out   string
		seed  uint64
		list  bool
	)
	cmd := &cobra.Command{
		Use:   "reproduce",
		Short: "run the paper's evidence blocks and write tables, figures and REPORT.md",
		Long: `reproduce runs every registered evidence block of the paper (or those named
with --only) and writes, for each block, a JSON file, a Markdown table with the
paper's figures beside ours, and its SVG figures into --out, plus REPORT.md
linking them. Files are written atomically. --quick (the default) keeps the
whole run to minutes; --full runs the configurations behind the notes.`,
		Example: `  nfabric reproduce
  nfabric reproduce --only functional,timing --out results
  nfabric reproduce --full --seed 7
  nfabric reproduce --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if full && quick {
				return usagef("--quick and --full are exclusive")
			}
			if list {
				for _, b := range experiments.Blocks() {
					fmt.Fprintf(cmd.OutOrStdout(), "%-12s %s\n", b.Name, b.Title)
				}
				return nil
			}
			var names []string
			if only != "" {
				names = strings.Split(only, ",")
			}
			bs, err := experiments.Select(names)
			if err != nil {
				return usagef("--only: %v", err)
			}
			if len(bs) == 0 {
				return fmt.Errorf("no evidence blocks are registered")
			}
			cfg := experiments.Config{Full: full, Seed: seed}
			outs, err := experiments.Run(cmd.Context(), bs, cfg, out, cmd.ErrOrStderr())
			if len(outs) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", filepath.Join(out, "REPORT.md"))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&only, "only", "", "comma-separated block names to run (see --list)")
	f.BoolVar(&full, "full", false, "run the full configurations (long)")
	f.BoolVar(&quick, "quick", false, "run the quick configurations (the default)")
	f.StringVar(&out, "out", "out", "output directory")
	f.Uint64Var(&seed, "seed", 1, "base random seed")
	f.BoolVar(&list, "list", false, "list the registered blocks and exit")
	return cmd
}
