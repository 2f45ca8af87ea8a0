package main

import (
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/spf13/cobra"
)

func newTimingRunCmd() *cobra.Command {
	var (
		tf                 timingFlags
		traceOut           string
		traceFrom, traceTo float64
		traceMax           int
		phases             int
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
  nfabric timing run --memory ddr5 --dram-preset ddr5-6400 --cxl-preset pcie5-x16 --json
  nfabric timing run --memory ddr5 --streams 1 --outstanding 1 --footprint-mib 1 --passes 1 --refresh-phases 16`,
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
			if phases < 0 || phases > 1024 || (phases > 0 && (s.Model.Memory.Model != timing.MemoryDDR5 || s.Model.Memory.DDR5.TREFINS == 0)) {
				return usagef("--refresh-phases %d: want 0..1024, and above 0 only with --memory ddr5 and refresh on", phases)
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
			p, err := timing.RunTracedPair(s.Model, nil, timing.All, tr)
			if err != nil {
				return fmt.Errorf("timing run: %w", err)
			}
			if tr != nil {
				if err := writeOutput(cmd, traceOut, tr.WriteJSON); err != nil {
					return fmt.Errorf("write trace %s: %w", traceOut, err)
				}
				cmd.PrintErrf("wrote %s (%d slices, %d dropped)\n", traceOut, tr.Len(), tr.Dropped)
				if traceOut == "-" {
					cmd.SetOut(cmd.ErrOrStderr()) // the trace is stdout: the table goes to stderr
				}
			}
			var phased *timing.PhasedPair
			if phases > 0 {
				pp, err := timing.RunRefreshPhasedPair(s.Model, nil, phases)
				if err != nil {
					return fmt.Errorf("timing run: %w", err)
				}
				phased = &pp
			}
			return printResult(cmd, experiments.TimingRunResult(s.Model, p, phased), tf.json, "")
		},
	}
	tf.add(cmd, false)
	f := cmd.Flags()
	f.StringVar(&traceOut, "trace-out", "", "write the low-bit run's timeline window as Chrome/Perfetto trace JSON to FILE (- for stdout: the table then goes to stderr)")
	f.Float64Var(&traceFrom, "trace-from-ns", 0, "trace window start (ns)")
	f.Float64Var(&traceTo, "trace-until-ns", 5000, "trace window end (ns)")
	f.IntVar(&traceMax, "trace-max", 200000, fmt.Sprintf("most slices kept, 1 to %d (the rest are counted as dropped)", timing.MaxTraceSlices))
	f.IntVar(&phases, "refresh-phases", 0, "also average the pair over this many refresh schedules (ddr5; memory.ddr5.refresh_seed 1..N): an exposure that does not depend on where refresh falls")
	return cmd
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
			return printResult(cmd, experiments.LoadedLatencyResult(s.Model, pts), tf.json, "")
		},
	}
	tf.add(cmd, false)
	return cmd
}
