package experiments

import (
	"context"
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/usage"
)

func init() {
	run.Register(run.Spec[HardwareUnit]{Name: "hardware", Title: hardwareTitle, Order: 60,
		Units: func(cfg run.Config) ([]run.Unit[HardwareUnit], error) {
			o := QuickHardware(cfg.Seed)
			if cfg.Full() {
				o = FullHardware(cfg.Seed)
			}
			return HardwareUnits(o)
		},
		Layout: func(cfg run.Config, us []HardwareUnit) (*report.Result, error) {
			o := QuickHardware(cfg.Seed)
			if cfg.Full() {
				o = FullHardware(cfg.Seed)
			}
			return HardwareLayout(o, us)
		},
		Claims: func(cfg run.Config) []report.Claim {
			o := QuickHardware(cfg.Seed)
			if cfg.Full() {
				o = FullHardware(cfg.Seed)
			}
			d, err := gatherHardware(o.defaults(), nil)
			if err != nil {
				return nil
			}
			return hardwareClaims(o.defaults(), d)
		}})
}

const hardwareTitle = "Hardware plausibility (Sec. 10, Table 7, Fig. 8)"

// Paper figures (Sec. 10, Table 7); they only feed "paper" columns.
const (
	paperGE        = 24716
	paperAreaMM2   = 0.004943
	paperEnergyPJ  = 6.179
	paperSlackPS   = 155
	paperCells512  = 4358
	paperRegs512   = 1803
	paperFmax512   = 184.88 // ECP5, nextpnr/Trellis
	paperFmax1024  = 155.74 // ECP5
	paperCells64   = 606
	paperCells1024 = 8646
)

var paperCells = map[int]float64{64: paperCells64, 512: paperCells512, 1024: paperCells1024}
var paperFmax = map[int]float64{512: paperFmax512, 1024: paperFmax1024}

// HardwareOptions selects the experiments of the hardware block.
type HardwareOptions struct {
	// Widths are synthesized (and routed) at hw.DefaultStages.
	Widths []int
	// Stages are the pipeline depths swept at SweepWidth (Fig. 8 timing).
	Stages     []int
	SweepWidth int
	// SplitStages are depths swept again with hw.Config.SplitCount.
	SplitStages []int
	// Yosys names the Yosys builds (hw.YosysBuilds: "debian", "yowasp")
	// that synthesize every width; the first also runs the stage sweep and
	// feeds the cost model. Empty means Debian's.
	Yosys []string
	// ECP5 also runs synth_ecp5 on every width (LUT4/FF counts).
	ECP5 bool
	// Cosim runs co-simulation of every width with Sims and Vectors
	// vectors per run.
	Cosim   bool
	Sims    []hw.Simulator
	Vectors int
	// Parts are the FPGA parts every width is placed and routed on
	// (slow: a minute or two per 512-bit ECP5 route); none skips routing.
	Parts []hw.Part
	// Formats are the conservative formats' sum datapaths
	// (extensionDatapaths) placed beside the vote datapath at FormatWidth
	// bits (0 means 512): co-simulated with every simulator of Sims when
	// Cosim is set, synthesized with the first Yosys build and routed on
	// every part, at their fixed depths and the vote datapath's W = 8.
	Formats     []hw.Datapath
	FormatWidth int
	// Dir keeps build products ("" = temporary directories).
	Dir  string
	Seed uint64
	Tech hw.Technology
	// Logf reports progress when HardwareReport runs the units (under
	// reproduce each unit logs through its own Config).
	Logf func(format string, args ...any)
}

// QuickHardware is the quick configuration of the block: co-simulation
// of every width in Icarus, generic synthesis of 64 and 512 bits with both
// Yosys builds, a two-point pipeline sweep, and the paper's ECP5 route of
// both widths.
func QuickHardware(seed uint64) HardwareOptions {
	return HardwareOptions{
		Widths: []int{64, 512}, Stages: []int{3, 5}, SplitStages: []int{5}, SweepWidth: 512,
		Yosys: []string{"debian", "yowasp"},
		Cosim: true, Sims: []hw.Simulator{hw.SimIcarus}, Vectors: 400,
		Parts: []hw.Part{hw.DefaultECP5},
		Seed:  seed, Tech: hw.NanGate45,
		Formats: extensionDatapaths(), FormatWidth: 512,
	}
}

// FullHardware is the full configuration: every width, ECP5 mapping,
// pipeline depths 1 to 5, both simulators, both Yosys builds, and place
// and route on ECP5 and iCE40.
func FullHardware(seed uint64) HardwareOptions {
	return HardwareOptions{
		Widths: hw.Widths, Stages: []int{1, 2, 3, 4, 5}, SplitStages: []int{5}, SweepWidth: 512, ECP5: true,
		Yosys: []string{"debian", "yowasp"},
		Cosim: true, Sims: hw.Simulators, Vectors: 2000,
		Parts: []hw.Part{hw.DefaultECP5, hw.DefaultICE40},
		Seed:  seed, Tech: hw.NanGate45,
		Formats: extensionDatapaths(), FormatWidth: 512,
	}
}

// FallbackStages is the shallower pipeline routed when the five-stage
// datapath does not fit the FPGA: three registers, the placement whose
// register count equals the paper's at 512 bits.
const FallbackStages = 3

// HardwareUnit is the typed result of one unit of the hardware block:
// exactly one of its parts is set, or Skipped says which tool was missing
// and how to install it.
type HardwareUnit struct {
	Key string `json:"key"`
	// Tools are the versions of every tool of the flow ("tools" unit).
	Tools []string          `json:"tools,omitempty"`
	Cosim *hw.CosimResult   `json:"cosim,omitempty"`
	Synth *HardwareSynthRun `json:"synth,omitempty"`
	// Pnr holds the route at hw.DefaultStages and, when that did not fit,
	// the route at FallbackStages.
	Pnr     []hw.PnrResult `json:"pnr,omitempty"`
	Skipped string         `json:"skipped,omitempty"`
}

// HardwareSynthRun is one synthesis with the cost model's verdict.
type HardwareSynthRun struct {
	Build    string         `json:"build"` // a hw.YosysBuilds name
	Result   hw.SynthResult `json:"result"`
	Estimate hw.Estimate    `json:"estimate"`
}

// extensionDatapaths lists the datapaths beyond the paper's vote
// datapath: one sum datapath per integer-sum format (hw.Datapaths).
func extensionDatapaths() []hw.Datapath {
	var ds []hw.Datapath
	for _, d := range hw.Datapaths() {
		if !d.Paper() {
			ds = append(ds, d)
		}
	}
	return ds
}

// Validate refuses options that are wrong in themselves, as usage errors
// naming the option by the flag of `nfabric hw` that sets it.
func (o HardwareOptions) Validate() error {
	for _, w := range o.Widths {
		if err := (hw.Config{Width: w}).Validate(); err != nil {
			return usage.Errorf("--widths: %v", err)
		}
	}
	for _, d := range []struct {
		flag string
		ks   []int
	}{{"--stages", o.Stages}, {"--split-stages", o.SplitStages}} {
		for _, k := range d.ks {
			if k < 1 || k > hw.MaxStages {
				return usage.Errorf("%s: %d is not a depth from 1 to %d", d.flag, k, hw.MaxStages)
			}
		}
	}
	for _, b := range o.Yosys {
		if _, err := hw.ParseYosys(b); err != nil {
			return usage.Errorf("--yosys: %w", err)
		}
	}
	for _, p := range o.Parts {
		if err := p.Validate(); err != nil {
			return usage.Wrap(err)
		}
	}
	return nil
}

// builds returns the Yosys builds, Debian's when none is named.
func (o HardwareOptions) builds() ([]string, error) {
	bs := o.Yosys
	if len(bs) == 0 {
		bs = []string{"debian"}
	}
	for _, b := range bs {
		if _, err := hw.ParseYosys(b); err != nil {
			return nil, err
		}
	}
	return bs, nil
}

// sweep lists the pipeline configurations of the timing sweep: every
// depth in Stages, then the SplitStages depths with the split count.
func (o HardwareOptions) sweep() []hw.Config {
	var out []hw.Config
	for _, k := range o.Stages {
		out = append(out, hw.Config{Width: o.SweepWidth, Stages: k}.Normalized())
	}
	for _, k := range o.SplitStages {
		out = append(out, hw.Config{Width: o.SweepWidth, Stages: k, SplitCount: true}.Normalized())
	}
	return out
}

// defaults fills the zero fields Units and Layout both rely on.
func (o HardwareOptions) defaults() HardwareOptions {
	if o.Tech.FO4ps == 0 {
		o.Tech = hw.NanGate45
	}
	if o.SweepWidth == 0 {
		o.SweepWidth = 512
	}
	if o.Vectors == 0 {
		o.Vectors = 1000
	}
	if o.FormatWidth == 0 {
		o.FormatWidth = 512
	}
	return o
}

// SkipReason says which tool the unit missed and how to install it ("" when
// it ran); the framework's block status reads it.
func (u HardwareUnit) SkipReason() string { return u.Skipped }

// skip turns a missing tool into a unit result that says so.
func skip(key string, err error) (HardwareUnit, error) {
	var m *hw.MissingToolError
	if errors.As(err, &m) {
		return HardwareUnit{Key: key, Skipped: "skipped: " + m.Error()}, nil
	}
	return HardwareUnit{}, err
}

// HardwareUnits lists the block's independent runs: the tool versions,
// one co-simulation per simulator and width, one synthesis per Yosys build
// and configuration, and one route per part and width.
func HardwareUnits(o HardwareOptions) ([]run.Unit[HardwareUnit], error) {
	o = o.defaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	builds, err := o.builds()
	if err != nil {
		return nil, err
	}
	// Every unit drives single-threaded tools (Yosys, Icarus, nextpnr with
	// one thread, the WebAssembly builds) in its own scratch directory,
	// so each takes one core; Verilator's build runs make -j2.
	us := []run.Unit[HardwareUnit]{{Key: "tools", Cores: 1, Cost: cpuSeconds(measuredCPU["hardware/tools"]), Run: func(ctx context.Context, _ run.Config) (HardwareUnit, error) {
		return HardwareUnit{Key: "tools", Tools: hw.Versions(ctx)}, nil
	}}}
	if o.Cosim {
		for _, sim := range o.Sims {
			for _, w := range hw.Widths {
				us = append(us, cosimUnit(o, sim, hw.Config{Width: w}))
			}
		}
	}
	for i, b := range builds {
		seen := map[hw.Config]bool{}
		add := func(c hw.Config, ecp5 bool) {
			if c = c.Normalized(); !seen[c] {
				seen[c] = true
				us = append(us, synthUnit(o, b, c, ecp5))
			}
		}
		for _, w := range o.Widths {
			add(hw.Config{Width: w}, o.ECP5 && i == 0)
		}
		// The three-register layout has the paper's register count at 512
		// bits; the Yosys table compares its cells with the paper's too.
		for _, w := range o.Widths {
			add(hw.Config{Width: w, Stages: FallbackStages}, false)
		}
		if i == 0 {
			for _, c := range o.sweep() {
				add(c, false)
			}
		}
	}
	for _, p := range o.Parts {
		for _, w := range o.Widths {
			us = append(us, pnrUnit(o, builds[0], p, w))
		}
	}
	return append(us, formatUnits(o, builds[0])...), nil
}

// formatUnits are the sum datapaths' runs: co-simulation per simulator,
// one synthesis with the first build, one route per part.
func formatUnits(o HardwareOptions, build string) []run.Unit[HardwareUnit] {
	var us []run.Unit[HardwareUnit]
	for _, d := range o.Formats {
		c := hw.Config{Width: o.FormatWidth, Datapath: d}.Normalized()
		if o.Cosim {
			for _, sim := range o.Sims {
				u := cosimUnit(o, sim, c)
				u.Key = fmt.Sprintf("cosim/%s/%s/w%d", sim, d, c.Width)
				us = append(us, u)
			}
		}
		us = append(us, synthUnit(o, build, c, o.ECP5))
		for _, p := range o.Parts {
			us = append(us, formatPnrUnit(o, build, p, c))
		}
	}
	return us
}

// formatPnrUnit routes one sum datapath at its fixed depth.
func formatPnrUnit(o HardwareOptions, build string, p hw.Part, c hw.Config) run.Unit[HardwareUnit] {
	key := fmt.Sprintf("pnr/%s-%s/%s/w%d", p.Family, p.Device, c.Datapath, c.Width)
	return run.Unit[HardwareUnit]{Key: key, Cores: 1, Long: c.Width >= 512, Cost: hwCost("pnr/"+string(p.Family), c), Run: func(ctx context.Context, cfg run.Config) (HardwareUnit, error) {
		ys, err := hw.ParseYosys(build)
		if err != nil {
			return HardwareUnit{}, err
		}
		cfg.Progressf("placing and routing %s on %s %s", c.ModuleName(), p.Family, p)
		r, err := hw.Pnr(ctx, c, hw.PnrOptions{Part: p, Yosys: ys, Dir: o.Dir, Seed: 1})
		if err != nil {
			return skip(key, err)
		}
		return HardwareUnit{Key: key, Pnr: []hw.PnrResult{r}}, nil
	}}
}

func cosimUnit(o HardwareOptions, sim hw.Simulator, c hw.Config) run.Unit[HardwareUnit] {
	key := fmt.Sprintf("cosim/%s/w%d", sim, c.Width)
	cores := 1
	if sim == hw.SimVerilator {
		cores = 2
	}
	return run.Unit[HardwareUnit]{Key: key, Cores: cores, Cost: hwCost(fmt.Sprintf("cosim/%s", sim), c), Run: func(ctx context.Context, cfg run.Config) (HardwareUnit, error) {
		cfg.Progressf("co-simulating %s with %s (%d vectors)", c.ModuleName(), sim, o.Vectors)
		r, err := hw.Cosim(ctx, c, sim, hw.Vectors(c, o.Vectors, o.Seed), o.Dir)
		if err != nil {
			return skip(key, err)
		}
		return HardwareUnit{Key: key, Cosim: &r}, nil
	}}
}

func synthUnit(o HardwareOptions, build string, c hw.Config, ecp5 bool) run.Unit[HardwareUnit] {
	key := fmt.Sprintf("synth/%s/%s", build, c.ModuleName())
	tool := "synth/" + build
	if ecp5 {
		tool += "/ecp5"
	}
	return run.Unit[HardwareUnit]{Key: key, Cores: 1, Cost: hwCost(tool, c), Run: func(ctx context.Context, cfg run.Config) (HardwareUnit, error) {
		ys, err := hw.ParseYosys(build)
		if err != nil {
			return HardwareUnit{}, err
		}
		cfg.Progressf("synthesizing %s with %s", c.ModuleName(), ys.Name)
		r, err := hw.Synth(ctx, c, hw.SynthOptions{ECP5: ecp5, Dir: o.Dir, Yosys: ys})
		if err != nil {
			return skip(key, err)
		}
		e, err := o.Tech.Estimate(r)
		if err != nil {
			return HardwareUnit{}, fmt.Errorf("cost model for %s: %w", c.ModuleName(), err)
		}
		return HardwareUnit{Key: key, Synth: &HardwareSynthRun{Build: build, Result: r, Estimate: e}}, nil
	}}
}

func pnrUnit(o HardwareOptions, build string, p hw.Part, w int) run.Unit[HardwareUnit] {
	key := fmt.Sprintf("pnr/%s-%s/w%d", p.Family, p.Device, w)
	// A 512-bit ECP5 route takes one to two minutes, the longest unit of
	// the quick run.
	return run.Unit[HardwareUnit]{Key: key, Cores: 1, Long: w >= 512, Cost: hwCost("pnr/"+string(p.Family), hw.Config{Width: w}), Run: func(ctx context.Context, cfg run.Config) (HardwareUnit, error) {
		ys, err := hw.ParseYosys(build)
		if err != nil {
			return HardwareUnit{}, err
		}
		u := HardwareUnit{Key: key}
		for _, k := range []int{hw.DefaultStages, FallbackStages} {
			cfg.Progressf("placing and routing %d bits, %d stages, on %s %s", w, k, p.Family, p)
			r, err := hw.Pnr(ctx, hw.Config{Width: w, Stages: k}, hw.PnrOptions{Part: p, Yosys: ys, Dir: o.Dir, Seed: 1})
			if err != nil {
				return skip(key, err)
			}
			u.Pnr = append(u.Pnr, r)
			if r.Fits {
				break
			}
		}
		return u, nil
	}}
}
