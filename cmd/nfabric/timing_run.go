package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/spf13/cobra"
)

func newTimingRunCmd() *cobra.Command {
	var (
		tf                 timingFlags
		traceOut           string
		traceFrom, traceTo float64
		traceMax           int
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "run the configured model once (identity and low-bit) and print its counters; --trace-out writes a timeline",
		Long: `run simulates the configured workload twice, identity and low-bit, and prints
run times, the exposed cost, controller-read latency and, under the detailed
models, the DRAM and CXL link counters.

--trace-out FILE writes a window of the low-bit run as Chrome/Perfetto
trace-event JSON: one process track per component (Host[0].LLC,
Device[0].Ctrl.ReqLink, Device[0].Ctrl.DRAM.Ch[3].Queue, ...DRAM.Ch[3],
Device[0].Ctrl.Pipe, Device[0].Ctrl.RespLink), one slice per line per stage,
overlapping slices on separate lanes of the track. Open it at
https://ui.perfetto.dev ("Open trace file") or in chrome://tracing.`,
		Example: `  nfabric timing run --memory ddr5
  nfabric timing run --memory ddr5 --trace-out ddr5.json --trace-until-ns 2000
  nfabric timing run --memory ddr5 --dram-preset ddr5-6400 --cxl-preset pcie5-x16 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tf.setup(cmd)
			if err != nil {
				return err
			}
			from, err1 := timing.TimeOfNS(traceFrom)
			until, err2 := timing.TimeOfNS(traceTo)
			if err := errors.Join(err1, err2); err != nil {
				return usagef("--trace-from-ns, --trace-until-ns: %v", err)
			}
			var tr *timing.Tracer
			if traceOut != "" {
				if tr, err = timing.NewTracer(from, until, traceMax); err != nil {
					return usagef("--trace-from-ns, --trace-until-ns, --trace-max: %v", err)
				}
				if traceOut == "-" && tf.json {
					return usagef("--trace-out - and --json both write stdout: give --trace-out a file")
				}
			}
			id, err := timing.Simulate(s.Model, nil, timing.None)
			if err != nil {
				return fmt.Errorf("timing run: %w", err)
			}
			lb, err := timing.SimulateTraced(s.Model, nil, timing.All, tr)
			if err != nil {
				return fmt.Errorf("timing run: %w", err)
			}
			w := cmd.OutOrStdout()
			if tr != nil {
				if err := writeOutput(cmd, traceOut, tr.WriteJSON); err != nil {
					return fmt.Errorf("write trace %s: %w", traceOut, err)
				}
				cmd.PrintErrf("wrote %s (%d slices, %d dropped)\n", traceOut, tr.Len(), tr.Dropped)
				if traceOut == "-" {
					w = cmd.ErrOrStderr() // the trace is stdout: the table goes to stderr
				}
			}
			out := struct {
				Model    timing.Config `json:"model"`
				Identity timing.Result `json:"identity"`
				LowBit   timing.Result `json:"lowbit"`
				Exposed  timing.Time   `json:"exposed_ps"`
				Overhead float64       `json:"overhead_pct"`
			}{s.Model, id, lb, lb.RunTime - id.RunTime, 100 * float64(lb.RunTime-id.RunTime) / float64(max(id.RunTime, 1))}
			if tf.json {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return printRun(w, s.Model, id, lb, out.Overhead)
		},
	}
	tf.add(cmd, false)
	f := cmd.Flags()
	f.StringVar(&traceOut, "trace-out", "", "write the low-bit run's timeline window as Chrome/Perfetto trace JSON to FILE (- for stdout: the table then goes to stderr)")
	f.Float64Var(&traceFrom, "trace-from-ns", 0, "trace window start (ns)")
	f.Float64Var(&traceTo, "trace-until-ns", 5000, "trace window end (ns)")
	f.IntVar(&traceMax, "trace-max", 200000, fmt.Sprintf("most slices kept, 1 to %d (the rest are counted as dropped)", timing.MaxTraceSlices))
	return cmd
}

func printRun(w io.Writer, m timing.Config, id, lb timing.Result, ovh float64) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "memory %s, link %s, %d streams x %d outstanding, %d stack(s)\n", m.Memory.Model, m.LinkModel(),
		m.Streams.Count, m.Streams.Outstanding, m.Controller.Stacks)
	fmt.Fprintln(tw, "run\ttime\tlines\tctrl reads\tmean ns\tp50 ns\tp99 ns\tlink util")
	for _, r := range []struct {
		n string
		r timing.Result
	}{{"identity", id}, {"low-bit", lb}} {
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%.1f\t%.0f\t%.0f\t%.3f\n", r.n, r.r.RunTime, r.r.Lines, r.r.ControllerReads,
			r.r.Latency.MeanNS, r.r.Latency.P50NS, r.r.Latency.P99NS, r.r.LinkUtil)
	}
	fmt.Fprintf(tw, "exposed %v = %.3f%%\n", lb.RunTime-id.RunTime, ovh)
	if d := id.Detail; d != nil {
		fmt.Fprintf(tw, "identity detail: DRAM %d reads %d writes, %d ACT (row-hit rate %.3f), %d conflict PRE, %d REF, data bus %.3f; flits %d, req link %.3f, resp link %.3f; credit stalls %d\n",
			d.DRAMReads, d.DRAMWrites, d.Acts, d.RowHitRate, d.Precharges, d.Refreshes, d.DataBusUtil, d.Flits, d.ReqLinkUtil, d.RespLinkUtil, d.CreditStalls)
	}
	return tw.Flush()
}

func newTimingLoadedCmd() *cobra.Command {
	var tf timingFlags
	cmd := &cobra.Command{
		Use:   "loaded-latency",
		Short: "loaded-latency curve: controller-read latency against delivered bandwidth (identity and low-bit)",
		Example: `  nfabric timing loaded-latency --memory ddr5
  nfabric timing loaded-latency --memory ideal --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tf.setup(cmd)
			if err != nil {
				return err
			}
			pts, err := timing.RunLoadedLatency(ctxOf(cmd), s)
			if err != nil {
				return fmt.Errorf("timing loaded-latency: %w", err)
			}
			if tf.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(pts)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 8, 2, ' ', 0)
			fmt.Fprintf(tw, "memory %s, link %s: latency from issue to data, every read an LLC miss\n", s.Model.Memory.Model, s.Model.LinkModel())
			fmt.Fprintln(tw, "mode\toutstanding/stream\tdelivered GiB/s\tmean ns\tp50 ns\tp99 ns")
			for _, p := range pts {
				fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.1f\t%.0f\t%.0f\n", p.Mode, p.Outstanding, p.DeliveredGiBps, p.Latency.MeanNS, p.Latency.P50NS, p.Latency.P99NS)
			}
			return tw.Flush()
		},
	}
	tf.add(cmd, false)
	return cmd
}
