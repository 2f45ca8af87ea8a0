package experiments

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/report"
)

func init() {
	Register(Spec[HardwareUnit]{Name: "hardware", Title: hardwareTitle, Order: 60,
		Units: func(cfg Config) ([]Unit[HardwareUnit], error) { return hardwareUnits(hardwareBlockOptions(cfg)), nil },
		Layout: func(cfg Config, us []HardwareUnit) (*report.Result, error) {
			return HardwareLayout(hardwareBlockOptions(cfg).withDefaults(), us)
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
	// Widths are synthesized (and routed, with PnR) at DefaultStages.
	Widths []int
	// Stages are the pipeline depths swept at SweepWidth (Fig. 8 timing).
	Stages     []int
	SweepWidth int
	// SplitStages are depths swept again with hw.Config.SplitCount.
	SplitStages []int
	// ECP5 also runs synth_ecp5 on every width.
	ECP5 bool
	// Cosim runs co-simulation of every width with Sims and Vectors
	// vectors per run.
	Cosim   bool
	Sims    []hw.Simulator
	Vectors int
	// PnR places and routes every width on an iCE40 HX8K (slow).
	PnR bool
	// Dir keeps build products ("" = temporary directories).
	Dir  string
	Seed uint64
	Tech hw.Technology
	Logf func(format string, args ...any)
}

// QuickHardware is the quick configuration of the block: co-simulation
// of every width in Icarus, generic synthesis of 64 and 512 bits, a
// two-point pipeline sweep; no ECP5 mapping and no place and route.
func QuickHardware(seed uint64) HardwareOptions {
	return HardwareOptions{
		Widths: []int{64, 512}, Stages: []int{3, 5}, SplitStages: []int{5}, SweepWidth: 512,
		Cosim: true, Sims: []hw.Simulator{hw.SimIcarus}, Vectors: 400,
		Seed: seed, Tech: hw.NanGate45,
	}
}

// FullHardware is the full configuration: every width, ECP5 mapping,
// pipeline depths 1 to 5, both simulators and iCE40 place and route.
func FullHardware(seed uint64) HardwareOptions {
	return HardwareOptions{
		Widths: hw.Widths, Stages: []int{1, 2, 3, 4, 5}, SplitStages: []int{5}, SweepWidth: 512, ECP5: true,
		Cosim: true, Sims: hw.Simulators, Vectors: 2000, PnR: true,
		Seed: seed, Tech: hw.NanGate45,
	}
}

func hardwareBlockOptions(cfg Config) HardwareOptions {
	if cfg.Full {
		return FullHardware(cfg.Seed)
	}
	return QuickHardware(cfg.Seed)
}

// HardwareData is the measured data behind the block's tables.
type HardwareData struct {
	Tools    []string          `json:"tools"`
	Cosim    []hw.CosimResult  `json:"cosim,omitempty"`
	Synth    []hw.SynthResult  `json:"synth,omitempty"`
	Estimate []hw.Estimate     `json:"estimate,omitempty"`
	PnR      []hw.PnrResult    `json:"pnr,omitempty"`
	Tech     hw.Technology     `json:"technology"`
	Skipped  []string          `json:"skipped,omitempty"`
	Options  map[string]string `json:"options"`
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

// cfgOf is the normalized configuration a synthesis result belongs to.
func cfgOf(r hw.SynthResult) hw.Config {
	return hw.Config{Width: r.Width, Stages: r.Stages, SplitCount: r.SplitCount}.Normalized()
}

func (o HardwareOptions) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// skipMessage is err's skip line when err is a missing tool, else "".
func skipMessage(err error) string {
	var m *hw.MissingToolError
	if errors.As(err, &m) {
		return "skipped: " + m.Error()
	}
	return ""
}

// FallbackStages is the shallower pipeline routed when the five-stage
// datapath does not fit the FPGA: three registers, the placement whose
// register count equals the paper's at 512 bits.
const FallbackStages = 3

// HardwareUnit is one unit of the hardware block: the tool versions, one
// co-simulation, one synthesis with its cost estimate, or one width's
// place and route (the default depth, then FallbackStages if it does not
// fit). Skipped is set instead when a tool is missing.
type HardwareUnit struct {
	Tools    []string        `json:"tools,omitempty"`
	Cosim    *hw.CosimResult `json:"cosim,omitempty"`
	Synth    *hw.SynthResult `json:"synth,omitempty"`
	Estimate *hw.Estimate    `json:"estimate,omitempty"`
	PnR      []hw.PnrResult  `json:"pnr,omitempty"`
	// Stage names the unit's part: "tools", "cosim", "synth" or "pnr".
	Stage   string `json:"stage"`
	Skipped string `json:"skipped,omitempty"`
}

func (o HardwareOptions) withDefaults() HardwareOptions {
	if o.Tech.FO4ps == 0 {
		o.Tech = hw.NanGate45
	}
	if o.SweepWidth == 0 {
		o.SweepWidth = 512
	}
	if o.Vectors == 0 {
		o.Vectors = 1000
	}
	return o
}

// synthConfigs lists the synthesis runs: every width at the default depth
// (with ECP5 mapping when asked), then the depth sweep, each configuration
// once.
func (o HardwareOptions) synthConfigs() (cs []hw.Config, ecp5 []bool) {
	seen := map[hw.Config]bool{}
	add := func(c hw.Config, e bool) {
		if c = c.Normalized(); !seen[c] {
			seen[c] = true
			cs, ecp5 = append(cs, c), append(ecp5, e)
		}
	}
	for _, w := range o.Widths {
		add(hw.Config{Width: w}, o.ECP5)
	}
	for _, c := range o.sweep() {
		add(c, false)
	}
	return cs, ecp5
}

// hardwareUnits lists the block's units for o: tools, co-simulation of
// every width (hw.Widths) with every simulator, the syntheses, and with
// o.PnR each width's place and route.
func hardwareUnits(o HardwareOptions) []Unit[HardwareUnit] {
	o = o.withDefaults()
	us := []Unit[HardwareUnit]{{Key: "tools", Run: func(ctx context.Context, _ Config) (HardwareUnit, error) {
		return HardwareUnit{Stage: "tools", Tools: hw.Versions(ctx)}, nil
	}}}
	if o.Cosim {
		for _, sim := range o.Sims {
			for _, w := range hw.Widths {
				us = append(us, Unit[HardwareUnit]{Key: fmt.Sprintf("cosim/%s/w%d", sim, w), Run: func(ctx context.Context, _ Config) (HardwareUnit, error) {
					return hardwareCosim(ctx, o, sim, w)
				}})
			}
		}
	}
	cs, ecp5 := o.synthConfigs()
	for i, c := range cs {
		us = append(us, Unit[HardwareUnit]{Key: "synth/" + c.ModuleName(), Run: func(ctx context.Context, _ Config) (HardwareUnit, error) {
			return hardwareSynth(ctx, o, c, ecp5[i])
		}})
	}
	if o.PnR {
		for _, w := range o.Widths {
			us = append(us, Unit[HardwareUnit]{Key: fmt.Sprintf("pnr/w%d", w), Run: func(ctx context.Context, _ Config) (HardwareUnit, error) {
				return hardwarePnr(ctx, o, w)
			}})
		}
	}
	return us
}

func hardwareCosim(ctx context.Context, o HardwareOptions, sim hw.Simulator, w int) (HardwareUnit, error) {
	u := HardwareUnit{Stage: "cosim"}
	c := hw.Config{Width: w}
	o.logf("co-simulating %s with %s (%d vectors)", c.ModuleName(), sim, o.Vectors)
	r, err := hw.Cosim(ctx, c, sim, hw.Vectors(c, o.Vectors, o.Seed), o.Dir)
	if u.Skipped = skipMessage(err); u.Skipped != "" {
		return u, nil
	}
	if err != nil {
		return u, err
	}
	o.logf("%v", r)
	u.Cosim = &r
	return u, nil
}

func hardwareSynth(ctx context.Context, o HardwareOptions, c hw.Config, ecp5 bool) (HardwareUnit, error) {
	u := HardwareUnit{Stage: "synth"}
	o.logf("synthesizing %s", c.ModuleName())
	r, err := hw.Synth(ctx, c, hw.SynthOptions{ECP5: ecp5, Dir: o.Dir})
	if u.Skipped = skipMessage(err); u.Skipped != "" {
		return u, nil
	}
	if err != nil {
		return u, err
	}
	e, err := o.Tech.Estimate(r)
	if err != nil {
		return u, fmt.Errorf("cost model for %s: %w", c.ModuleName(), err)
	}
	u.Synth, u.Estimate = &r, &e
	return u, nil
}

func hardwarePnr(ctx context.Context, o HardwareOptions, w int) (HardwareUnit, error) {
	u := HardwareUnit{Stage: "pnr"}
	for _, k := range []int{hw.DefaultStages, FallbackStages} {
		o.logf("placing and routing %d bits, %d stages, on iCE40 %s", w, k, strings.ToUpper(hw.PnrDevice))
		r, err := hw.Pnr(ctx, hw.Config{Width: w, Stages: k}, hw.PnrOptions{Dir: o.Dir, Seed: 1})
		if u.Skipped = skipMessage(err); u.Skipped != "" {
			return u, nil
		}
		if err != nil {
			return u, err
		}
		u.PnR = append(u.PnR, r)
		if r.Fits {
			break
		}
	}
	return u, nil
}

// HardwareReport runs the selected experiments and lays out the Table 7
// and Fig. 8 analogues beside the paper's figures.
func HardwareReport(ctx context.Context, o HardwareOptions) (*report.Result, error) {
	o = o.withDefaults()
	us := hardwareUnits(o)
	rs := make([]HardwareUnit, len(us))
	for i, u := range us {
		var err error
		if rs[i], err = u.Run(ctx, Config{}); err != nil {
			return nil, err
		}
	}
	return HardwareLayout(o, rs)
}

// hardwareResults gathers the units into the block's data and lookup
// tables. A missing synthesis tool drops the syntheses' successors (place
// and route) as the sequential flow never ran them.
type hardwareResults struct {
	d           HardwareData
	haveSynth   bool
	synth       map[hw.Config]hw.SynthResult
	est         map[hw.Config]hw.Estimate
	pnr, pnrAlt map[int]hw.PnrResult
	cosimPassed int
	cosimFailed int
}

func gatherHardware(o HardwareOptions, us []HardwareUnit) hardwareResults {
	g := hardwareResults{haveSynth: true, synth: map[hw.Config]hw.SynthResult{}, est: map[hw.Config]hw.Estimate{},
		pnr: map[int]hw.PnrResult{}, pnrAlt: map[int]hw.PnrResult{}}
	g.d = HardwareData{Tech: o.Tech, Options: map[string]string{
		"widths": fmt.Sprint(o.Widths), "stages": fmt.Sprint(o.Stages), "split_stages": fmt.Sprint(o.SplitStages), "sweep_width": fmt.Sprint(o.SweepWidth),
		"ecp5": fmt.Sprint(o.ECP5), "pnr": fmt.Sprint(o.PnR), "vectors": fmt.Sprint(o.Vectors), "seed": fmt.Sprint(o.Seed),
	}}
	skip := func(msg string) {
		if !slices.Contains(g.d.Skipped, msg) {
			g.d.Skipped = append(g.d.Skipped, msg)
		}
	}
	for _, u := range us {
		if u.Stage == "synth" && u.Skipped != "" {
			g.haveSynth = false
		}
	}
	for _, u := range us {
		if u.Stage == "pnr" && !g.haveSynth {
			continue
		}
		if u.Skipped != "" {
			skip(u.Skipped)
		}
		switch {
		case u.Stage == "tools":
			g.d.Tools = u.Tools
		case u.Cosim != nil:
			g.d.Cosim = append(g.d.Cosim, *u.Cosim)
			if u.Cosim.Passed() {
				g.cosimPassed++
			} else {
				g.cosimFailed++
			}
		case u.Synth != nil:
			g.d.Synth, g.d.Estimate = append(g.d.Synth, *u.Synth), append(g.d.Estimate, *u.Estimate)
			g.synth[cfgOf(*u.Synth)], g.est[cfgOf(*u.Synth)] = *u.Synth, *u.Estimate
		}
		for _, r := range u.PnR {
			g.d.PnR = append(g.d.PnR, r)
			if r.Stages == hw.DefaultStages {
				g.pnr[r.Width] = r
			} else {
				g.pnrAlt[r.Width] = r
			}
		}
	}
	return g
}

// HardwareLayout lays out the hardware units (o with its defaults).
func HardwareLayout(o HardwareOptions, us []HardwareUnit) (*report.Result, error) {
	g := gatherHardware(o, us)
	res := &report.Result{Block: "hardware", Title: hardwareTitle, Passed: g.cosimPassed, Failed: g.cosimFailed}
	res.Summary = append(res.Summary, "Tool versions: "+strings.Join(g.d.Tools, "; ")+".")
	if o.Cosim {
		res.Tables = append(res.Tables, CosimTable(g.d.Cosim))
	}
	if g.haveSynth {
		t7, err := table7(o, g.synth, g.est, g.pnr)
		if err != nil {
			return nil, err
		}
		res.Tables = append(res.Tables, t7, widthTable(o, g.synth, g.est, g.pnr, g.pnrAlt), stageTable(o, g.synth, g.est), modelTable(o.Tech))
		figs, err := hardwareFigures(o, g.synth, g.est, g.pnr)
		if err != nil {
			return nil, err
		}
		res.Figures = figs
	}
	res.Summary = append(res.Summary, g.d.Skipped...)
	res.Data = g.d
	return res, nil
}

// CosimTable lists co-simulation runs with a closing pass/fail count.
func CosimTable(rs []hw.CosimResult) report.Table {
	t := report.Table{Name: "hardware-cosim", Title: "Co-simulation of the generated RTL against the lowbit oracles",
		Columns: []string{"simulator", "width", "stages", "vectors", "responses checked", "mismatches", "status"}}
	pass, fail := 0, 0
	for _, r := range rs {
		st := "pass"
		if r.Passed() {
			pass++
		} else {
			st = "FAIL"
			fail++
		}
		t.AddRow(string(r.Simulator), r.Width, r.Stages, r.Vectors, r.Checked, r.Mismatches, st)
	}
	t.Notes = append(t.Notes,
		"Identity and FP32 bypass must return the line; G-Binary byte i must equal lowbit.RefCountPacket, G-Ternary byte i the int8 of lowbit.RefAggregatePacket with the 2-of-3 gate; invalid cycles and the latency are checked too.",
		fmt.Sprintf("%d passed, %d failed", pass, fail))
	return t
}

func synth512(synth map[hw.Config]hw.SynthResult) (hw.SynthResult, bool) {
	r, ok := synth[hw.Config{Width: 512}.Normalized()]
	return r, ok
}

func table7(o HardwareOptions, synth map[hw.Config]hw.SynthResult, est map[hw.Config]hw.Estimate, pnr map[int]hw.PnrResult) (report.Table, error) {
	t := report.Table{Name: "table7", Title: "Table 7 analogue: the 512-bit, five-stage datapath",
		Columns: []string{"metric", "measured", "paper"}}
	r, ok := synth512(synth)
	if !ok {
		t.Notes = append(t.Notes, "512 bits at five stages was not among the synthesized widths.")
		return t, nil
	}
	e := est[hw.Config{Width: 512}.Normalized()]
	t.AddRow("gate-equivalent estimate (NAND2 = 1)", fmt.Sprintf("%.0f", e.GE), fmt.Sprint(paperGE))
	t.AddRow("estimated area (mm², "+o.Tech.Name+")", fmt.Sprintf("%.6f", e.AreaMM2), fmt.Sprintf("%.6f", paperAreaMM2))
	t.AddRow("estimated dynamic energy (pJ/line)", fmt.Sprintf("%.3f", e.EnergyPJ), fmt.Sprintf("%.3f", paperEnergyPJ))
	t.AddRow("estimated 2 GHz slack (ps)", fmt.Sprintf("%.0f", e.SlackPS), fmt.Sprint(paperSlackPS))
	if es, ok := est[hw.Config{Width: 512, SplitCount: true}.Normalized()]; ok {
		t.AddRow("estimated 2 GHz slack, popcount split over unpack+count (ps)", fmt.Sprintf("%.0f", es.SlackPS), "-")
	}
	t.AddRow("Yosys generic cells", r.Generic.Cells, fmt.Sprint(paperCells512))
	t.AddRow("Yosys registers", r.Generic.Registers(), fmt.Sprint(paperRegs512))
	route := "not run (nfabric hw pnr, or reproduce --full)"
	if p, ok := pnr[512]; ok {
		route = pnrCell(p)
	}
	t.AddRow("FPGA routed target 100 MHz", route, "ECP5: met (184.88 MHz)")
	t.Notes = append(t.Notes,
		fmt.Sprintf("Slowest stage: %d cells / %.1f FO4 of logic + %.0f FO4 sequencing = %.0f ps at FO4 = %.0f ps; the stage fits 500 ps when FO4 <= %.1f ps.",
			r.Path.Depth, r.Path.DelayFO4, o.Tech.SeqFO4, e.StagePS, o.Tech.FO4ps, e.MaxFO4ps),
		"Slowest path: "+strings.Join(r.Path.Cells, " -> ")+" (the 8-input popcount of the count stage).",
		fmt.Sprintf("Paper area/GE = %.3f µm² and energy/GE = %.3f fJ imply a smaller node than our %.3f µm²/GE (%s); the GE count, not the area, is the node-independent comparison.",
			paperAreaMM2*1e6/paperGE, paperEnergyPJ*1e3/paperGE, o.Tech.UM2PerGE, o.Tech.Name),
		"Our five-stage RTL carries the full line through every stage for the identity/FP32 bypass, so it registers more bits than the paper's design."+regsMatch(synth),
		"iCE40 HX8K stands in for the paper's ECP5 (nextpnr-ecp5 is not packaged in Debian); iCE40 LUT4 fabric is slower and smaller, so Fmax and fit are not comparable one to one.")
	return t, nil
}

// regsMatch names the synthesized 512-bit depths whose register count
// equals the paper's, if any.
func regsMatch(synth map[hw.Config]hw.SynthResult) string {
	var ks []string
	for k := 1; k <= hw.MaxStages; k++ {
		if r, ok := synth[hw.Config{Width: 512, Stages: k}.Normalized()]; ok && r.Generic.Registers() == paperRegs512 {
			c := hw.Config{Width: 512, Stages: k}
			var st []string
			for _, ops := range c.StageOps() {
				st = append(st, ops[len(ops)-1].String())
			}
			ks = append(ks, fmt.Sprintf("k = %d (registers after %s)", k, strings.Join(st, ", ")))
		}
	}
	if len(ks) == 0 {
		return ""
	}
	return " Our " + strings.Join(ks, " and ") + " has exactly the paper's register count, which suggests the paper's RTL registers the line at three points."
}

func pnrCell(p hw.PnrResult) string {
	if !p.Fits {
		return "does not fit: " + p.Reason
	}
	v := "met"
	if !p.Pass {
		v = "missed"
	}
	return fmt.Sprintf("iCE40 %s: %s (%.2f MHz)", strings.ToUpper(hw.PnrDevice), v, p.FmaxMHz)
}

func paperOr(m map[int]float64, w int, format string) string {
	if v, ok := m[w]; ok {
		return fmt.Sprintf(format, v)
	}
	return "-"
}

func widthTable(o HardwareOptions, synth map[hw.Config]hw.SynthResult, est map[hw.Config]hw.Estimate, pnr, pnrAlt map[int]hw.PnrResult) report.Table {
	t := report.Table{Name: "fig8-width", Title: "Fig. 8 analogue: width sweep at five stages",
		Columns: []string{"width", "cells", "paper cells", "registers", "logic cells", "GE", "area mm²", "pJ/line", "ECP5 LUT4", "ECP5 FF", "iCE40 LCs", "iCE40 Fmax MHz", "paper ECP5 Fmax MHz"}}
	for _, w := range o.Widths {
		key := hw.Config{Width: w}.Normalized()
		r, ok := synth[key]
		if !ok {
			continue
		}
		e := est[key]
		lut, ff := "-", "-"
		if r.ECP5 != nil {
			lut, ff = fmt.Sprint(r.ECP5.Count("LUT4")), fmt.Sprint(r.ECP5.Registers())
		}
		lcs, fmax := "-", "-"
		if p, ok := pnr[w]; ok {
			lcs = fmt.Sprintf("%d/%d", p.LCs, p.LCsTotal)
			if p.Fits {
				fmax = fmt.Sprintf("%.2f", p.FmaxMHz)
			} else {
				fmax = "does not fit"
				if a, ok := pnrAlt[w]; ok {
					lcs += fmt.Sprintf("; k=%d: %d/%d", a.Stages, a.LCs, a.LCsTotal)
					if a.Fits {
						fmax += fmt.Sprintf("; k=%d: %.2f", a.Stages, a.FmaxMHz)
					} else {
						fmax += fmt.Sprintf("; k=%d does not fit either", a.Stages)
					}
				}
			}
		}
		t.AddRow(w, r.Generic.Cells, paperOr(paperCells, w, "%.0f"), r.Generic.Registers(), r.Generic.Logic(),
			fmt.Sprintf("%.0f", e.GE), fmt.Sprintf("%.6f", e.AreaMM2), fmt.Sprintf("%.3f", e.EnergyPJ), lut, ff, lcs, fmax, paperOr(paperFmax, w, "%.2f"))
	}
	t.Notes = append(t.Notes,
		"Yosys `synth -top` (ABC, generic gate library) per width; registers are the $_DFF_*/$_SDFF_* cells; logic cells the rest.",
		fmt.Sprintf("iCE40 route: %s-%s through a serial shift-in/shift-out wrapper (adds about 3 x width flip-flops), nextpnr-ice40 --freq %.0f, seed 1. A width whose five-stage datapath does not fit is routed again with %d stages.", strings.ToUpper(hw.PnrDevice), hw.PnrPackage, hw.PnrTargetMHz, FallbackStages))
	return t
}

func stageTable(o HardwareOptions, synth map[hw.Config]hw.SynthResult, est map[hw.Config]hw.Estimate) report.Table {
	t := report.Table{Name: "fig8-stages", Title: fmt.Sprintf("Fig. 8 analogue: pipeline configurations at %d bits against 500 ps (2 GHz)", o.SweepWidth),
		Columns: []string{"stages", "register placement", "registers", "paper registers", "cells", "path cells", "stage FO4", "stage ps", "slack ps", "2 GHz", "max FO4 ps for 2 GHz"}}
	for _, c := range o.sweep() {
		k := c.Stages
		r, ok := synth[c]
		if !ok {
			continue
		}
		e := est[c]
		var st []string
		for _, ops := range c.StageOps() {
			var n []string
			for _, op := range ops {
				n = append(n, op.String())
			}
			st = append(st, strings.Join(n, "+"))
		}
		placement := strings.Join(st, " | ")
		if c.SplitCount {
			placement += " (split count: nibble counts in unpack)"
		}
		pr := "-"
		if o.SweepWidth == 512 && k == hw.DefaultStages && !c.SplitCount {
			pr = fmt.Sprint(paperRegs512)
		}
		pass := "pass"
		if !e.Passes2GHz() {
			pass = "miss"
		}
		t.AddRow(k, placement, r.Generic.Registers(), pr, r.Generic.Cells, r.Path.Depth,
			fmt.Sprintf("%.1f", e.StageFO4), fmt.Sprintf("%.0f", e.StagePS), fmt.Sprintf("%.0f", e.SlackPS), pass, fmt.Sprintf("%.1f", e.MaxFO4ps))
	}
	t.Notes = append(t.Notes,
		"Stage delay = longest combinational path of the generic netlist under the logical-effort delay table (hw.DelayFO4) + flip-flop sequencing overhead; a configuration passes when it fits 500 ps.",
		"Without the split, the count stage (an 8-input popcount) is the slowest stage whenever it has a stage of its own: the paper's operation list leaves decode and unpack nearly empty. The split moves half of the popcount into the unpack stage at the cost of 6 register bits per element.")
	return t
}

func modelTable(tech hw.Technology) report.Table {
	t := report.Table{Name: "hardware-model", Title: "Cost model constants and their sources",
		Columns: []string{"cell", "GE", "delay FO4", "source"}}
	for _, typ := range sortedKeys(hw.CellGE) {
		ref := hw.CellGE[typ]
		dl := "register"
		if v, ok := hw.DelayFO4[typ]; ok {
			dl = fmt.Sprintf("%.2f", v)
		}
		t.AddRow(typ, fmt.Sprintf("%.3f", ref.GE), dl, ref.Source)
	}
	t.Notes = append(t.Notes, tech.Sources...)
	t.Notes = append(t.Notes, "Delays: logical effort (Sutherland, Sproull and Harris), electrical effort 4, FO4 = 5 tau; see hw.DelayFO4.")
	return t
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func hardwareFigures(o HardwareOptions, synth map[hw.Config]hw.SynthResult, est map[hw.Config]hw.Estimate, pnr map[int]hw.PnrResult) ([]report.Figure, error) {
	var figs []report.Figure
	var wx, cells, regs, px, py []float64
	for _, w := range o.Widths {
		if r, ok := synth[hw.Config{Width: w}.Normalized()]; ok {
			wx = append(wx, float64(w))
			cells = append(cells, float64(r.Generic.Cells))
			regs = append(regs, float64(r.Generic.Registers()))
		}
		if v, ok := paperCells[w]; ok {
			px = append(px, float64(w))
			py = append(py, v)
		}
	}
	if len(wx) > 0 {
		f, err := report.LinePlot{Title: "Fig. 8a analogue: generic cells against line width", XLabel: "line width (bits)", YLabel: "cells", LogX: true, LogY: true,
			Series: []report.Series{{Name: "cells (ours)", X: wx, Y: cells}, {Name: "registers (ours)", X: wx, Y: regs}, {Name: "cells (paper)", X: px, Y: py, Dashed: true}}}.Figure("fig8-cells")
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	var fx, fy, pfx, pfy []float64
	for _, w := range o.Widths {
		if p, ok := pnr[w]; ok && p.Fits {
			fx = append(fx, float64(w))
			fy = append(fy, p.FmaxMHz)
		}
		if v, ok := paperFmax[w]; ok {
			pfx = append(pfx, float64(w))
			pfy = append(pfy, v)
		}
	}
	if len(fx) > 0 {
		f, err := report.LinePlot{Title: "Fig. 8b analogue: routed Fmax against line width", XLabel: "line width (bits)", YLabel: "Fmax (MHz)", LogX: true,
			Series: []report.Series{{Name: "iCE40 HX8K (ours)", X: fx, Y: fy}, {Name: "ECP5 (paper)", X: pfx, Y: pfy, Dashed: true}},
			HLines: []report.HLine{{Y: hw.PnrTargetMHz, Label: "100 MHz target"}}}.Figure("fig8-fmax")
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	var kx, ky, sx, sy []float64
	for _, c := range o.sweep() {
		if e, ok := est[c]; ok {
			if c.SplitCount {
				sx = append(sx, float64(c.Stages))
				sy = append(sy, e.StagePS)
			} else {
				kx = append(kx, float64(c.Stages))
				ky = append(ky, e.StagePS)
			}
		}
	}
	if len(kx) > 0 {
		series := []report.Series{{Name: "slowest stage (ours)", X: kx, Y: ky}}
		if len(sx) > 0 {
			series = append(series, report.Series{Name: "split count (ours)", X: sx, Y: sy})
		}
		f, err := report.LinePlot{Title: fmt.Sprintf("Fig. 8c analogue: slowest stage at %d bits (%s)", o.SweepWidth, o.Tech.Name), XLabel: "pipeline stages", YLabel: "stage delay (ps)",
			Series: series,
			HLines: []report.HLine{{Y: hw.ClockPeriodPS, Label: "500 ps (2 GHz)"}}}.Figure("fig8-stages")
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}
