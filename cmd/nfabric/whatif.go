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
)

func init() { subcommands = append(subcommands, newWhatifCmd) }

func newWhatifCmd() *cobra.Command {
	var (
		trace, model, net, alg, cxl, links, memory, plan, out, html string
		workers                                                     int
		shared, asJSON                                              bool
	)
	cmd := &cobra.Command{
		Use:   "whatif --trace FILE|--model NAME [--workers W --net LINK --memory ideal|ddr5 --plan POLICY|recorded]",
		Short: "what NEURON-Fabric would change for your own job: per group and per step, FP32 against the low-bit path",
		Long: `whatif takes a bucket trace (recorded by the PyTorch package with
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
recording's diagnostics (record an FP32 run with record_diagnostics=True).`,
		Example: `  nfabric whatif --trace trace.json --workers 8 --net ib --plan backbone=g-binary,head=fp32
  nfabric whatif --trace trace.json --plan recorded --memory ddr5 --json
  nfabric whatif --model resnet18-cifar10 --workers 16 --net pcie --html whatif.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (trace == "") == (model == "") {
				return usagef("give one of --trace FILE or --model NAME")
			}
			if workers < 2 {
				return usagef("--workers %d: an All-Reduce needs at least 2 workers", workers)
			}
			okMem := false
			for _, p := range timing.Presets() {
				okMem = okMem || p == memory
			}
			if !okMem {
				return usagef("--memory %q: want %s", memory, strings.Join(timing.Presets(), " or "))
			}
			var extra []collective.Link
			if links != "" {
				data, err := os.ReadFile(links)
				if err != nil {
					return fmt.Errorf("read links: %w", err)
				}
				if extra, err = collective.ParseLinksYAML(data, links); err != nil {
					return err
				}
			}
			o := whatif.Options{Workers: workers, Memory: memory, Shared: shared}
			var err error
			if o.Net, err = collective.LookupLink(net, extra); err != nil {
				return usagef("--net: %v", err)
			}
			if o.CXL, err = collective.LookupLink(cxl, extra); err != nil {
				return usagef("--cxl: %v", err)
			}
			if o.Alg, err = collective.ParseAlgorithm(alg); err != nil {
				return usagef("--algorithm: %v", err)
			}
			if html != "" {
				if _, _, err := report.CheckOutput(html); err != nil {
					return usagef("--html: %v", err)
				}
			}
			if out != "" {
				if err := report.CheckOutputDir(out); err != nil {
					return usagef("--out: %v", err)
				}
			}
			tr, err := loadWhatifTrace(trace, model)
			if err != nil {
				return err
			}
			steps := tr.Steps
			if len(steps) == 0 {
				steps = []*workload.Trace{tr}
			}
			if plan == "recorded" {
				o.Plan, err = whatif.PlanFromDiagnostics(steps, control.DefaultLadder())
				if err != nil {
					return err
				}
			} else if o.Plan, err = whatif.ParsePlan(plan); err != nil {
				return usagef("--plan: %v", err)
			}
			r, err := whatif.Run(tr, o)
			if err != nil {
				return err
			}
			res, err := r.Layout()
			if err != nil {
				return err
			}
			if html != "" {
				page := report.Page{Title: res.Title, Intro: res.Summary,
					Blocks: []report.PageBlock{{Name: res.Block, Title: res.Title, Status: report.StatusOK, Result: res}}}
				data, err := page.HTML()
				if err != nil {
					return err
				}
				if err := report.WriteFileAtomic(html, data); err != nil {
					return fmt.Errorf("write %s: %w", html, err)
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", html)
			}
			return printResult(cmd, res, asJSON, out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&trace, "trace", "", "bucket trace: recorded or hand-written JSON/CSV (go doc ./workload ReadTrace), or a Chakra ET (.et, go doc ./chakra)")
	f.StringVar(&model, "model", "", "built-in profile or YAML profile instead of a trace (32 MiB buckets, A100 compute model)")
	f.IntVar(&workers, "workers", 8, "data-parallel workers")
	f.StringVar(&net, "net", "ib", "network link of the FP32 All-Reduce (preset or --links name)")
	f.StringVar(&alg, "algorithm", "ring", "FP32 All-Reduce algorithm: ring, tree or halving-doubling")
	f.StringVar(&cxl, "cxl", "cxl", "CXL controller link")
	f.BoolVar(&shared, "shared", false, "workers share one controller port")
	f.StringVar(&links, "links", "", "YAML file of extra links")
	f.StringVar(&memory, "memory", timing.PresetIdeal, "CXL memory preset: ideal or ddr5")
	f.StringVar(&plan, "plan", "backbone=g-binary,head=fp32", `admission plan: a policy, or "recorded" (the control plane's ladder on the recorded diagnostics)`)
	f.StringVar(&out, "out", "", "also write JSON, Markdown and SVG into this directory")
	f.StringVar(&html, "html", "", "also write a self-contained HTML page")
	f.BoolVar(&asJSON, "json", false, "print JSON")
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
