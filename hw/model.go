package hw

import (
	"fmt"
	"sort"
)

// The cost model turns a Yosys generic-cell netlist into gate equivalents,
// area, dynamic energy and a critical-path estimate. Every constant below
// states its source; none is fitted to the paper's Table 7.

// CellRef is one generic cell type's cost and where it comes from.
type CellRef struct {
	// GE is the area in NAND2 gate equivalents.
	GE float64
	// Source names the library cell(s) the GE is taken from.
	Source string
}

// NanGate 45nm Open Cell Library (NangateOpenCellLibrary_typical.lib)
// areas in µm², the reference for the GE table: NAND2_X1 = 1 GE.
const (
	areaNAND2 = 0.798 // NAND2_X1
	areaINV   = 0.532 // INV_X1
	areaNOR2  = 0.798 // NOR2_X1
	areaAND2  = 1.064 // AND2_X1
	areaOR2   = 1.064 // OR2_X1
	areaXOR2  = 1.596 // XOR2_X1 (XNOR2_X1 is the same)
	areaMUX2  = 1.862 // MUX2_X1
	areaAOI21 = 1.064 // AOI21_X1 (OAI21_X1 is the same)
	areaAOI22 = 1.330 // AOI22_X1 (OAI22_X1 is the same)
	areaBUF   = 0.798 // BUF_X1
	areaDFF   = 4.522 // DFF_X1
)

// CellGE maps Yosys's generic cell types (the ones `synth` leaves after
// ABC) to gate equivalents. Types with no single NanGate cell are priced
// as the two cells that implement them.
var CellGE = map[string]CellRef{
	"$_BUF_":        {areaBUF / areaNAND2, "BUF_X1"},
	"$_NOT_":        {areaINV / areaNAND2, "INV_X1"},
	"$_AND_":        {areaAND2 / areaNAND2, "AND2_X1"},
	"$_NAND_":       {1, "NAND2_X1"},
	"$_OR_":         {areaOR2 / areaNAND2, "OR2_X1"},
	"$_NOR_":        {areaNOR2 / areaNAND2, "NOR2_X1"},
	"$_XOR_":        {areaXOR2 / areaNAND2, "XOR2_X1"},
	"$_XNOR_":       {areaXOR2 / areaNAND2, "XNOR2_X1"},
	"$_ANDNOT_":     {(areaINV + areaNOR2) / areaNAND2, "INV_X1 + NOR2_X1 (A&~B = ~(~A|B))"},
	"$_ORNOT_":      {(areaINV + areaNAND2) / areaNAND2, "INV_X1 + NAND2_X1 (A|~B = ~(~A&B))"},
	"$_MUX_":        {areaMUX2 / areaNAND2, "MUX2_X1"},
	"$_NMUX_":       {(areaMUX2 + areaINV) / areaNAND2, "MUX2_X1 + INV_X1"},
	"$_AOI3_":       {areaAOI21 / areaNAND2, "AOI21_X1"},
	"$_OAI3_":       {areaAOI21 / areaNAND2, "OAI21_X1"},
	"$_AOI4_":       {areaAOI22 / areaNAND2, "AOI22_X1"},
	"$_OAI4_":       {areaAOI22 / areaNAND2, "OAI22_X1"},
	"$_DFF_P_":      {areaDFF / areaNAND2, "DFF_X1"},
	"$_SDFF_PP0_":   {(areaDFF + areaNOR2 + areaINV) / areaNAND2, "DFF_X1 + INV_X1 + NOR2_X1 (synchronous reset)"},
	"$_SDFF_PN0_":   {(areaDFF + areaAND2) / areaNAND2, "DFF_X1 + AND2_X1 (synchronous reset)"},
	"$_DFFE_PP_":    {(areaDFF + areaMUX2) / areaNAND2, "DFF_X1 + MUX2_X1 (enable)"},
	"$_SDFFE_PP0P_": {(areaDFF + areaMUX2 + areaAND2) / areaNAND2, "DFF_X1 + MUX2_X1 + AND2_X1"},
}

// DelayFO4 maps generic cell types to a delay in FO4 inverter delays from
// the method of logical effort (Sutherland, Sproull and Harris, "Logical
// Effort", 1999): d = g*h + p in units of tau with electrical effort
// h = 4 (each gate drives four copies of itself) and FO4 = 5 tau. Single
// stages use the book's g and p (NAND2 g=4/3 p=2, NOR2 g=5/3 p=2, XOR2
// g=4 p=4, AOI21/OAI21 g=2 p=3, AOI22/OAI22 g=2 p=4, inverting MUX2 g=2
// p=4); two-stage cells (AND2 = NAND2+INV, ...) use the optimal stage
// effort over their path effort.
var DelayFO4 = map[string]float64{
	"$_BUF_":    1.2,  // INV+INV, F = 4:      2*2 + 2 = 6 tau
	"$_NOT_":    1.0,  // 4 + 1 = 5 tau
	"$_NAND_":   1.47, // 16/3 + 2 = 7.33 tau
	"$_NOR_":    1.73, // 20/3 + 2 = 8.67 tau
	"$_AND_":    1.52, // NAND2+INV, F = 16/3: 2*2.31 + 3 = 7.62 tau
	"$_OR_":     1.63, // NOR2+INV,  F = 20/3: 2*2.58 + 3 = 8.16 tau
	"$_XOR_":    4.0,  // 16 + 4 = 20 tau
	"$_XNOR_":   4.0,  // 16 + 4 = 20 tau
	"$_ANDNOT_": 2.13, // INV (h=1, 2 tau) + NOR2 (8.67 tau)
	"$_ORNOT_":  1.87, // INV (h=1, 2 tau) + NAND2 (7.33 tau)
	"$_MUX_":    2.13, // MUX2+INV,  F = 8:    2*2.83 + 5 = 10.66 tau
	"$_NMUX_":   2.4,  // 8 + 4 = 12 tau
	"$_AOI3_":   2.2,  // 8 + 3 = 11 tau
	"$_OAI3_":   2.2,
	"$_AOI4_":   2.4, // 8 + 4 = 12 tau
	"$_OAI4_":   2.4,
}

// Technology is the process point the GE count is converted at.
type Technology struct {
	Name string `json:"name"`
	// UM2PerGE is the area of one NAND2 gate equivalent in µm².
	UM2PerGE float64 `json:"um2_per_ge"`
	// FO4ps is the FO4 inverter delay in picoseconds.
	FO4ps float64 `json:"fo4_ps"`
	// SeqFO4 is the flip-flop sequencing overhead (clock-to-Q plus setup)
	// in FO4.
	SeqFO4 float64 `json:"seq_fo4"`
	// Vdd in volts.
	Vdd float64 `json:"vdd"`
	// CGEfF is the switched capacitance per gate equivalent per output
	// transition, in fF; CClkfF the clock-pin capacitance per flip-flop.
	CGEfF  float64 `json:"c_ge_ff"`
	CClkfF float64 `json:"c_clk_ff"`
	// Activity is the probability that a logic node makes a 0->1
	// transition in a cycle.
	Activity float64 `json:"activity"`
	// Sources documents each constant.
	Sources []string `json:"sources"`
}

// NanGate45 is the default technology point: the NanGate 45nm Open Cell
// Library (FreePDK45), typical corner.
var NanGate45 = Technology{
	Name:     "NanGate 45nm OCL (FreePDK45), typical",
	UM2PerGE: areaNAND2,
	FO4ps:    15,
	SeqFO4:   3,
	Vdd:      1.1,
	CGEfF:    3.2,
	CClkfF:   0.95,
	Activity: 0.25,
	Sources: []string{
		"µm² per GE: NAND2_X1 area 0.798 µm² (NangateOpenCellLibrary_typical.lib); GE of every cell type from the same library (CellGE)",
		"FO4 = 15 ps: assumption for a 45 nm bulk process (the rule of thumb of about 1/3 ps per nm of drawn length)",
		"sequencing overhead 3 FO4 (clock-to-Q + setup of a flip-flop): typical textbook value (Weste and Harris, CMOS VLSI Design)",
		"Vdd 1.1 V: the library's typical corner",
		"switched capacitance 3.2 fF per GE: two NAND2_X1 input pins (1.6 fF each in the library), i.e. fanout 2, wires neglected",
		"clock pin 0.95 fF per flip-flop (DFF_X1 CK pin), switching every cycle",
		"activity 0.25: a node of a datapath fed uniformly random data rises in a quarter of the cycles",
	},
}

// ClockPeriodPS is the paper's 2 GHz controller clock period (Fig. 8).
const ClockPeriodPS = 500.0

// Estimate is the cost model's verdict on one synthesized configuration.
type Estimate struct {
	Width      int  `json:"width"`
	Stages     int  `json:"stages"`
	SplitCount bool `json:"split_count,omitempty"`
	// GE splits into registers and logic.
	GE         float64 `json:"ge"`
	GERegister float64 `json:"ge_register"`
	GELogic    float64 `json:"ge_logic"`
	AreaMM2    float64 `json:"area_mm2"`
	// EnergyPJ is the dynamic energy of one line at one line per cycle.
	EnergyPJ float64 `json:"energy_pj_per_line"`
	// StageFO4 is the slowest stage: longest path + sequencing overhead.
	StageFO4 float64 `json:"stage_fo4"`
	StagePS  float64 `json:"stage_ps"`
	// SlackPS is ClockPeriodPS - StagePS (negative: misses 2 GHz).
	SlackPS float64 `json:"slack_ps"`
	// MaxFO4ps is the slowest FO4 at which the stage still fits 500 ps.
	MaxFO4ps float64 `json:"max_fo4_ps_for_2ghz"`
}

// Passes2GHz reports whether the slowest stage fits one 2 GHz cycle.
func (e Estimate) Passes2GHz() bool { return e.SlackPS >= 0 }

// UnknownCellError reports a cell type the GE table does not price.
type UnknownCellError struct{ Type string }

func (e *UnknownCellError) Error() string {
	return fmt.Sprintf("cell type %s has no gate-equivalent entry", e.Type)
}

// Estimate applies the cost model to a generic-cell synthesis result.
func (t Technology) Estimate(r SynthResult) (Estimate, error) {
	e := Estimate{Width: r.Width, Stages: r.Stages, SplitCount: r.SplitCount}
	types := make([]string, 0, len(r.Generic.CellsByType))
	for ty := range r.Generic.CellsByType {
		types = append(types, ty)
	}
	sort.Strings(types) // a fixed summation order: same bytes out
	ffs := 0
	for _, ty := range types {
		n := r.Generic.CellsByType[ty]
		ref, ok := CellGE[ty]
		if !ok {
			return e, &UnknownCellError{Type: ty}
		}
		ge := ref.GE * float64(n)
		if IsRegister(ty) {
			e.GERegister += ge
			ffs += n
		} else {
			e.GELogic += ge
		}
	}
	e.GE = e.GERegister + e.GELogic
	e.AreaMM2 = e.GE * t.UM2PerGE * 1e-6
	// E = a * C * V^2 per node and cycle, plus the clock pins every cycle.
	fj := e.GE*t.Activity*t.CGEfF*t.Vdd*t.Vdd + float64(ffs)*t.CClkfF*t.Vdd*t.Vdd
	e.EnergyPJ = fj / 1000
	e.StageFO4 = r.Path.DelayFO4 + t.SeqFO4
	e.StagePS = e.StageFO4 * t.FO4ps
	e.SlackPS = ClockPeriodPS - e.StagePS
	e.MaxFO4ps = ClockPeriodPS / e.StageFO4
	return e, nil
}
