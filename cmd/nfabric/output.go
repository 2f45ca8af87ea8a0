package main

import (
	"fmt"

	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// outputAnnotation is the pflag annotation that declares a flag an output
// path, with its kind (outputFile or outputDir) as the one value, so that
// checkOutputs checks it before any work.
const outputAnnotation = "nfabric-output"

// The kinds of output flag.
const (
	outputFile = "file"
	outputDir  = "dir"
)

// fileFlag registers a string flag naming a file the command writes ("-"
// for stdout where the command allows it).
func fileFlag(f *pflag.FlagSet, p *string, name, shorthand, usage string) {
	f.StringVarP(p, name, shorthand, "", usage)
	_ = f.SetAnnotation(name, outputAnnotation, []string{outputFile})
}

// dirFlag registers a string flag naming a directory the command writes
// into, value its default.
func dirFlag(f *pflag.FlagSet, p *string, name, value, usage string) {
	f.StringVar(p, name, value, usage)
	_ = f.SetAnnotation(name, outputAnnotation, []string{outputDir})
}

// outputKindOf is the kind of output f declares (fileFlag or dirFlag), ""
// for a flag that is no output.
func outputKindOf(f *pflag.Flag) string {
	if k := f.Annotations[outputAnnotation]; len(k) == 1 {
		return k[0]
	}
	return ""
}
