package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/report"
	"github.com/spf13/cobra"
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("telemetry: give a subcommand (ns3, synthetic)")
		},
	}
	cmd.AddCommand(newTelemetryNS3Cmd(), newTelemetrySyntheticCmd(), newTelemetryAllReduceCmd())
	return cmd
}

func newTelemetryNS3Cmd() *cobra.Command {
	var (
		c                     netsim.Config
		model, topo, bg, link string
		fabric, delay, ivl    string
		out, linksOut, fig    string
		bucketMiB, smooth     float64
		batch                 int
		asJSON                bool
	)
	cmd := &cobra.Command{
		Use:   "ns3 --model NAME -o FILE",
		Short: "simulate a training job's gradient traffic in ns-3 and write the Commander's telemetry",
		Long: `ns3 runs the ns-3 program netsim/ns3/nfabric-telemetry.cc (built on first use
against Debian's libns3-dev; or set NFABRIC_NS3 to a built binary): W hosts on a
star or leaf-spine network, every bucket of the model's FP32 gradients ring
All-Reduced at the times the FP32 reference schedule gives, beside background
flows, every link's busy time and queue sampled at a fixed interval. The
bottleneck link of each interval becomes one telemetry sample: demand = the
gradient traffic it carried, capacity = its rate less the background's share
(see 'go doc github.com/neuronfabric/nfabric/netsim').

--background is "none" or items bulk=N (bulk TCP flows), onoff=N@SHARE (UDP
on/off flows at SHARE of the host rate), on=DUR, off=DUR (mean on/off times;
off=0: always on). --scale divides bucket bytes and link rates to keep the
packet count small (times and pressures are kept; see the package doc).
Without ns-3 it fails naming the Debian package to install (libns3-dev).

The Commander's verdict (healthy, congested or mixed) is computed with the
control plane's default thresholds and smoothing --smooth.`,
		Example: `  nfabric telemetry ns3 --model gpt2-xl --workers 8 -o healthy.csv
  nfabric telemetry ns3 --model gpt2-xl --workers 8 --background onoff=8@0.9,off=0 -o congested.csv
  nfabric telemetry ns3 --model bert-large --topology leafspine --leaves 2 --spines 2 --background bulk=4 -o t.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("telemetry ns3: -o FILE is required")
			}
			var err error
			if c.Topology, err = netsim.ParseTopology(topo); err != nil {
				return usagef("--topology: %v", err)
			}
			if c.Background, err = netsim.ParseBackground(bg); err != nil {
				return usagef("--background: %v", err)
			}
			if c.HostRate, err = collective.ParseBandwidth(link); err != nil {
				return usagef("--link: %v", err)
			}
			if fabric != "" {
				if c.FabricRate, err = collective.ParseBandwidth(fabric); err != nil {
					return usagef("--fabric-link: %v", err)
				}
			}
			d, err := time.ParseDuration(delay)
			if err != nil || d < 0 {
				return usagef("--delay %q: want a duration such as 1us", delay)
			}
			c.DelayNS = d.Nanoseconds()
			if ivl != "" {
				iv, err := time.ParseDuration(ivl)
				if err != nil || iv <= 0 {
					return usagef("--interval %q: want a positive duration such as 10ms", ivl)
				}
				c.IntervalNS = iv.Nanoseconds()
			}
			if !(bucketMiB > 0) {
				return usagef("--bucket-mib %v must be > 0", bucketMiB)
			}
			if c.Scale == 0 {
				return usagef("--scale 0: want >= 1 (1 runs unscaled)")
			}
			if out == "-" && asJSON {
				return usagef("-o - and --json both write stdout: give -o a file")
			}
			if err := c.Validate(); err != nil {
				return usagef("%v", err)
			}
			cc := control.DefaultConfig().Commander
			cc.Smooth = smooth
			if err := cc.Validate(); err != nil {
				return usagef("--smooth: %v", err)
			}
			tr, err := netsim.Trace(model, batch, int64(bucketMiB*(1<<20)))
			if err != nil {
				return usagef("--model: %v", err)
			}
			sched, err := netsim.Plan(c, tr)
			if err != nil {
				return usagef("%v", err)
			}
			if err := netsim.Available(); err != nil {
				return err
			}
			res, err := netsim.Run(cmd.Context(), c, sched)
			if err != nil {
				return fmt.Errorf("%s: %w", tr.Model, err)
			}
			return writeNS3Outputs(cmd, res, cc, ns3Files{out, linksOut, fig}, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "gpt2-xl", "built-in model profile or YAML profile file")
	f.IntVar(&batch, "batch", 0, "per-worker batch (0: the profile's)")
	f.Float64Var(&bucketMiB, "bucket-mib", 32, "gradient bucket cap in MiB")
	f.IntVar(&c.Workers, "workers", 8, "GPU hosts W")
	f.StringVar(&topo, "topology", "star", "star or leafspine")
	f.IntVar(&c.Leaves, "leaves", 2, "leaf switches (leafspine)")
	f.IntVar(&c.Spines, "spines", 2, "spine switches (leafspine)")
	f.StringVar(&link, "link", "50GB/s", "host link rate (e.g. 400Gb/s, 50GB/s)")
	f.StringVar(&fabric, "fabric-link", "", "leaf-spine link rate (default: the host rate)")
	f.StringVar(&delay, "delay", "1us", "propagation delay of every link")
	f.IntVar(&c.QueuePackets, "queue", 100, "device queue size in packets (drop-tail)")
	f.StringVar(&bg, "background", "none", "background flows: none, bulk=N, onoff=N@SHARE, on=DUR, off=DUR")
	f.IntVar(&c.Steps, "steps", 3, "training steps to simulate")
	f.StringVar(&ivl, "interval", "", "sampling interval (default: a tenth of the step)")
	f.Float64Var(&c.Scale, "scale", 1000, "divide bucket bytes and link rates by this (>= 1; 1 runs unscaled)")
	f.Uint64Var(&c.Seed, "seed", 1, "random seed")
	f.Float64Var(&smooth, "smooth", 0.05, "Commander smoothing weight for the verdict")
	f.StringVarP(&out, "out", "o", "", "write the telemetry CSV here (- for stdout: the summary then goes to stderr)")
	f.StringVar(&linksOut, "links-out", "", "also write per-link utilization and queue samples (CSV) here")
	f.StringVar(&fig, "figure", "", "also write the figure (utilization, queue, pressure, Commander mode over time) as SVG here")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

// ns3Summary is what 'telemetry ns3' prints.
type ns3Summary struct {
	Model      string         `json:"model"`
	Config     netsim.Config  `json:"config"`
	StepNS     int64          `json:"step_ns"`
	IntervalNS int64          `json:"interval_ns"`
	Samples    int            `json:"samples"`
	Verdict    netsim.Verdict `json:"verdict"`
	Buckets    netsim.Totals  `json:"buckets"`
}

// ns3Files are the files 'telemetry ns3' writes: the telemetry, and
// optionally the per-link data and the figure.
type ns3Files struct{ out, links, figure string }

// writeNS3Outputs writes the files and prints the summary: on stdout, or
// on stderr when the telemetry itself goes to stdout (-o -).
func writeNS3Outputs(cmd *cobra.Command, res *netsim.Result, cc control.CommanderConfig, files ns3Files, asJSON bool) error {
	out := files.out
	w := cmd.OutOrStdout()
	if out == "-" {
		w = cmd.ErrOrStderr()
	}
	tel, err := res.Telemetry()
	if err != nil {
		return err
	}
	v, err := netsim.Judge(tel, cc)
	if err != nil {
		return err
	}
	if err := writeOutput(cmd, out, func(w io.Writer) error { return control.WriteTelemetry(w, tel) }); err != nil {
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
		ss, err := netsim.FigureSeries(loads, samples, v.Modes)
		if err != nil {
			return err
		}
		lp := report.LinePlot{Title: fmt.Sprintf("ns-3 telemetry: %s, %d hosts, background %s", res.Schedule.Model, res.Config.Workers, res.Config.Background),
			XLabel: "time (ms)", YLabel: "share"}
		for _, s := range ss {
			lp.Series = append(lp.Series, report.Series{Name: s.Name, X: s.X, Y: s.Y})
		}
		lp.HLines = []report.HLine{{Y: cc.RelievePressure, Label: "relieve"}, {Y: cc.ReleasePressure, Label: "release"}}
		svg, err := lp.SVG()
		if err != nil {
			return err
		}
		if err := report.WriteFileAtomic(files.figure, svg); err != nil {
			return err
		}
	}
	s := ns3Summary{Model: res.Schedule.Model, Config: res.Config, StepNS: res.Schedule.StepNS, IntervalNS: res.Interval,
		Samples: len(tel), Verdict: v, Buckets: res.BucketTotals()}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(w, "ns-3: %s, %d workers on a %s, host link %s, background %s, scale %g\n", s.Model, res.Config.Workers,
		res.Config.Topology, collective.FormatBandwidth(res.Config.HostRate), res.Config.Background, res.Config.Scale)
	fmt.Fprintf(w, "FP32 reference step %.2f ms, %d steps, %d samples every %.2f ms -> %s\n", float64(s.StepNS)/1e6,
		res.Config.Steps, len(tel), float64(res.Interval)/1e6, out)
	fmt.Fprintf(w, "buckets: %d released, %d finished, mean All-Reduce %.3f ms (scaled bytes)\n", s.Buckets.Released,
		s.Buckets.Finished, s.Buckets.MeanSeconds*1e3)
	fmt.Fprintf(w, "Commander (relieve %.2f, release %.2f, smooth %.2f): %s, relief on %.1f%% of samples; pressure mean %.3f, peak %.3f\n",
		cc.RelievePressure, cc.ReleasePressure, cc.Smooth, v.Label, 100*v.Relief, v.MeanPressure, v.PeakPressure)
	return nil
}

func newTelemetrySyntheticCmd() *cobra.Command {
	var (
		scenario, dur, ivl, step, episode, out string
		seed                                   uint64
	)
	cmd := &cobra.Command{
		Use:   "synthetic -o FILE",
		Short: "write the synthetic generator's healthy, congested or alternating telemetry",
		Long: `synthetic writes a trace of the synthetic generator the control block uses
(control.HealthyScenario, control.CongestedScenario, or control.Episodes
alternating the two): gradient bursts in the backward tail of each step on a
137.4 GB/s link shared with background load.`,
		Example: `  nfabric telemetry synthetic --scenario episodes -o t.csv
  nfabric telemetry synthetic --scenario congested --duration 5s --interval 1ms -o c.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("telemetry synthetic: -o FILE is required")
			}
			var durNS, ivlNS, stepNS, epNS int64
			for name, kv := range map[string]struct {
				s   string
				dst *int64
			}{"duration": {dur, &durNS}, "interval": {ivl, &ivlNS}, "step": {step, &stepNS}, "episode": {episode, &epNS}} {
				d, err := time.ParseDuration(kv.s)
				if err != nil || d <= 0 {
					return usagef("--%s %q: want a positive duration", name, kv.s)
				}
				*kv.dst = d.Nanoseconds()
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
			w := cmd.OutOrStdout()
			if out == "-" {
				w = cmd.ErrOrStderr() // the telemetry is stdout
			}
			fmt.Fprintf(w, "synthetic %s telemetry: %d samples every %s over %s -> %s\n", scenario, len(tel), ivl, dur, out)
			return nil
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
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(rc)
			}
			fmt.Fprintf(w, "ring All-Reduce of %d bytes on %d hosts, %s\n", rc.Bytes, rc.Workers, rc.Link)
			fmt.Fprintf(w, "  %-70s %10.3f ms\n", "ns-3 packet-level ring (TCP, one switch)", rc.NS3S*1e3)
			for _, m := range rc.Models {
				fmt.Fprintf(w, "  %-70s %10.3f ms  (ns-3 / model %.3f)\n", m.Name, m.Seconds*1e3, rc.NS3S/m.Seconds)
			}
			fmt.Fprintf(w, "  payload %d bytes (2(W-1) S = %d), wire %d bytes on the host uplinks (%.2f%% overhead)\n",
				rc.PayloadBytes, 2*int64(rc.Workers-1)*rc.Bytes, rc.WireBytes, 100*(float64(rc.WireBytes)/float64(rc.PayloadBytes)-1))
			return nil
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
