package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newTimingCmd) }

func newTimingCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "timing",
		Short: "run the cycle-level timing model of the CXL path (Table 4, Fig. 3)",
		Long: `timing runs the discrete-event model of the path gradient cache lines take:
W request streams, a shared tags-only LRU LLC, N controller stacks each with a
fixed-latency memory, the k-stage low-bit aggregation pipeline and a CXL link
bandwidth gate (--memory ideal, the paper's model), or a CXL device with its
host bridge, link, protocol stages, queues and DRAM (--cxl-device NAME; see
'nfabric timing presets'). Every experiment runs each configuration twice,
identity and low-bit, which differ only by the pipeline: the run-time
difference is the exposed datapath cost.

The model defaults are the paper's (Sec. 4) plus documented assumptions; see
'go doc github.com/neuronfabric/nfabric/timing' and 'nfabric timing config'.
--config reads a YAML file (model: and experiments: sections, unknown fields
rejected); flags override the file.`,
		// Without a subcommand print help; an unknown one is a usage error
		// (cobra would otherwise print help and exit 0).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown timing subcommand %q (see 'nfabric timing --help')", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newTimingTable4Cmd(), newTimingEnvelopeCmd(), newTimingConfigCmd(), newTimingReplayCmd(),
		newTimingPresetsCmd(), newTimingRunCmd(), newTimingLoadedCmd())
	return cmd
}

// timingFlags are the flags shared by the timing subcommands: the
// setup's (experiments.AddTimingFlags) and how to read and print it.
type timingFlags struct {
	config     string
	json       bool
	quick      bool
	out        string
	setupFlags *experiments.TimingFlags
}

func (tf *timingFlags) add(cmd *cobra.Command, withOut bool) {
	f := cmd.Flags()
	f.StringVar(&tf.config, "config", "", "YAML configuration file (see 'nfabric timing config')")
	f.BoolVar(&tf.json, "json", false, "print the result as JSON")
	f.BoolVar(&tf.quick, "quick", false, "use the shorter sweeps of 'reproduce' (same end points)")
	if withOut {
		dirFlag(f, &tf.out, "out", "", "also write JSON, Markdown and SVG figures into this directory")
	}
	tf.setupFlags = experiments.AddTimingFlags(f, experiments.DefaultTimingSetup())
}

// base is the default setup, or --config's.
func (tf *timingFlags) base() (experiments.TimingSetup, error) {
	s := experiments.DefaultTimingSetup()
	if tf.config == "" {
		return s, nil
	}
	f, err := os.Open(tf.config)
	if err != nil {
		return s, fmt.Errorf("read config %s: %w", tf.config, err)
	}
	defer f.Close()
	if s, err = experiments.DecodeTimingSetup(f); err != nil {
		return s, fmt.Errorf("read config %s: %w", tf.config, err)
	}
	return s, nil
}

// setup reads --config (if any), applies --quick and every flag the user
// set, and validates the result.
func (tf *timingFlags) setup(cmd *cobra.Command) (experiments.TimingSetup, error) {
	s, err := tf.base()
	if err != nil {
		return s, err
	}
	if tf.quick {
		s.Experiments.QuickSweeps()
	}
	if err := tf.setupFlags.Apply(cmd.Flags(), &s); err != nil {
		return s, err
	}
	if err := s.Validate(); err != nil {
		if tf.config != "" {
			return s, usagef("configuration (%s and flags): %v", tf.config, err)
		}
		return s, usagef("configuration: %v", err)
	}
	s.Model.Streams.Layout = s.Model.StreamLayout() // print the layout the run uses
	return s, nil
}

func (tf *timingFlags) print(cmd *cobra.Command, res *report.Result) error {
	if res.Block == "" {
		res.Block = "timing"
	}
	return printResult(cmd, res, tf.json, tf.out)
}

func newTimingTable4Cmd() *cobra.Command {
	var tf timingFlags
	cmd := &cobra.Command{
		Use:   "table4",
		Short: "Table 4: exposed G-Binary datapath cost, ours beside the paper's",
		Example: `  nfabric timing table4
  nfabric timing table4 --json
  nfabric timing table4 --outstanding 64 --congested-share 0.5
  nfabric timing table4 --config timing.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tf.setup(cmd)
			if err != nil {
				return err
			}
			res, err := experiments.TimingTable4(ctxOf(cmd), s)
			if err != nil {
				return fmt.Errorf("timing table4: %w", err)
			}
			res.Block = "timing-table4"
			return tf.print(cmd, res)
		},
	}
	tf.add(cmd, true)
	return cmd
}

func newTimingEnvelopeCmd() *cobra.Command {
	var tf timingFlags
	cmd := &cobra.Command{
		Use:   "envelope",
		Short: "Fig. 3: operating envelope (bandwidth x depth, latency, footprint, late mode update)",
		Example: `  nfabric timing envelope --out out/timing
  nfabric timing envelope --quick --json
  nfabric timing envelope --stacks 2 --step-ms 250`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tf.setup(cmd)
			if err != nil {
				return err
			}
			res, err := experiments.TimingEnvelope(ctxOf(cmd), s)
			if err != nil {
				return fmt.Errorf("timing envelope: %w", err)
			}
			res.Block = "timing-envelope"
			return tf.print(cmd, res)
		},
	}
	tf.add(cmd, true)
	return cmd
}

func newTimingConfigCmd() *cobra.Command {
	var tf timingFlags
	cmd := &cobra.Command{
		Use:   "config",
		Short: "print the presets and the effective configuration as YAML (a starting point for --config)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tf.setup(cmd)
			if err != nil {
				return err
			}
			// The presets go first as YAML comments, so the output stays a
			// valid --config file.
			var buf bytes.Buffer
			if err := timing.DescribePresets(&buf); err != nil {
				return err
			}
			for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
				fmt.Fprintln(cmd.OutOrStdout(), strings.TrimRight("# "+l, " "))
			}
			return experiments.EncodeTimingSetup(cmd.OutOrStdout(), s)
		},
	}
	tf.add(cmd, false)
	return cmd
}

func ctxOf(cmd *cobra.Command) context.Context {
	if c := cmd.Context(); c != nil {
		return c
	}
	return context.Background()
}

func newTimingPresetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "presets",
		Short: "list the model (CXL device), DRAM and CXL link presets with the values they set, their published anchors and what set each value",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return timing.DescribePresets(cmd.OutOrStdout())
		},
	}
}
