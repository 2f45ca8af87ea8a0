package main

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { subcommands = append(subcommands, newCollectiveCmd) }

const collectiveExample = `  nfabric collective --model gpt2-xl
  nfabric collective --model gpt3 --net ib-ndr --workers 64 --per-node 8
  nfabric collective --model my-model.yaml --links links.yaml --net roce
  nfabric collective --exposure 1.67 --window ring --json
  nfabric collective --astra-network network_cfg.yml --astra-system system_cfg.json --elements 262144`

// collectiveLong is collective's help (the link presets are listed from
// package collective).
func collectiveLong() string {
	return `collective models the time of one All-Reduce of a model's gradients: FP32
software collectives (ring, double binary tree, halving-doubling, hierarchical)
in the alpha-beta form with NCCL's algbw/busbw, the FP32 CXL pooling path, and
NEURON-Fabric's G-Binary and G-Ternary controller paths (each worker writes its
packed payload into the CXL buffer and reads the aggregate back, plus the
exposed datapath fraction that the timing model measures). It then multiplies
the All-Reduce windows of BERT-large, GPT-2 XL and GPT-3 by that exposure in
controller cycles (paper Sec. 5.1).

--astra-network and --astra-system take ASTRA-sim's own analytical network
and system files (as its examples and tests/rt_template write them) and
price the FP32 network rows in ASTRA-sim's analytical mode: its ring, its
chunking, endpoint delay and local-memory reduction, its cycles (1 ns each),
printed beside the alpha-beta ring on the same link. ASTRA-sim writes
"GB/s" and converts it as GiB/s; so does this mode. Elsewhere GB/s is 10^9
bytes per second and GiB/s 2^30.

Links are presets (` + strings.Join(collective.PresetNames(), ", ") + `) or come from a YAML
file given with --links:

  links:
    - name: roce
      bandwidth: 100Gb/s
      latency: 3us

--model takes a built-in profile or a YAML profile file (see 'go doc
github.com/neuronfabric/nfabric/workload ParseProfileYAML').`
}

// collectiveFlags are collective's flags.
type collectiveFlags struct {
	o        experiments.CollectiveOptions
	exposure float64
	out      string
	asJSON   bool
}

func newCollectiveCmd() *cobra.Command {
	var c collectiveFlags
	cmd := &cobra.Command{
		Use:     "collective [--model NAME|FILE.yaml]",
		Short:   "model one All-Reduce on FP32 and NEURON-Fabric paths (Fig. 7) and the GPT-scale check",
		Long:    collectiveLong(),
		Example: collectiveExample,
		Args:    cobra.NoArgs,
		RunE:    c.run,
	}
	c.add(cmd.Flags())
	return cmd
}

func (c *collectiveFlags) add(f *pflag.FlagSet) {
	o, def := &c.o, experiments.DefaultCollectiveOptions()
	f.StringVar(&o.Model, "model", def.Model, "model profile: built-in name or YAML file")
	f.IntVar(&o.Workers, "workers", def.Workers, "number of data-parallel workers (with --astra-network and no --workers: the network's npus_count)")
	f.StringVar(&o.Net, "net", def.Net, "link of the FP32 software collectives")
	f.StringVar(&o.Intra, "intra", def.Intra, "intra-node link of the hierarchical collective")
	f.IntVar(&o.PerNode, "per-node", def.PerNode, "workers per node for the hierarchical collective")
	f.StringVar(&o.CXL, "cxl", def.CXL, "CXL controller link")
	f.BoolVar(&o.Shared, "shared", false, "workers share one controller port instead of one port each")
	f.Float64Var(&c.exposure, "exposure", 0, "exposed datapath in percent (default: measured by the timing model)")
	f.Int64Var(&o.Elements, "elements", 0, "override the gradient elements (0: the model's parameters)")
	f.StringVar(&o.Window, "window", def.Window, "GPT-scale window: cxl (FP32 write+read via the controller) or ring, tree, halving-doubling, hierarchical over --net")
	f.StringSliceVar(&o.Models, "models", def.Models, "models of the GPT-scale check (comma-separated or repeated)")
	f.StringVar(&o.LinksFile, "links", "", "YAML file of extra links")
	f.StringVar(&o.AstraNetwork, "astra-network", "", "ASTRA-sim analytical network YAML (topology, npus_count, bandwidth, latency): price the FP32 network rows in ASTRA-sim's analytical mode (with --astra-system)")
	f.StringVar(&o.AstraSystem, "astra-system", "", "ASTRA-sim system JSON (preferred-dataset-splits, endpoint-delay, local-mem-bw, implementations), with --astra-network")
	dirFlag(f, &c.out, "out", "", "also write JSON, Markdown and SVG into this directory")
	f.BoolVar(&c.asJSON, "json", false, "print JSON")
}

func (c *collectiveFlags) run(cmd *cobra.Command, _ []string) error {
	o, flags := c.o, cmd.Flags()
	o.WorkersGiven, o.PerNodeGiven, o.ExposureGiven = flags.Changed("workers"), flags.Changed("per-node"), flags.Changed("exposure")
	if !o.WorkersGiven {
		o.Workers = 0 // the default: 8, or an ASTRA-sim network's NPUs
	}
	if o.Exposure = -1; o.ExposureGiven {
		o.Exposure = c.exposure / 100
	}
	if err := o.Validate(); err != nil {
		return err
	}
	cfg := run.Config{Logf: func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), f+"\n", a...) }}
	r, err := experiments.RunCollective(cmd.Context(), cfg, o)
	if err != nil {
		return err
	}
	res, err := experiments.CollectiveLayout(r)
	if err != nil {
		return err
	}
	return printResult(cmd, res, c.asJSON, c.out)
}
