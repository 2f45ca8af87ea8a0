package main

import (
	"fmt"
	"path/filepath"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newReportCmd) }

func newReportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "work with reproduce's outputs (merge sharded runs)",
	}
	cmd.AddCommand(newReportMergeCmd())
	return cmd
}

func newReportMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "merge 'reproduce --shard' outputs into the report a single run writes",
		Long: `merge reads every shard-I-of-N.json in the given directories (written by
'nfabric reproduce --shard I/N'), checks that they come from one run and
together hold each unit exactly once, and writes --out: index.html, REPORT.md
and each block's NAME.md, NAME.json and SVG figures, byte for byte what a single
'nfabric reproduce' with the same --only/--tier/--seed writes.`,
		Example: `  nfabric reproduce --only timing,collective --shard 0/2 --out shards
  nfabric reproduce --only timing,collective --shard 1/2 --out shards
  nfabric report merge shards --out out`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			logf := func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), f+"\n", a...) }
			outs, err := run.Merge(dirs, out, logf)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s\n", filepath.Join(out, "index.html"), filepath.Join(out, "REPORT.md"))
			return run.FailedBlocks(outs)
		},
	}
	dirFlag(cmd.Flags(), &out, "out", "out", "output directory")
	return cmd
}
