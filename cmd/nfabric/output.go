package main

import (
	"fmt"

	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
)

// printResult is every subcommand's one output path: it writes res into
// the directory out (JSON, Markdown, SVG; none when out is empty), names
// each file written on stderr, and prints res on stdout as JSON or as
// text.
func printResult(cmd *cobra.Command, res *report.Result, asJSON bool, out string) error {
	if out != "" {
		files, err := res.WriteFiles(out)
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
