package main

import (
	"fmt"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/verify"
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

It ends with "N passed, N failed" and exits 1 if any check failed.`
const verifyExample = `  nfabric verify
  nfabric verify --lines 100000 --seed 7
  nfabric verify --workers 5 --sweeps 500 --json`

func newVerifyCmd() *cobra.Command {
	var (
		lines, workers, sweeps int
		seed                   uint64
		asJSON, verbose        bool
	)
	cmd := &cobra.Command{
		Use:     "verify [--lines N] [--workers W] [--seed S] [--sweeps K] [--json]",
		Short:   "run the transformation-aware functional tester of the controller model (Sec. 6)",
		Long:    verifyLong,
		Example: verifyExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lines < 1 || lines > verify.MaxLines {
				return usagef("--lines %d out of range [1, %d]", lines, verify.MaxLines)
			}
			if workers < 1 || workers > lowbit.MaxPacketWorkers {
				return usagef("--workers %d: the paper's packet carries 1 to %d workers", workers, lowbit.MaxPacketWorkers)
			}
			if sweeps < 0 || sweeps > verify.MaxSweeps {
				return usagef("--sweeps %d out of range [0, %d]", sweeps, verify.MaxSweeps)
			}
			p := experiments.FunctionalParams{Lines: lines, Workers: workers, Sweeps: sweeps, Seed: seed}
			if verbose {
				p.Logf = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
			}
			res, err := experiments.Functional(cmd.Context(), p)
			if err != nil {
				return err // names itself ("verify: ...")
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := res.WriteJSON(out); err != nil {
					return err
				}
				fmt.Fprintln(cmd.ErrOrStderr(), experiments.FunctionalClosing(res))
			} else {
				fmt.Fprint(out, res.Text())
				fmt.Fprintln(out, experiments.FunctionalClosing(res))
			}
			if res.Failed > 0 {
				return fmt.Errorf("verify: %d of %d checks failed", res.Failed, res.Passed+res.Failed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&lines, "lines", 1000000, "64-byte packet lines in the Sec. 6 test")
	f.IntVar(&workers, "workers", 8, "virtual workers W in the Sec. 6 packet test (1-8)")
	f.IntVar(&sweeps, "sweeps", 64, "random cases beyond the paper (W 1-64, both layouts, all gates)")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON (closing line on stderr)")
	f.BoolVarP(&verbose, "verbose", "v", false, "report progress on stderr")
	return cmd
}
