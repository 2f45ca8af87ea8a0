package hw

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const statJSON = `{
   "creator": "Yosys 0.23 (git sha1 7ce5011c24b)",
   "invocation": "stat -json ",
   "modules": {
      "\\nf_agg_w64_k5": {
         "num_wires": 10, "num_cells": 6,
         "num_cells_by_type": { "$_AND_": 2, "$_DFF_P_": 3, "$_SDFF_PP0_": 1 }
      }
   },
   "design": { "num_cells": 6, "num_cells_by_type": { "$_AND_": 2, "$_DFF_P_": 3, "$_SDFF_PP0_": 1 } }
}`

func TestParseStat(t *testing.T) {
	s, err := ParseStat([]byte(statJSON), "nf_agg_w64_k5")
	if err != nil {
		t.Fatal(err)
	}
	if s.Cells != 6 || s.Registers() != 4 || s.Logic() != 2 || s.Count("$_AND_") != 2 {
		t.Errorf("ParseStat = %+v: registers %d logic %d", s, s.Registers(), s.Logic())
	}
	if _, err := ParseStat([]byte(statJSON), ""); err != nil {
		t.Error(err)
	}
	bad := []string{
		``, `{`, `[]`, `{"modules": {}}`,
		`{"modules": {"\\m": {"num_cells_by_type": {}}}}`,
		`{"modules": {"\\m": {"num_cells": 3, "num_cells_by_type": {"$_AND_": 2}}}}`,
		`{"modules": {"\\m": {"num_cells": -1, "num_cells_by_type": {"$_AND_": -1}}}}`,
	}
	for _, b := range bad {
		if _, err := ParseStat([]byte(b), "m"); err == nil {
			t.Errorf("ParseStat(%q) accepted", b)
		}
	}
}

func TestIsRegister(t *testing.T) {
	for typ, want := range map[string]bool{
		"$_DFF_P_": true, "$_SDFFE_PP0P_": true, "$_DLATCH_P_": true, "TRELLIS_FF": true, "SB_DFFE": true,
		"$_AND_": false, "LUT4": false, "$_MUX_": false, "CCU2C": false, "SB_CARRY": false,
	} {
		if IsRegister(typ) != want {
			t.Errorf("IsRegister(%s) = %v", typ, !want)
		}
	}
}

// A hand-made netlist: in -> NOT -> XOR(., in) -> DFF -> AND -> out.
// Paths: NOT+XOR = 2 cells, 1 + 4 FO4; AND = 1 cell.
const netJSON = `{"modules": {"top": {"cells": {
  "n": {"type": "$_NOT_", "port_directions": {"A": "input", "Y": "output"}, "connections": {"A": [2], "Y": [3]}},
  "x": {"type": "$_XOR_", "port_directions": {"A": "input", "B": "input", "Y": "output"}, "connections": {"A": [3], "B": [2], "Y": [4]}},
  "f": {"type": "$_DFF_P_", "port_directions": {"C": "input", "D": "input", "Q": "output"}, "connections": {"C": [1], "D": [4], "Q": [5]}},
  "a": {"type": "$_AND_", "port_directions": {"A": "input", "B": "input", "Y": "output"}, "connections": {"A": [5], "B": ["1"], "Y": [6]}}
}}}}`

func TestLongestPath(t *testing.T) {
	p, err := LongestPath([]byte(netJSON), "top", DelayFO4)
	if err != nil {
		t.Fatal(err)
	}
	if p.Depth != 2 || math.Abs(p.DelayFO4-5) > 1e-9 || strings.Join(p.Cells, ",") != "$_NOT_,$_XOR_" {
		t.Errorf("LongestPath = %+v; want depth 2, 5 FO4, NOT,XOR", p)
	}
	loop := strings.Replace(netJSON, `"A": [2], "Y": [3]`, `"A": [4], "Y": [3]`, 1)
	if _, err := LongestPath([]byte(loop), "top", DelayFO4); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("combinational loop not reported: %v", err)
	}
	if _, err := LongestPath([]byte(netJSON), "other", DelayFO4); err == nil {
		t.Error("missing module accepted")
	}
	if _, err := LongestPath([]byte(netJSON), "top", map[string]float64{}); err == nil {
		t.Error("cell with no delay accepted")
	}
}

const pnrLog = `Info: Device utilisation:
Info: 	         ICESTORM_LC:  5933/ 7680    77%
Info: 	        ICESTORM_RAM:     0/   32     0%
Info: 	               SB_IO:     5/  256     1%
Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 120.00 MHz (PASS at 100.00 MHz)
Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 152.23 MHz (PASS at 100.00 MHz)
ERROR: something else
`

func TestParsePnrLog(t *testing.T) {
	p, err := ParsePnrLog(pnrLog)
	if err != nil {
		t.Fatal(err)
	}
	if p.Utilisation["ICESTORM_LC"] != [2]int{5933, 7680} || p.FmaxMHz != 152.23 || !p.Pass || p.TargetMHz != 100 || len(p.Errors) != 1 {
		t.Errorf("ParsePnrLog = %+v", p)
	}
	p, _ = ParsePnrLog("Info: Max frequency for clock 'c': 80.5 MHz (FAIL at 100.00 MHz)\n")
	if p.Pass || p.FmaxMHz != 80.5 {
		t.Errorf("FAIL line: %+v", p)
	}
}

// TestPnrMissedTiming: nextpnr-ecp5 0.11 exits 1 when the route misses
// --freq, logging the post-route frequency as an ERROR line. The route is
// complete, so the outcome is a fitted design that misses the target, not
// a flow failure (the old code returned an error and lost the figure).
func TestPnrMissedTiming(t *testing.T) {
	work := t.TempDir()
	log := `Info: Max frequency for clock '$glbnet$clk$TRELLIS_IO_IN': 88.10 MHz (FAIL at 100.00 MHz)
Info: Device utilisation:
Info:          TRELLIS_COMB:  9000/83640    10%
ERROR: Max frequency for clock '$glbnet$clk$TRELLIS_IO_IN': 69.83 MHz (FAIL at 100.00 MHz)
0 warnings, 1 error
`
	if err := os.WriteFile(filepath.Join(work, "nextpnr.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Config{Width: 512, Datapath: "bfp8"}
	r, err := pnrOutcome(work, c, DefaultECP5, errors.New("exit status 1"), PnrResult{Width: 512})
	if err != nil {
		t.Fatalf("a route that misses timing is an error: %v", err)
	}
	if !r.Fits || r.Pass || r.FmaxMHz != 69.83 || r.Logic != 9000 || r.LogicTotal != 83640 {
		t.Errorf("outcome %+v; want fits, misses, 69.83 MHz, 9000/83640", r)
	}
	// Any other error still fails the flow.
	bad := log + "ERROR: Unable to route net foo\n"
	if err := os.WriteFile(filepath.Join(work, "nextpnr.log"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pnrOutcome(work, c, DefaultECP5, errors.New("exit status 1"), PnrResult{Width: 512}); err == nil {
		t.Error("a routing error was taken for a timing miss")
	}
}

func TestEstimate(t *testing.T) {
	r := SynthResult{
		Width: 64, Stages: 5,
		Generic: Stat{Cells: 3, CellsByType: map[string]int{"$_NAND_": 2, "$_DFF_P_": 1}},
		Path:    PathResult{DelayFO4: 7},
	}
	tech := Technology{UM2PerGE: 1, FO4ps: 10, SeqFO4: 3, Vdd: 1, CGEfF: 1, CClkfF: 1, Activity: 0.5}
	e, err := tech.Estimate(r)
	if err != nil {
		t.Fatal(err)
	}
	ge := 2 + areaDFF/areaNAND2
	if math.Abs(e.GE-ge) > 1e-9 || math.Abs(e.AreaMM2-ge*1e-6) > 1e-15 {
		t.Errorf("GE %v area %v; want %v", e.GE, e.AreaMM2, ge)
	}
	if want := (ge*0.5 + 1) / 1000; math.Abs(e.EnergyPJ-want) > 1e-12 {
		t.Errorf("energy %v; want %v", e.EnergyPJ, want)
	}
	if e.StagePS != 100 || e.SlackPS != 400 || !e.Passes2GHz() || e.MaxFO4ps != 50 {
		t.Errorf("timing %+v", e)
	}
	r.Generic.CellsByType["$_MYSTERY_"] = 1
	if _, err := tech.Estimate(r); err == nil {
		t.Error("unknown cell type priced")
	}
	for typ := range DelayFO4 {
		if _, ok := CellGE[typ]; !ok {
			t.Errorf("%s has a delay but no GE", typ)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statJSON), "nf_agg_w64_k5")
	f.Add([]byte(`{"modules":{"\\m":{"num_cells":0,"num_cells_by_type":{}}}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, module string) {
		s, err := ParseStat(data, module)
		if err != nil {
			return
		}
		if s.Cells < 0 || s.Registers() < 0 || s.Registers() > s.Cells {
			t.Fatalf("inconsistent stat %+v", s)
		}
	})
}

func FuzzParsePnrLog(f *testing.F) {
	f.Add(pnrLog)
	f.Add("Info: \tICESTORM_LC: 99999999999999999999/ 1 1%\n")
	f.Fuzz(func(t *testing.T, log string) {
		p, err := ParsePnrLog(log)
		if err != nil {
			return
		}
		if p.HasFmax && (p.FmaxMHz < 0 || math.IsNaN(p.FmaxMHz)) {
			t.Fatalf("bad fmax %+v", p)
		}
	})
}

func FuzzLongestPath(f *testing.F) {
	f.Add([]byte(netJSON))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LongestPath(data, "top", DelayFO4)
		if err != nil {
			return
		}
		if p.Depth < 0 || p.DelayFO4 < 0 || len(p.Cells) > p.Depth {
			t.Fatalf("inconsistent path %+v", p)
		}
	})
}

func FuzzParseResponse(f *testing.F) {
	f.Add("1 0807060504030201")
	f.Fuzz(func(t *testing.T, line string) {
		v, d, err := ParseResponse(line, 64)
		if err == nil && v && len(d) != 8 {
			t.Fatalf("valid response with %d bytes", len(d))
		}
	})
}
