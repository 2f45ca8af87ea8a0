package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/workload"
	"github.com/spf13/cobra"
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

// collectiveOptions checks the flags and fills o's exposure, links and
// models from them.
func collectiveOptions(cmd *cobra.Command, o *experiments.CollectiveOptions, exposure float64, links, models string) error {
	if o.Workers < 2 {
		return usagef("--workers %d: an All-Reduce needs at least 2 workers", o.Workers)
	}
	if !cmd.Flags().Changed("workers") {
		o.Workers = 0 // the default: 8, or an ASTRA-sim network's NPUs
	}
	// The hierarchical row needs whole nodes. A --per-node the user gave
	// (or the hierarchical window) must divide --workers; the default that
	// does not only leaves the row out, with a note.
	if o.PerNode < 1 || (o.Workers > 0 && o.Workers%o.PerNode != 0 && (cmd.Flags().Changed("per-node") || o.Window == "hierarchical")) {
		return usagef("--per-node %d must be >= 1 and divide --workers %d (the hierarchical row needs whole nodes)", o.PerNode, o.Workers)
	}
	if o.Elements < 0 {
		return usagef("--elements %d must be >= 0", o.Elements)
	}
	if cmd.Flags().Changed("exposure") {
		if math.IsNaN(exposure) || exposure < 0 || exposure > 100 {
			return usagef("--exposure %v must be a percentage in [0, 100]", exposure)
		}
		o.Exposure = exposure / 100
	} else {
		o.Exposure = -1
	}
	if links != "" {
		data, err := os.ReadFile(links)
		if err != nil {
			return fmt.Errorf("read links: %w", err)
		}
		ls, err := collective.ParseLinksYAML(data, links)
		if err != nil {
			return err
		}
		o.Links = ls
	}
	if models != "" {
		o.Models = strings.Split(models, ",")
	}
	return checkCollectiveNames(*o)
}

func newCollectiveCmd() *cobra.Command {
	var (
		o        experiments.CollectiveOptions
		links    string
		exposure float64
		models   string
		out      string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:     "collective [--model NAME|FILE.yaml]",
		Short:   "model one All-Reduce on FP32 and NEURON-Fabric paths (Fig. 7) and the GPT-scale check",
		Long:    collectiveLong(),
		Example: collectiveExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := collectiveOptions(cmd, &o, exposure, links, models); err != nil {
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
			return printResult(cmd, res, asJSON, out)
		},
	}
	f := cmd.Flags()
	def := experiments.DefaultCollectiveOptions()
	f.StringVar(&o.Model, "model", def.Model, "model profile: built-in name or YAML file")
	f.IntVar(&o.Workers, "workers", def.Workers, "number of data-parallel workers")
	f.StringVar(&o.Net, "net", def.Net, "link of the FP32 software collectives")
	f.StringVar(&o.Intra, "intra", def.Intra, "intra-node link of the hierarchical collective")
	f.IntVar(&o.PerNode, "per-node", def.PerNode, "workers per node for the hierarchical collective")
	f.StringVar(&o.CXL, "cxl", def.CXL, "CXL controller link")
	f.BoolVar(&o.Shared, "shared", false, "workers share one controller port instead of one port each")
	f.Float64Var(&exposure, "exposure", 0, "exposed datapath in percent (default: measured by the timing model)")
	f.Int64Var(&o.Elements, "elements", 0, "override the gradient elements (0: the model's parameters)")
	f.StringVar(&o.Window, "window", def.Window, "GPT-scale window: cxl (FP32 write+read via the controller) or ring, tree, halving-doubling, hierarchical over --net")
	f.StringVar(&models, "models", strings.Join(def.Models, ","), "comma-separated models of the GPT-scale check")
	f.StringVar(&links, "links", "", "YAML file of extra links")
	f.StringVar(&o.AstraNetwork, "astra-network", "", "ASTRA-sim analytical network YAML (topology, npus_count, bandwidth, latency): price the FP32 network rows in ASTRA-sim's analytical mode (with --astra-system)")
	f.StringVar(&o.AstraSystem, "astra-system", "", "ASTRA-sim system JSON (preferred-dataset-splits, endpoint-delay, local-mem-bw, implementations), with --astra-network")
	dirFlag(f, &out, "out", "", "also write JSON, Markdown and SVG into this directory")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// checkCollectiveNames checks the names the user typed (links, models,
// the window's algorithm) before any work, so a typo is a usage error.
func checkCollectiveNames(o experiments.CollectiveOptions) error {
	if _, err := collective.LookupLink(o.Net, o.Links); err != nil {
		return usagef("--net: %v", err)
	}
	if o.Window != "cxl" {
		if _, err := collective.ParseAlgorithm(o.Window); err != nil {
			return usagef("--window %q: want cxl or an algorithm: %v", o.Window, err)
		}
	}
	for _, m := range append([]string{o.Model}, o.Models...) {
		if _, err := workload.Builtin(m, 0); err != nil {
			if _, statErr := os.Stat(m); statErr != nil {
				return usagef("--model: %v", err)
			}
		}
	}
	return nil
}
