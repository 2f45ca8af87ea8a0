package main

import (
	"io"
	"time"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newTelemetryCmd) }

func newTelemetryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "telemetry",
		Short: "write network telemetry traces for the Commander (ns-3 or synthetic)",
		Long: `telemetry writes the CSV trace the Commander reads ('nfabric pilot
--telemetry FILE'; format: time_ns,demand_gbps,capacity_gbps,line_reads_per_s),
from a packet-level ns-3 simulation of a training job's gradient traffic
('telemetry ns3') or from the synthetic healthy/congested generator
('telemetry synthetic').`,
	}
	cmd.AddCommand(newTelemetryNS3Cmd(), newTelemetrySyntheticCmd(), newTelemetryAllReduceCmd())
	return cmd
}

const ns3Long = `ns3 runs the ns-3 program netsim/ns3/nfabric-telemetry.cc (built on first use
against Debian's libns3-dev; or set NFABRIC_NS3 to a built binary): W hosts on a
star or leaf-spine network, every bucket of the model's FP32 gradients ring
All-Reduced at the times the FP32 reference schedule gives, beside background
flows, every link's busy time and queue sampled at a fixed interval. The
bottleneck link of each interval becomes one telemetry sample: demand = the
gradient load offered in the interval (the most-pressed host's backlog plus
new releases over the interval, at most its hop's line rate), capacity = the
hop's rate less the background's share (see 'go doc
github.com/neuronfabric/nfabric/netsim'); --links-out puts the traffic each
link carried (grad_gbps, bg_gbps) beside them.

--background is "none" or items bulk=N (bulk TCP flows), onoff=N@SHARE (UDP
on/off flows at SHARE of the host rate), on=DUR, off=DUR (mean on/off times;
off=0: always on). --scale divides bucket bytes and link rates to keep the
packet count small (times and pressures are kept; see the package doc).
Without ns-3 it fails naming the Debian package to install (libns3-dev).

The Commander's verdict (healthy, congested or mixed) is computed with the
control plane's default thresholds and smoothing --smooth.`
const ns3Example = `  nfabric telemetry ns3 --model gpt2-xl --workers 8 -o healthy.csv
  nfabric telemetry ns3 --model gpt2-xl --workers 8 --background onoff=8@0.9,off=0 -o congested.csv
  nfabric telemetry ns3 --model bert-large --topology leafspine --leaves 2 --spines 2 --background bulk=4 -o t.csv`

// ns3Flags holds the flags of newTelemetryNS3Cmd.
type ns3Flags struct {
	o                  netsim.JobOptions
	out, linksOut, fig string
	asJSON             bool
}

// add registers the flags on f.
func (n *ns3Flags) add(f *pflag.FlagSet) {
	o, c := &n.o, &n.o.Config
	o.Commander = control.DefaultConfig().Commander
	f.StringVar(&o.Model, "model", "gpt2-xl", "built-in model profile or YAML profile file")
	f.IntVar(&o.Batch, "batch", 0, "per-worker batch (0: the profile's)")
	f.Float64Var(&o.BucketMiB, "bucket-mib", 32, "gradient bucket cap in MiB")
	addNetwork(f, c)
	parsedVar(f, &c.FabricRate, "fabric-link", "", collective.ParseBandwidth, "leaf-spine link rate (default: the host rate)")
	parsedVar(f, &c.Background, "background", "none", netsim.ParseBackground, "background flows: none, bulk=N, onoff=N@SHARE, on=DUR, off=DUR")
	f.IntVar(&c.Steps, "steps", 3, "training steps to simulate")
	nsVar(f, &c.IntervalNS, "interval", 0, "sampling interval (0: a tenth of the step)")
	f.Float64Var(&c.Scale, "scale", 1000, "divide bucket bytes and link rates by this (>= 1; 1 runs unscaled)")
	f.Uint64Var(&c.Seed, "seed", 1, "random seed")
	f.Float64Var(&o.Commander.Smooth, "smooth", 0.05, "Commander smoothing weight for the verdict")
	fileFlag(f, &n.out, "out", "o", "write the telemetry CSV here (- for stdout: the summary then goes to stderr)")
	fileFlag(f, &n.linksOut, "links-out", "", "also write per-link utilization and queue samples (CSV) here")
	fileFlag(f, &n.fig, "figure", "", "also write the figure (utilization, queue, pressure, Commander mode over time) as SVG here")
	f.BoolVar(&n.asJSON, "json", false, "print the summary as JSON")
}

// addNetwork registers the network flags 'telemetry ns3' and 'telemetry
// allreduce' share.
func addNetwork(f *pflag.FlagSet, c *netsim.Config) {
	f.IntVar(&c.Workers, "workers", 8, "GPU hosts W")
	parsedVar(f, &c.Topology, "topology", "star", netsim.ParseTopology, "star or leafspine")
	f.IntVar(&c.Leaves, "leaves", 2, "leaf switches (leafspine)")
	f.IntVar(&c.Spines, "spines", 2, "spine switches (leafspine)")
	parsedVar(f, &c.HostRate, "link", "50GB/s", collective.ParseBandwidth, "host link rate (e.g. 400Gb/s, 50GB/s)")
	nsVar(f, &c.DelayNS, "delay", time.Microsecond, "propagation delay of every link")
	f.IntVar(&c.QueuePackets, "queue", 100, "device queue size in packets (drop-tail)")
}

func newTelemetryNS3Cmd() *cobra.Command {
	var n ns3Flags
	cmd := &cobra.Command{
		Use:     "ns3 --model NAME -o FILE",
		Short:   "simulate a training job's gradient traffic in ns-3 and write the Commander's telemetry",
		Long:    ns3Long,
		Example: ns3Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			j, err := netsim.RunJob(cmd.Context(), n.o)
			if err != nil {
				return err
			}
			return n.write(cmd, j)
		},
	}
	n.add(cmd.Flags())
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// write writes the job's telemetry (and the per-link CSV and the figure,
// when asked for) and prints its summary.
func (n *ns3Flags) write(cmd *cobra.Command, j *netsim.Job) error {
	if err := writeOutput(cmd, n.out, j.WriteTelemetry); err != nil {
		return err
	}
	if n.linksOut != "" {
		if err := report.WriteAtomic(n.linksOut, j.WriteLoads); err != nil {
			return err
		}
	}
	if n.fig != "" {
		svg, err := experiments.NS3TelemetryFigure(j, n.o.Commander)
		if err != nil {
			return err
		}
		if err := report.WriteFileAtomic(n.fig, svg); err != nil {
			return err
		}
	}
	return printResult(cmd, experiments.NS3TelemetryResult(j, n.o.Commander, n.out), n.asJSON, "")
}

const syntheticLong = `synthetic writes a trace of the synthetic generator the control block uses
(control.HealthyScenario, control.CongestedScenario, or control.Episodes
alternating the two): gradient bursts in the backward tail of each step on a
137.4 GB/s link shared with background load.`
const syntheticExample = `  nfabric telemetry synthetic --scenario episodes -o t.csv
  nfabric telemetry synthetic --scenario congested --duration 5s --interval 1ms -o c.csv`

func newTelemetrySyntheticCmd() *cobra.Command {
	var (
		s   = control.DefaultSynthetic()
		out string
	)
	cmd := &cobra.Command{
		Use:     "synthetic -o FILE",
		Short:   "write the synthetic generator's healthy, congested or alternating telemetry",
		Long:    syntheticLong,
		Example: syntheticExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tel, err := s.Generate()
			if err != nil {
				return err
			}
			if err := writeOutput(cmd, out, func(w io.Writer) error { return control.WriteTelemetry(w, tel) }); err != nil {
				return err
			}
			return printResult(cmd, experiments.SyntheticTelemetryResult(s, len(tel), out), false, "")
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.Scenario, "scenario", s.Scenario, "healthy, congested or episodes (alternating)")
	f.DurationVar(&s.Duration, "duration", s.Duration, "trace length")
	f.DurationVar(&s.Interval, "interval", s.Interval, "sampling interval")
	f.DurationVar(&s.Step, "step", s.Step, "training step period")
	f.DurationVar(&s.Episode, "episode", s.Episode, "episode length (episodes)")
	f.Uint64Var(&s.Seed, "seed", s.Seed, "random seed")
	fileFlag(f, &out, "out", "o", "write the telemetry CSV here (- for stdout: the summary then goes to stderr)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newTelemetryAllReduceCmd() *cobra.Command {
	var (
		c         netsim.Config
		bucketMiB float64
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "allreduce",
		Short: "time one packet-level ring All-Reduce in ns-3 beside the analytical models",
		Long: `allreduce runs the ns-3 program on one bucket (unscaled, no background) and
prints its ring All-Reduce time beside collective's alpha-beta ring, tree and
halving-doubling figures and ASTRA-sim's analytical ring on the same hosts.`,
		Example: `  nfabric telemetry allreduce --bucket-mib 32 --workers 8 --link 50GB/s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := netsim.CheckRing(cmd.Context(), c, int64(bucketMiB*(1<<20)))
			if err != nil {
				return err
			}
			return printResult(cmd, experiments.NS3RingResult(rc), asJSON, "")
		},
	}
	f := cmd.Flags()
	f.Float64Var(&bucketMiB, "bucket-mib", 32, "bucket size in MiB")
	addNetwork(f, &c)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
