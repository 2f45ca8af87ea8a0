package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/neuronfabric/nfabric/chakra"
	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/whatif"
	"github.com/neuronfabric/nfabric/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newWhatifCmd) }

const whatifLong = `whatif takes a bucket trace (recorded by the PyTorch package with
record=TRACE.json, a JSON/CSV trace, an MLCommons Chakra execution trace
(.et: every ALL_REDUCE node a bucket), or a built-in profile cut into 32 MiB
buckets) and prices every step under an admission plan: gradient bytes FP32
against admitted, the All-Reduce time on the network (collective), the
NEURON-Fabric controller path (collective's CXL path at the exposure that the
timing model's replay of these buckets measures), the CXL datapath's exposed
cost (timing replay, fast-forward), the recorded encoding cost, and the
projected step time and speed-up, with the assumptions printed beside them.

--plan is a policy ("g-binary", "backbone=g-binary,head=fp32", "*=g-ternary")
or "recorded": the plan the control plane's admission ladder derives from the
recording's diagnostics (record an FP32 run with record_diagnostics=True).`
const whatifExample = `  nfabric whatif --trace trace.json --workers 8 --net ib --plan backbone=g-binary,head=fp32
  nfabric whatif --trace trace.json --plan recorded --memory asic-pcie5-x8 --json
  nfabric whatif --model resnet18-cifar10 --workers 16 --net pcie --html whatif.html`

// whatifFlags holds the flags of 'nfabric whatif'.
type whatifFlags struct {
	trace, model, net, alg, cxl, links, memory, plan, rungs, out, html string
	workers                                                            int
	ladder                                                             control.Ladder // --ladder-rungs, parsed by options
	shared, asJSON                                                     bool
}

func (w *whatifFlags) add(f *pflag.FlagSet) {
	f.StringVar(&w.trace, "trace", "", "bucket trace: recorded or hand-written JSON/CSV (go doc ./workload ReadTrace), or a Chakra ET (.et, go doc ./chakra)")
	f.StringVar(&w.model, "model", "", "built-in profile or YAML profile instead of a trace (32 MiB buckets, A100 compute model)")
	f.IntVar(&w.workers, "workers", 8, "data-parallel workers")
	f.StringVar(&w.net, "net", "ib", "network link of the FP32 All-Reduce (preset or --links name)")
	f.StringVar(&w.alg, "algorithm", "ring", "FP32 All-Reduce algorithm: ring, tree or halving-doubling")
	f.StringVar(&w.cxl, "cxl", "cxl", "CXL controller link")
	f.BoolVar(&w.shared, "shared", false, "workers share one controller port")
	f.StringVar(&w.links, "links", "", "YAML file of extra links")
	f.StringVar(&w.memory, "memory", timing.PresetIdeal, "CXL memory preset: "+strings.Join(timing.Presets(), ", "))
	f.StringVar(&w.plan, "plan", "backbone=g-binary,head=fp32", `admission plan: a policy, or "recorded" (the control plane's ladder on the recorded diagnostics)`)
	f.StringVar(&w.rungs, "ladder-rungs", control.DefaultLadder().String(), `the ladder of --plan recorded: every rung as FORMAT:MIN,... (g-binary, g-ternary, int8, bfp8; INT8/BFP8 need a trace that recorded their cosines, version 2)`)
	f.StringVar(&w.out, "out", "", "also write JSON, Markdown and SVG into this directory")
	f.StringVar(&w.html, "html", "", "also write a self-contained HTML page")
	f.BoolVar(&w.asJSON, "json", false, "print JSON")
}

// options checks the flags (all but --plan, which needs the trace) and
// returns the what-if options they give.
func (w *whatifFlags) options() (whatif.Options, error) {
	o := whatif.Options{Workers: w.workers, Memory: w.memory, Shared: w.shared}
	if (w.trace == "") == (w.model == "") {
		return o, usagef("give one of --trace FILE or --model NAME")
	}
	if w.workers < 2 {
		return o, usagef("--workers %d: an All-Reduce needs at least 2 workers", w.workers)
	}
	var err error
	if w.ladder, err = control.ParseLadder(w.rungs); err != nil {
		return o, usagef("--ladder-rungs: %v", err)
	}
	okMem := false
	for _, p := range timing.Presets() {
		okMem = okMem || p == w.memory
	}
	if !okMem {
		return o, usagef("--memory %q: want %s", w.memory, strings.Join(timing.Presets(), " or "))
	}
	var extra []collective.Link
	if w.links != "" {
		data, err := os.ReadFile(w.links)
		if err != nil {
			return o, fmt.Errorf("read links: %w", err)
		}
		if extra, err = collective.ParseLinksYAML(data, w.links); err != nil {
			return o, err
		}
	}
	if o.Net, err = collective.LookupLink(w.net, extra); err != nil {
		return o, usagef("--net: %v", err)
	}
	if o.CXL, err = collective.LookupLink(w.cxl, extra); err != nil {
		return o, usagef("--cxl: %v", err)
	}
	if o.Alg, err = collective.ParseAlgorithm(w.alg); err != nil {
		return o, usagef("--algorithm: %v", err)
	}
	return o, w.checkOutputs()
}

// checkOutputs refuses an --html or --out that cannot be written, before
// anything runs.
func (w *whatifFlags) checkOutputs() error {
	if w.html != "" {
		if _, _, err := report.CheckOutput(w.html); err != nil {
			return usagef("--html: %v", err)
		}
	}
	if w.out != "" {
		if err := report.CheckOutputDir(w.out); err != nil {
			return usagef("--out: %v", err)
		}
	}
	return nil
}

// whatifPlan sets o's plan from --plan: a policy, or "recorded", the
// control plane's ladder (rungs, --ladder-rungs) on tr's recorded
// diagnostics.
func whatifPlan(o *whatif.Options, plan string, rungs control.Ladder, tr *workload.Trace) error {
	steps := tr.Steps
	if len(steps) == 0 {
		steps = []*workload.Trace{tr}
	}
	var err error
	if plan == "recorded" {
		o.Plan, err = whatif.PlanFromDiagnostics(steps, rungs)
		if err != nil {
			return err
		}
	} else if o.Plan, err = whatif.ParsePlan(plan); err != nil {
		return usagef("--plan: %v", err)
	}
	return nil
}

// runWhatif loads the trace, prices it and prints (and writes) the result.
func runWhatif(cmd *cobra.Command, w *whatifFlags) error {
	o, err := w.options()
	if err != nil {
		return err
	}
	tr, err := loadWhatifTrace(w.trace, w.model)
	if err != nil {
		return err
	}
	if err := whatifPlan(&o, w.plan, w.ladder, tr); err != nil {
		return err
	}
	r, err := whatif.Run(tr, o)
	if err != nil {
		return err
	}
	res, err := r.Layout()
	if err != nil {
		return err
	}
	if w.html != "" {
		if err := writeWhatifHTML(cmd, w.html, res); err != nil {
			return err
		}
	}
	return printResult(cmd, res, w.asJSON, w.out)
}

// writeWhatifHTML writes res as a self-contained page to path.
func writeWhatifHTML(cmd *cobra.Command, path string, res *report.Result) error {
	page := report.Page{Title: res.Title, Intro: res.Summary,
		Blocks: []report.PageBlock{{Name: res.Block, Title: res.Title, Status: report.StatusOK, Result: res}}}
	data, err := page.HTML()
	if err != nil {
		return err
	}
	if err := report.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "wrote", path)
	return nil
}

func newWhatifCmd() *cobra.Command {
	var w whatifFlags
	cmd := &cobra.Command{
		Use:     "whatif --trace FILE|--model NAME [--workers W --net LINK --memory ideal|asic-pcie5-x8|... --plan POLICY|recorded]",
		Short:   "what NEURON-Fabric would change for your own job: per group and per step, FP32 against the low-bit path",
		Long:    whatifLong,
		Example: whatifExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runWhatif(cmd, &w) },
	}
	w.add(cmd.Flags())
	return cmd
}

// loadWhatifTrace reads --trace, or cuts --model's profile into buckets as
// timing replay does.
func loadWhatifTrace(trace, model string) (*workload.Trace, error) {
	if trace != "" {
		if low := strings.ToLower(trace); strings.HasSuffix(low, ".et") || strings.HasSuffix(low, ".et.pb") {
			return chakra.ReadTrace(trace)
		}
		return workload.ReadTrace(trace)
	}
	p, err := workload.LoadProfile(model, 0)
	if err != nil {
		return nil, usagef("--model: %v", err)
	}
	tl, err := p.Timeline(workload.Schedule{Accel: workload.A100, Batch: p.Batch})
	if err != nil {
		return nil, err
	}
	return workload.Bucketize(tl, workload.BucketOptions{})
}
