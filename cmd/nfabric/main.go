// Command nfabric runs every part of the NEURON-Fabric system: payload
// encoding, the controller's functional model, its cycle-level timing, the
// All-Reduce cost model, virtual-worker training, the control plane and the
// hardware datapath, and reproduces the paper's evidence blocks.
//
// This package only parses flags and wires packages together; each
// subcommand lives in its own file.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// usageError marks a mistake in the command line: it exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "nfabric",
		Short: "NEURON-Fabric: CXL-side low-bit gradient aggregation, modelled end to end",
		Long: `nfabric implements NEURON-Fabric, a CXL-memory-controller architecture that
aggregates low-bit (sign and ternary) gradient payloads for distributed
training while keeping FP32 as the calibration and recovery path.

Start with 'nfabric reproduce', which runs every evidence block of the paper
and writes its tables and figures under out/.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, c := range []*cobra.Command{
		newVersionCmd(),
		newReproduceCmd(),
	} {
		root.AddCommand(c)
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands lets each subcommand file add itself without editing this
// file.
var subcommands []func() *cobra.Command

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit status: 0 on success,
// 2 on a usage error, 1 on any other failure.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "nfabric: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintln(stderr, "Run 'nfabric --help' for usage.")
		return 2
	}
	return 1
}

// isCobraUsage recognises cobra's own argument errors, which it returns as
// plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
