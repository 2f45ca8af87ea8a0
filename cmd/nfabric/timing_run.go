package main

import (
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/spf13/cobra"
)

const timingRunLong = `run simulates the configured workload twice, identity and low-bit, and prints
run times, the exposed cost, controller-read latency and, under the detailed
models, the DRAM and CXL link counters.

--trace-out FILE writes a window of the low-bit run as Chrome/Perfetto
trace-event JSON: one process track per component (Host[0].LLC,
Device[0].Ctrl.ReqLink, Device[0].Ctrl.DRAM.Ch[3].Queue, ...DRAM.Ch[3],
Device[0].Ctrl.Pipe, Device[0].Ctrl.RespLink), one slice per line per stage,
overlapping slices on separate lanes of the track. Open it at
https://ui.perfetto.dev ("Open trace file") or in chrome://tracing.`

const timingRunExample = `  nfabric timing run --cxl-device asic-pcie5-x8
  nfabric timing run --cxl-device asic-pcie5-x8 --trace-out asic.json --trace-until-ns 2000
  nfabric timing run --cxl-device projection-pcie6-x16 --dram-preset ddr5-6400 --cxl-link pcie5-x16 --json
  nfabric timing run --cxl-device fpga-pcie5-x16 --streams 1 --outstanding 1 --footprint-mib 1 --passes 1 --refresh-phases 16`

// timingRunFlags are `timing run`'s flags beyond the model's.
type timingRunFlags struct {
	tf                 timingFlags
	traceOut           string
	traceFrom, traceTo float64
	traceMax           int
}

func (r *timingRunFlags) add(cmd *cobra.Command) {
	r.tf.add(cmd, false)
	f := cmd.Flags()
	fileFlag(f, &r.traceOut, "trace-out", "", "write the low-bit run's timeline window as Chrome/Perfetto trace JSON to FILE (- for stdout: the table then goes to stderr)")
	f.Float64Var(&r.traceFrom, "trace-from-ns", 0, "trace window start (ns)")
	f.Float64Var(&r.traceTo, "trace-until-ns", 5000, "trace window end (ns)")
	f.IntVar(&r.traceMax, "trace-max", 200000, fmt.Sprintf("most slices kept, 1 to %d (the rest are counted as dropped)", sim.MaxTraceSlices))
}

// tracer checks the trace window and returns the tracer --trace-out asks for (nil without it).
func (r *timingRunFlags) tracer(s experiments.TimingSetup) (*sim.Tracer, error) {
	from, err1 := sim.TimeOfNS(r.traceFrom)
	until, err2 := sim.TimeOfNS(r.traceTo)
	if err := errors.Join(err1, err2); err != nil {
		return nil, usagef("--trace-from-ns, --trace-until-ns: %v", err)
	}
	if r.traceOut == "" {
		return nil, nil
	}
	tr, err := sim.NewTracer(from, until, r.traceMax)
	if err != nil {
		return nil, usagef("--trace-from-ns, --trace-until-ns, --trace-max: %v", err)
	}
	if r.traceOut == "-" && r.tf.json {
		return nil, usagef("--trace-out - and --json both write stdout: give --trace-out a file")
	}
	return tr, nil
}

// run runs the pair (traced), writes the trace and prints the result.
func (r *timingRunFlags) run(cmd *cobra.Command) error {
	s, err := r.tf.setup(cmd)
	if err != nil {
		return err
	}
	tr, err := r.tracer(s)
	if err != nil {
		return err
	}
	p, err := timing.RunTracedPair(s.Model, nil, timing.All, tr)
	if err != nil {
		return fmt.Errorf("timing run: %w", err)
	}
	if tr != nil {
		if err := writeOutput(cmd, r.traceOut, tr.WriteJSON); err != nil {
			return fmt.Errorf("write trace %s: %w", r.traceOut, err)
		}
		cmd.PrintErrf("wrote %s (%d slices, %d dropped)\n", r.traceOut, tr.Len(), tr.Dropped)
	}
	return printResult(cmd, experiments.TimingRunResult(s.Model, p, tr), r.tf.json, "")
}

func newTimingRunCmd() *cobra.Command {
	var r timingRunFlags
	cmd := &cobra.Command{
		Use:     "run",
		Short:   "run the configured model once (identity and low-bit) and print its counters; --trace-out writes a timeline",
		Long:    timingRunLong,
		Example: timingRunExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return r.run(cmd) },
	}
	r.add(cmd)
	return cmd
}

func newTimingLoadedCmd() *cobra.Command {
	var tf timingFlags
	cmd := &cobra.Command{
		Use:   "loaded-latency",
		Short: "loaded-latency curve: controller-read latency against delivered bandwidth (identity and low-bit)",
		Example: `  nfabric timing loaded-latency --cxl-device asic-pcie5-x8
  nfabric timing loaded-latency --cxl-device fpga-pcie5-x16 --load-outstanding 1,4,16,64
  nfabric timing loaded-latency --memory ideal --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := tf.setup(cmd)
			if err != nil {
				return err
			}
			pts, err := timing.RunLoadedLatency(ctxOf(cmd), s.Model, s.Experiments.LoadOutstanding)
			if err != nil {
				return fmt.Errorf("timing loaded-latency: %w", err)
			}
			return printResult(cmd, experiments.LoadedLatencyResult(s.Model, pts), tf.json, "")
		},
	}
	tf.add(cmd, false)
	return cmd
}
