package main

import (
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/workload"
	"github.com/spf13/cobra"
)

// The replay command lives under 'nfabric timing'; timing.go adds it.

const timingReplayLong = `replay builds each model's gradient buckets (32 MiB by default, cut in reverse
layer order as data-parallel frameworks do) with their ready times during
backward, streams them through the timing model in healthy and congested CXL,
and reports the FP32 reference's overlap with backward (Fig. 2a) and the
G-Binary datapath's exposed increment (Fig. 2b).

Large traces (GPT-3: about 11 billion lines) are served by a fast-forward that
is calibrated on event simulation of each bucket size; --validate checks it
against full event simulation on scaled-down traces, and --exact simulates
every line (up to about 10^9 lines).

--model takes built-in profiles or YAML profile files; --trace replays your
own trace, every kind whatif reads (nfabric JSON/CSV, torch.profiler, Chakra
ETs, ASTRA-sim prefixes: 'go doc github.com/neuronfabric/nfabric/traces'), its
all-reduce and reduce-scatter collectives.
The timing model takes the same flags and --config file as the other
'nfabric timing' commands.`
const timingReplayExample = `  nfabric timing replay
  nfabric timing replay --model gpt2-xl --validate
  nfabric timing replay --model bert-large --exact --json
  nfabric timing replay --trace my-buckets.csv --model "" --out results`

// timingReplayFlags are replay's flags beyond the timing model's.
type timingReplayFlags struct {
	tf                   timingFlags
	o                    experiments.ReplayOptions
	models, traces       []string
	peak, eff, bucketMiB float64
	bucketMode           string
}

func newTimingReplayCmd() *cobra.Command {
	var r timingReplayFlags
	cmd := &cobra.Command{
		Use:     "replay [--model NAME|FILE.yaml,...] [--trace FILE.json|FILE.csv]",
		Short:   "replay gradient buckets through the timing model at their backward ready times (Fig. 2)",
		Long:    timingReplayLong,
		Example: timingReplayExample,
		Args:    cobra.NoArgs,
		RunE:    r.run,
	}
	r.tf.add(cmd, true)
	f := cmd.Flags()
	f.StringSliceVar(&r.models, "model", []string{"bert-large", "gpt2-xl", "gpt3"}, "built-in profiles or YAML profile files (comma-separated or repeated; \"\" for none)")
	f.StringArrayVar(&r.traces, "trace", nil, "trace (every kind whatif takes, go doc ./traces); repeatable")
	f.Float64Var(&r.peak, "peak-tflops", workload.A100.PeakFLOPS/1e12, "accelerator dense peak (TFLOP/s)")
	f.Float64Var(&r.eff, "efficiency", workload.A100.Efficiency, "achieved fraction of the peak")
	f.IntVar(&r.o.Batch, "batch", 0, "samples per worker (0: the profile's default)")
	f.IntVar(&r.o.Seq, "seq", 0, "tokens per sample for built-in transformers (0: the context length)")
	f.Float64Var(&r.bucketMiB, "bucket-mib", 32, "bucket cap in MiB of FP32 gradients")
	f.StringVar(&r.bucketMode, "bucket-mode", "split", "split (fixed-size chunks) or whole (PyTorch DDP: whole tensors)")
	f.BoolVar(&r.o.Exact, "exact", false, "simulate every line instead of fast-forwarding")
	f.BoolVar(&r.o.Validate, "validate", false, "also compare the fast-forward with event simulation on scaled-down traces")
	f.Int64Var(&r.o.ValidateScale, "validate-scale", 128, "scale-down factor of the validation traces")
	return cmd
}

func (r *timingReplayFlags) run(cmd *cobra.Command, _ []string) error {
	s, err := r.tf.setup(cmd)
	if err != nil {
		return err
	}
	r.o.Setup = s
	r.o.Models = append(r.o.Models, r.models...)
	r.o.Traces = r.traces
	r.o.Accel = workload.Accelerator{Name: "custom", PeakFLOPS: r.peak * 1e12, Efficiency: r.eff}
	if !cmd.Flags().Changed("peak-tflops") && !cmd.Flags().Changed("efficiency") {
		r.o.Accel = workload.A100
	}
	if err := r.o.Check(); err != nil {
		return err
	}
	if err := r.o.SetBuckets(r.bucketMiB, r.bucketMode); err != nil {
		return err
	}
	cfg := run.Config{Logf: func(f string, a ...any) { cmd.PrintErrf(f+"\n", a...) }}
	res, err := experiments.Fig2(cmd.Context(), cfg, r.o)
	if err != nil {
		return err
	}
	res.Block = "replay"
	return r.tf.print(cmd, res)
}
