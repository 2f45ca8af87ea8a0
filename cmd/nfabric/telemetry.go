package main

import (
	"fmt"
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

// ns3Opts holds the flags of newTelemetryNS3Cmd.
type ns3Opts struct {
	c                     netsim.Config
	model, topo, bg, link string
	fabric, delay, ivl    string
	out, linksOut, fig    string
	bucketMiB, smooth     float64
	batch                 int
	asJSON                bool
}

// add registers the flags on f.
func (o *ns3Opts) add(f *pflag.FlagSet) {
	f.StringVar(&o.model, "model", "gpt2-xl", "built-in model profile or YAML profile file")
	f.IntVar(&o.batch, "batch", 0, "per-worker batch (0: the profile's)")
	f.Float64Var(&o.bucketMiB, "bucket-mib", 32, "gradient bucket cap in MiB")
	f.IntVar(&o.c.Workers, "workers", 8, "GPU hosts W")
	f.StringVar(&o.topo, "topology", "star", "star or leafspine")
	f.IntVar(&o.c.Leaves, "leaves", 2, "leaf switches (leafspine)")
	f.IntVar(&o.c.Spines, "spines", 2, "spine switches (leafspine)")
	f.StringVar(&o.link, "link", "50GB/s", "host link rate (e.g. 400Gb/s, 50GB/s)")
	f.StringVar(&o.fabric, "fabric-link", "", "leaf-spine link rate (default: the host rate)")
	f.StringVar(&o.delay, "delay", "1us", "propagation delay of every link")
	f.IntVar(&o.c.QueuePackets, "queue", 100, "device queue size in packets (drop-tail)")
	f.StringVar(&o.bg, "background", "none", "background flows: none, bulk=N, onoff=N@SHARE, on=DUR, off=DUR")
	f.IntVar(&o.c.Steps, "steps", 3, "training steps to simulate")
	f.StringVar(&o.ivl, "interval", "", "sampling interval (default: a tenth of the step)")
	f.Float64Var(&o.c.Scale, "scale", 1000, "divide bucket bytes and link rates by this (>= 1; 1 runs unscaled)")
	f.Uint64Var(&o.c.Seed, "seed", 1, "random seed")
	f.Float64Var(&o.smooth, "smooth", 0.05, "Commander smoothing weight for the verdict")
	f.StringVarP(&o.out, "out", "o", "", "write the telemetry CSV here (- for stdout: the summary then goes to stderr)")
	f.StringVar(&o.linksOut, "links-out", "", "also write per-link utilization and queue samples (CSV) here")
	f.StringVar(&o.fig, "figure", "", "also write the figure (utilization, queue, pressure, Commander mode over time) as SVG here")
	f.BoolVar(&o.asJSON, "json", false, "print the summary as JSON")
}

// check validates the flags into o.c and returns the Commander settings
// of the verdict.
func (o *ns3Opts) check() (cc control.CommanderConfig, err error) {
	if o.out == "" {
		return cc, usagef("telemetry ns3: -o FILE is required")
	}
	if o.c.Topology, err = netsim.ParseTopology(o.topo); err != nil {
		return cc, usagef("--topology: %v", err)
	}
	if o.c.Background, err = netsim.ParseBackground(o.bg); err != nil {
		return cc, usagef("--background: %v", err)
	}
	if o.c.HostRate, err = collective.ParseBandwidth(o.link); err != nil {
		return cc, usagef("--link: %v", err)
	}
	if o.fabric != "" {
		if o.c.FabricRate, err = collective.ParseBandwidth(o.fabric); err != nil {
			return cc, usagef("--fabric-link: %v", err)
		}
	}
	d, err := time.ParseDuration(o.delay)
	if err != nil || d < 0 {
		return cc, usagef("--delay %q: want a duration such as 1us", o.delay)
	}
	o.c.DelayNS = d.Nanoseconds()
	if o.ivl != "" {
		iv, err := time.ParseDuration(o.ivl)
		if err != nil || iv <= 0 {
			return cc, usagef("--interval %q: want a positive duration such as 10ms", o.ivl)
		}
		o.c.IntervalNS = iv.Nanoseconds()
	}
	if !(o.bucketMiB > 0) {
		return cc, usagef("--bucket-mib %v must be > 0", o.bucketMiB)
	}
	if o.c.Scale == 0 {
		return cc, usagef("--scale 0: want >= 1 (1 runs unscaled)")
	}
	if o.out == "-" && o.asJSON {
		return cc, usagef("-o - and --json both write stdout: give -o a file")
	}
	if err := o.c.Validate(); err != nil {
		return cc, usagef("%v", err)
	}
	cc = control.DefaultConfig().Commander
	cc.Smooth = o.smooth
	if err := cc.Validate(); err != nil {
		return cc, usagef("--smooth: %v", err)
	}
	return cc, nil
}

func newTelemetryNS3Cmd() *cobra.Command {
	var o ns3Opts
	cmd := &cobra.Command{
		Use:     "ns3 --model NAME -o FILE",
		Short:   "simulate a training job's gradient traffic in ns-3 and write the Commander's telemetry",
		Long:    ns3Long,
		Example: ns3Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cc, err := o.check()
			if err != nil {
				return err
			}
			tr, err := netsim.Trace(o.model, o.batch, int64(o.bucketMiB*(1<<20)))
			if err != nil {
				return usagef("--model: %v", err)
			}
			sched, err := netsim.Plan(o.c, tr)
			if err != nil {
				return usagef("%v", err)
			}
			if err := netsim.Available(); err != nil {
				return err
			}
			res, err := netsim.Run(cmd.Context(), o.c, sched)
			if err != nil {
				return fmt.Errorf("%s: %w", tr.Model, err)
			}
			return writeNS3Outputs(cmd, res, cc, ns3Files{o.out, o.linksOut, o.fig}, o.asJSON)
		},
	}
	o.add(cmd.Flags())
	return cmd
}

// ns3Files are the files 'telemetry ns3' writes: the telemetry, and
// optionally the per-link data and the figure.
type ns3Files struct{ out, links, figure string }

// writeNS3Outputs writes the telemetry (and the per-link CSV and the
// figure, when asked for) and prints the run's summary.
func writeNS3Outputs(cmd *cobra.Command, res *netsim.Result, cc control.CommanderConfig, files ns3Files, asJSON bool) error {
	tel, err := res.Telemetry()
	if err != nil {
		return err
	}
	v, err := netsim.Judge(tel, cc)
	if err != nil {
		return err
	}
	if err := writeOutput(cmd, files.out, func(w io.Writer) error { return control.WriteTelemetry(w, tel) }); err != nil {
		return err
	}
	samples, loads, err := res.Samples()
	if err != nil {
		return err
	}
	if files.links != "" {
		if err := report.WriteAtomic(files.links, func(w io.Writer) error { return netsim.WriteLoads(w, loads, samples, v.Modes) }); err != nil {
			return err
		}
	}
	if files.figure != "" {
		if err := writeNS3Figure(files.figure, res, loads, samples, v, cc); err != nil {
			return err
		}
	}
	return printResult(cmd, experiments.NS3TelemetryResult(res, len(tel), v, cc, files.out), asJSON, "")
}

// writeNS3Figure writes the telemetry figure as SVG to path.
func writeNS3Figure(path string, res *netsim.Result, loads []netsim.Interval, samples []netsim.Sample, v netsim.Verdict, cc control.CommanderConfig) error {
	ss, err := netsim.FigureSeries(loads, samples, v.Modes)
	if err != nil {
		return err
	}
	lp := experiments.TelemetryPlot(fmt.Sprintf("ns-3 telemetry: %s, %d hosts, background %s", res.Schedule.Model, res.Config.Workers, res.Config.Background), ss, cc)
	svg, err := lp.SVG()
	if err != nil {
		return err
	}
	return report.WriteFileAtomic(path, svg)
}

const syntheticLong = `synthetic writes a trace of the synthetic generator the control block uses
(control.HealthyScenario, control.CongestedScenario, or control.Episodes
alternating the two): gradient bursts in the backward tail of each step on a
137.4 GB/s link shared with background load.`
const syntheticExample = `  nfabric telemetry synthetic --scenario episodes -o t.csv
  nfabric telemetry synthetic --scenario congested --duration 5s --interval 1ms -o c.csv`

// durationFlag is a duration flag's text and where its nanoseconds go.
type durationFlag struct {
	s   string
	dst *int64
}

// positiveDurations parses each flag as a positive duration, a usage
// error naming the flag otherwise.
func positiveDurations(flags map[string]durationFlag) error {
	for name, kv := range flags {
		d, err := time.ParseDuration(kv.s)
		if err != nil || d <= 0 {
			return usagef("--%s %q: want a positive duration", name, kv.s)
		}
		*kv.dst = d.Nanoseconds()
	}
	return nil
}

func newTelemetrySyntheticCmd() *cobra.Command {
	var (
		scenario, dur, ivl, step, episode, out string
		seed                                   uint64
	)
	cmd := &cobra.Command{
		Use:     "synthetic -o FILE",
		Short:   "write the synthetic generator's healthy, congested or alternating telemetry",
		Long:    syntheticLong,
		Example: syntheticExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("telemetry synthetic: -o FILE is required")
			}
			var durNS, ivlNS, stepNS, epNS int64
			if err := positiveDurations(map[string]durationFlag{"duration": {dur, &durNS}, "interval": {ivl, &ivlNS},
				"step": {step, &stepNS}, "episode": {episode, &epNS}}); err != nil {
				return err
			}
			h, c := control.HealthyScenario(), control.CongestedScenario()
			h.StepNS, c.StepNS = stepNS, stepNS
			var tel []control.Telemetry
			var err error
			switch scenario {
			case "healthy":
				tel, err = h.Generate(durNS, ivlNS, seed)
			case "congested":
				tel, err = c.Generate(durNS, ivlNS, seed)
			case "episodes":
				tel, err = control.Episodes(h, c, epNS, durNS, ivlNS, seed)
			default:
				return usagef("--scenario %q: want healthy, congested or episodes", scenario)
			}
			if err != nil {
				return usagef("%v", err)
			}
			if err := writeOutput(cmd, out, func(w io.Writer) error { return control.WriteTelemetry(w, tel) }); err != nil {
				return err
			}
			res := &report.Result{Block: "telemetry", Title: "synthetic telemetry",
				Summary: []string{fmt.Sprintf("synthetic %s telemetry: %d samples every %s over %s -> %s", scenario, len(tel), ivl, dur, out)}}
			return printResult(cmd, res, false, "")
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenario, "scenario", "episodes", "healthy, congested or episodes (alternating)")
	f.StringVar(&dur, "duration", "10s", "trace length")
	f.StringVar(&ivl, "interval", "10ms", "sampling interval")
	f.StringVar(&step, "step", "100ms", "training step period")
	f.StringVar(&episode, "episode", "2s", "episode length (episodes)")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.StringVarP(&out, "out", "o", "", "write the telemetry CSV here (- for stdout: the summary then goes to stderr)")
	return cmd
}

func newTelemetryAllReduceCmd() *cobra.Command {
	var (
		c                 netsim.Config
		topo, link, delay string
		bucketMiB         float64
		asJSON            bool
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
			var err error
			if c.Topology, err = netsim.ParseTopology(topo); err != nil {
				return usagef("--topology: %v", err)
			}
			if c.HostRate, err = collective.ParseBandwidth(link); err != nil {
				return usagef("--link: %v", err)
			}
			d, err := time.ParseDuration(delay)
			if err != nil || d < 0 {
				return usagef("--delay %q: want a duration such as 1us", delay)
			}
			c.DelayNS = d.Nanoseconds()
			if !(bucketMiB > 0) {
				return usagef("--bucket-mib %v must be > 0", bucketMiB)
			}
			if err := netsim.Available(); err != nil {
				return err
			}
			rc, err := netsim.CheckRing(cmd.Context(), c, int64(bucketMiB*(1<<20)))
			if err != nil {
				return err
			}
			res := &report.Result{Block: "telemetry", Title: "ns-3 ring All-Reduce", Data: rc, Tables: []report.Table{experiments.NS3RingTable(rc)}}
			return printResult(cmd, res, asJSON, "")
		},
	}
	f := cmd.Flags()
	f.Float64Var(&bucketMiB, "bucket-mib", 32, "bucket size in MiB")
	f.IntVar(&c.Workers, "workers", 8, "hosts W")
	f.StringVar(&topo, "topology", "star", "star or leafspine")
	f.IntVar(&c.Leaves, "leaves", 2, "leaf switches (leafspine)")
	f.IntVar(&c.Spines, "spines", 2, "spine switches (leafspine)")
	f.StringVar(&link, "link", "50GB/s", "host link rate")
	f.StringVar(&delay, "delay", "1us", "propagation delay of every link")
	f.IntVar(&c.QueuePackets, "queue", 100, "device queue size in packets")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
