package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/whatif"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newWhatifCmd) }

const whatifLong = `whatif takes your job's trace and prices every step under an admission
plan: gradient bytes FP32 against admitted, every collective on the network
(each operation by its own formula), the NEURON-Fabric controller path for
the all-reduce and reduce-scatter gradients (collective's CXL path at the
exposure the timing model's replay of these buckets measures), the CXL
datapath's exposed cost, the recorded encoding cost, and the projected step
time and speed-up, with the assumptions and what the trace reader read and
left out printed beside them.

--trace takes every kind of trace (go doc github.com/neuronfabric/nfabric/traces
documents them): a recording of nfabric.torch (record=TRACE.json), a
torch.profiler Chrome trace (.json), an MLCommons Chakra ET (.et, or its JSON
forms), ASTRA-sim's multi-rank workloads given by their prefix (PREFIX for
PREFIX.0.et ... PREFIX.{N-1}.et: the worker count is N), or a JSON/CSV bucket
trace; --model cuts a built-in profile into 32 MiB buckets instead.

--plan is a policy ("g-binary", "backbone=g-binary,head=fp32", "*=g-ternary")
or "recorded": the plan the control plane's admission ladder (--ladder-rungs)
derives from the recording's diagnostics (record an FP32 run with
record_diagnostics=True). Without --plan: the recorded job's policy, else
G-Binary for every group but one named head.

--astra-network and --astra-system price the network collectives in
ASTRA-sim's analytical mode from its own files (its cycles printed beside the
alpha-beta ring on the same link); the workers are then its NPUs. GB/s is
10^9 bytes/s and GiB/s 2^30; ASTRA-sim's "GB/s" is read as GiB/s, as it does.

--memory is the CXL memory the datapath replay runs on: by default the
silicon-calibrated ASIC expander (asic-pcie5-x8, go doc
github.com/neuronfabric/nfabric/timing/cxldev); --memory ideal is the
paper's fixed-latency model (faster to run: a device preset simulates its
DRAM, about 30 s for GPT-2 XL's buckets).

--trace-out writes the step timeline as Chrome/Perfetto trace JSON (open it at
https://ui.perfetto.dev); --html a page with the tables and the timeline.`
const whatifExample = `  nfabric whatif --trace trace.json --net ib --plan backbone=g-binary,head=fp32
  nfabric whatif --trace profile.json --plan g-binary --html whatif.html --trace-out whatif.trace.json
  nfabric whatif --trace workload/all_reduce --astra-network network_cfg.yml --astra-system system_cfg.json
  nfabric whatif --model resnet18-cifar10 --workers 16 --net pcie --json`

// whatifFlags holds the flags of 'nfabric whatif'.
type whatifFlags struct {
	trace, model, net, alg, cxl, links, memory, plan, rungs, out, html, traceOut string
	astraNet, astraSys                                                           string
	workers                                                                      int
	shared, asJSON                                                               bool
}

func (w *whatifFlags) add(f *pflag.FlagSet) {
	f.StringVar(&w.trace, "trace", "", "trace: nfabric JSON/CSV, torch.profiler JSON, Chakra ET (.et) or a multi-rank PREFIX (go doc ./traces)")
	f.StringVar(&w.model, "model", "", "built-in profile or YAML profile instead of a trace (32 MiB buckets, A100 compute model)")
	f.IntVar(&w.workers, "workers", 0, "data-parallel workers (0: the trace's rank files or recorded job, else 8)")
	f.StringVar(&w.net, "net", "ib", "network link of the FP32 collectives (preset or --links name)")
	f.StringVar(&w.alg, "algorithm", "ring", "network collectives' algorithm: ring, tree or halving-doubling")
	f.StringVar(&w.astraNet, "astra-network", "", "ASTRA-sim analytical network YAML: price the network collectives in ASTRA-sim's mode (with --astra-system)")
	f.StringVar(&w.astraSys, "astra-system", "", "ASTRA-sim system JSON, with --astra-network")
	f.StringVar(&w.cxl, "cxl", "cxl", "CXL controller link")
	f.BoolVar(&w.shared, "shared", false, "workers share one controller port")
	f.StringVar(&w.links, "links", "", "YAML file of extra links")
	f.StringVar(&w.memory, "memory", whatif.DefaultMemory, "CXL memory: a device preset or the paper's ideal model: "+strings.Join(timing.Presets(), ", "))
	f.StringVar(&w.plan, "plan", "", `admission plan: a policy, or "recorded" (the control plane's ladder on the recorded diagnostics); default: the recorded policy, else G-Binary but the head`)
	f.StringVar(&w.rungs, "ladder-rungs", control.DefaultLadder().String(), `the ladder of --plan recorded: every rung as FORMAT:MIN,... (g-binary, g-ternary, int8, bfp8; INT8/BFP8 need a trace that recorded their cosines, version 2)`)
	dirFlag(f, &w.out, "out", "", "also write JSON, Markdown and SVG into this directory")
	fileFlag(f, &w.html, "html", "", "also write a self-contained HTML page ('-': stdout)")
	fileFlag(f, &w.traceOut, "trace-out", "", "also write the step timeline as Chrome/Perfetto trace JSON ('-': stdout)")
	f.BoolVar(&w.asJSON, "json", false, "print JSON")
}

// runWhatif prices the request the flags make and prints (and writes) the
// result.
func runWhatif(cmd *cobra.Command, w *whatifFlags) error {
	tr, o, err := whatif.Prepare(whatif.Request{Trace: w.trace, Model: w.model, Workers: w.workers,
		Net: w.net, CXL: w.cxl, Algorithm: w.alg, Links: w.links, AstraNetwork: w.astraNet, AstraSystem: w.astraSys,
		Memory: w.memory, Shared: w.shared, Plan: w.plan, Ladder: w.rungs, LadderGiven: cmd.Flags().Changed("ladder-rungs")})
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	r, err := whatif.Run(ctx, tr, o)
	if err != nil {
		return err
	}
	res, err := r.Layout()
	if err != nil {
		return err
	}
	if err := writeWhatifFiles(ctx, cmd, w, r, res); err != nil {
		return err
	}
	return printResult(cmd, res, w.asJSON, w.out)
}

// writeWhatifFiles writes --trace-out and --html ('-': stdout), each
// atomically, checking ctx before each.
func writeWhatifFiles(ctx context.Context, cmd *cobra.Command, w *whatifFlags, r *whatif.Result, res *report.Result) error {
	page := func(out io.Writer) error {
		p := report.Page{Title: res.Title,
			Blocks: []report.PageBlock{{Name: res.Block, Title: res.Title, Status: report.StatusOK, Result: res}}}
		data, err := p.HTML()
		if err == nil {
			_, err = out.Write(data)
		}
		return err
	}
	for _, o := range []struct {
		path  string
		write func(io.Writer) error
	}{{w.traceOut, r.WriteTrace}, {w.html, page}} {
		if o.path == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeOutput(cmd, o.path, o.write); err != nil {
			return fmt.Errorf("write %s: %w", o.path, err)
		}
		if o.path != "-" {
			fmt.Fprintln(cmd.ErrOrStderr(), "wrote", o.path)
		}
	}
	return nil
}

func newWhatifCmd() *cobra.Command {
	var w whatifFlags
	cmd := &cobra.Command{
		Use:     "whatif --trace FILE|PREFIX|--model NAME [--workers W --net LINK --memory PRESET --plan POLICY|recorded]",
		Short:   "what NEURON-Fabric would change for your own job: per group, collective and step, FP32 against the low-bit path",
		Long:    whatifLong,
		Example: whatifExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runWhatif(cmd, &w) },
	}
	w.add(cmd.Flags())
	return cmd
}
