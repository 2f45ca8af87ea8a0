package main

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newVerifyCmd) }

const verifyLong = `verify writes sign packets of W virtual workers over a fixed address range of the
CXL controller model, reads them back under identity, FP32 bypass, G-Binary and
G-Ternary, and compares every response with its mode-specific oracle (byte for
byte for identity; the Sec. 2 reduction by an independent reference loop for
the low-bit modes). It also reports the naive read-equals-write oracle on the
same traffic, which flags the transformed modes and passes identity. Beyond the
paper it checks mode latching at transaction boundaries, error responses, and
random sweeps over W in 1..64, both layouts and every gate, with concurrent
writers and random mode switches, and that no read changed a stored byte.

Beyond the paper too, it checks the integer-sum formats %s: for each, a region
of W workers' codes read under every mode (the lane sums against lowbit's
reference loops), FP32 gradients end to end through the encoder, the controller
and the decoder to the workers' mean within the format's precision bound, the
stored bytes unchanged, mode latching on their regions, and --sweeps random
integer-sum cases (group "sum" and "sum-sweep" in the output).

It ends with "N passed, N failed" and exits 1 if any check failed.`

const verifyExample = `  nfabric verify
  nfabric verify --lines 100000 --seed 7
  nfabric verify --workers 5 --sweeps 500 --json`

// verifyHelp is verifyLong naming the integer-sum formats of lowbit's
// registry, so the help lists every format the tester checks.
func verifyHelp() string {
	var sums []string
	for _, f := range lowbit.Formats() {
		if f.Sum() {
			sums = append(sums, f.Label())
		}
	}
	return fmt.Sprintf(verifyLong, strings.Join(sums, " and "))
}

// verifyFlags are verify's flags.
type verifyFlags struct {
	p               experiments.FunctionalParams
	asJSON, verbose bool
}

func newVerifyCmd() *cobra.Command {
	var v verifyFlags
	cmd := &cobra.Command{
		Use:     "verify [--lines N] [--workers W] [--seed S] [--sweeps K] [--json]",
		Short:   "run the transformation-aware functional tester of the controller model (Sec. 6, and INT8/BFP8)",
		Long:    verifyHelp(),
		Example: verifyExample,
		Args:    cobra.NoArgs,
		RunE:    v.run,
	}
	f := cmd.Flags()
	f.IntVar(&v.p.Lines, "lines", 1000000, "64-byte packet lines in the Sec. 6 test")
	f.IntVar(&v.p.Workers, "workers", 8, "virtual workers W in the Sec. 6 packet test (1-8)")
	f.IntVar(&v.p.Sweeps, "sweeps", 64, "random cases beyond the paper (W 1-64, both layouts, all gates; as many integer-sum cases)")
	f.Uint64Var(&v.p.Seed, "seed", 1, "random seed")
	f.BoolVar(&v.asJSON, "json", false, "print the result as JSON (closing line on stderr)")
	f.BoolVarP(&v.verbose, "verbose", "v", false, "report progress on stderr")
	return cmd
}

func (v *verifyFlags) run(cmd *cobra.Command, _ []string) error {
	if err := requirePositive(cmd.Flags(), "lines", "workers"); err != nil {
		return err // the block reads a zero as its default
	}
	if v.verbose {
		v.p.Logf = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
	}
	res, err := experiments.Functional(cmd.Context(), v.p)
	if err != nil {
		return err // names itself ("verify: ...")
	}
	closing := experiments.FunctionalClosing(res)
	if v.asJSON {
		if err := res.WriteJSON(cmd.OutOrStdout()); err != nil {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), closing)
	} else {
		fmt.Fprint(cmd.OutOrStdout(), res.Text())
		fmt.Fprintln(cmd.OutOrStdout(), closing)
	}
	if res.Failed > 0 {
		return fmt.Errorf("verify: %d of %d checks failed", res.Failed, res.Passed+res.Failed)
	}
	return nil
}
