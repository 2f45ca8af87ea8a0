package main

import (
	"fmt"

	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
)

// printResult is the one output path for a command's result (its tables,
// summary and figures, laid out by the owning package): it writes res into
// the directory out (SVG, Markdown, JSON, in that order, none left behind
// when the command is interrupted: report.Result.WriteFilesContext; none
// when out is empty), names
// each file written on stderr, and prints res on stdout as JSON or as
// text. What does not go through it is a command's data product, written
// as it is (writeOutput or report.WriteAtomic: payload and telemetry
// files, aggregates, Verilog, YAML configurations, the preset list, the
// version line), reproduce's and report merge's "wrote" lines and --list,
// and the line-per-case progress of verify, hw cosim and serve check.
func printResult(cmd *cobra.Command, res *report.Result, asJSON bool, out string) error {
	if out != "" {
		files, err := res.WriteFilesContext(cmd.Context(), out)
		if err != nil {
			return fmt.Errorf("write results to %s: %w", out, err)
		}
		for _, f := range files {
			fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
		}
	}
	if asJSON {
		return res.WriteJSON(cmd.OutOrStdout())
	}
	_, err := fmt.Fprint(cmd.OutOrStdout(), res.Text())
	return err
}
