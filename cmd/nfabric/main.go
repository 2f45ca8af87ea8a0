// Command nfabric runs every part of the NEURON-Fabric system: payload
// encoding, the controller's functional model, its cycle-level timing, the
// All-Reduce cost model, virtual-worker training, the control plane and the
// hardware datapath, and reproduces the paper's evidence blocks.
//
// This package only parses flags and wires packages together; each
// subcommand lives in its own file.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usagef is usage.Errorf: a mistake in the command line, exit status 2.
func usagef(format string, args ...any) error { return usage.Errorf(format, args...) }

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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage.Wrap(err) })
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return checkFlags(cmd) }
	for _, c := range []*cobra.Command{
		newVersionCmd(),
		newReproduceCmd(),
	} {
		root.AddCommand(c)
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	refuseUnknownSubcommands(root)
	typeArgErrors(root)
	return root
}

// refuseUnknownSubcommands gives every command group without its own
// action (nfabric, nfabric payload, train, hw, ...) one: help when called
// bare, a usage error naming the word for an unknown subcommand (cobra
// would print the help and exit 0, or, at the root, return an untyped
// error).
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(cmd, args[0])
			}
			return cmd.Help()
		}
	}
}

// unknownSubcommand is the usage error for a word that names no
// subcommand of cmd, with cobra's suggestions of close names.
func unknownSubcommand(cmd *cobra.Command, word string) error {
	hint := ""
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	}
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	return usage.Errorf("unknown %s subcommand %q%s (see '%s --help')", cmd.CommandPath(), word, hint, cmd.CommandPath())
}

// typeArgErrors wraps every command's positional-argument validator so
// that its error is a usage error at the source: cobra returns plain
// errors ("accepts 1 arg(s), received 2", "unknown command"), and main
// never classifies errors by their text.
func typeArgErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		typeArgErrors(sub)
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error { return usage.Wrap(check(cmd, args)) }
	}
}

// subcommands lets each subcommand file add itself without editing this
// file.
var subcommands []func() *cobra.Command

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	var signalled atomic.Int32
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		code := signalStatus(s)
		signalled.Store(int32(code))
		cancel()
		// Commands that watch the context return by themselves (and
		// clean up behind them); give them a moment, then remove what is
		// left and exit anyway. A second signal exits at once.
		select {
		case <-time.After(2 * time.Second):
		case <-sigs:
		}
		report.RemoveTemps()
		fmt.Fprintf(os.Stderr, "nfabric: interrupted (%v)\n", s)
		os.Exit(code)
	}()
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if c := signalled.Load(); c != 0 {
		report.RemoveTemps()
		fmt.Fprintln(os.Stderr, "nfabric: interrupted")
		code = int(c)
	}
	os.Exit(code)
}

// signalStatus is the shell's exit status for a process ended by s: 128
// plus the signal number (130 for SIGINT, 143 for SIGTERM).
func signalStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// execute runs the command line and returns the exit status: 0 on success,
// 2 on a usage error, 1 on any other failure.
func execute(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is execute under ctx, which the interrupt handler cancels.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "nfabric: %v\n", err)
	if usage.Is(err) {
		fmt.Fprintln(stderr, "Run 'nfabric --help' for usage.")
		return 2
	}
	return 1
}

// checkFlags runs cobra's checks of required flags and flag groups
// (which cobra would run next and return untyped) as usage errors, then
// checkOutputs.
func checkFlags(cmd *cobra.Command) error {
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return usage.Wrap(err)
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return usage.Wrap(err)
	}
	return checkOutputs(cmd)
}

// checkOutputs checks every output path of cmd before it does any work:
// a flag declared with fileFlag names a file (report.CheckOutput's rules,
// "-" is stdout), one declared with dirFlag a directory
// (report.CheckOutputDir). A bad path is a usage error, and so is a file
// output "-" beside --json: both would write stdout.
func checkOutputs(cmd *cobra.Command) error {
	var err error
	asJSON := cmd.Flags().Lookup("json")
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		kind, v := outputKindOf(f), f.Value.String()
		if err != nil || kind == "" || v == "" {
			return
		}
		if v == "-" {
			if kind == outputFile && asJSON != nil && asJSON.Value.String() == "true" {
				err = usage.Errorf("--%s - and --json both write stdout: give --%s a file", f.Name, f.Name)
			}
			return
		}
		if kind == outputDir {
			err = report.CheckOutputDir(v)
		} else {
			_, _, err = report.CheckOutput(v)
		}
		if err != nil {
			err = usage.Errorf("--%s: %w", f.Name, err)
		}
	})
	return err
}
