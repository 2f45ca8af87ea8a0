package experiments

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/report"
)

// formatsTable puts the conservative formats' sum datapaths beside the
// paper's vote datapath at one line width: Yosys cells, registers,
// gate equivalents, the longest path and its 2 GHz slack under the cost
// model, the routed Fmax on every part, and the co-simulation verdict.
func formatsTable(o HardwareOptions, d *hardwareData) report.Table {
	w := o.FormatWidth
	cols := []string{"datapath", "stages", "workers", "cells", "registers", "logic cells", "GE", "area mm²", "path cells", "stage FO4", "2 GHz slack ps"}
	if o.ECP5 {
		cols = append(cols, "ECP5 LUT4", "ECP5 FF")
	}
	for _, p := range d.parts {
		cols = append(cols, partLabel(p)+" logic", partLabel(p)+" Fmax MHz")
	}
	cols = append(cols, "cells vs vote", "registers vs vote", "co-simulation")
	t := report.Table{Name: "hardware-formats", Title: fmt.Sprintf("Conservative formats' sum datapaths beside the vote datapath at %d bits (%s)", w, d.buildLabel(d.builds[0])), Columns: cols}
	base, haveBase := d.primary()[hw.Config{Width: w}.Normalized()]
	rows := append([]hw.Datapath{hw.Vote}, o.Formats...)
	for _, dp := range rows {
		c := hw.Config{Width: w, Datapath: dp}.Normalized()
		name := dp.String() + " (G-Binary, G-Ternary, bypass)"
		if !dp.Paper() {
			name = dp.String()
		}
		row := []any{name, c.Stages, c.Workers}
		run, ok := d.primary()[c]
		if ok {
			r, e := run.Result, run.Estimate
			row = append(row, r.Generic.Cells, r.Generic.Registers(), r.Generic.Logic(), fmt.Sprintf("%.0f", e.GE), fmt.Sprintf("%.6f", e.AreaMM2),
				r.Path.Depth, fmt.Sprintf("%.1f", e.StageFO4), fmt.Sprintf("%.0f", e.SlackPS))
		} else {
			row = append(row, "skipped", "-", "-", "-", "-", "-", "-", "-")
		}
		if o.ECP5 {
			if ok && run.Result.ECP5 != nil {
				row = append(row, run.Result.ECP5.Count("LUT4"), run.Result.ECP5.Registers())
			} else {
				row = append(row, "-", "-")
			}
		}
		for _, p := range d.parts {
			var rs []hw.PnrResult
			if !dp.Paper() {
				if r, ok := d.fpnr[p][dp]; ok {
					rs = []hw.PnrResult{r}
				}
			} else {
				rs = d.pnr[p][w]
			}
			l, f := routeCells(rs)
			row = append(row, l, f)
		}
		cellsVs, regsVs := "-", "-"
		if ok && haveBase && !dp.Paper() {
			cellsVs = fmt.Sprintf("%.2fx", float64(run.Result.Generic.Cells)/float64(base.Result.Generic.Cells))
			regsVs = fmt.Sprintf("%.2fx", float64(run.Result.Generic.Registers())/float64(base.Result.Generic.Registers()))
		}
		row = append(row, cellsVs, regsVs, formatCosimCell(d, c))
		t.AddRow(row...)
	}
	c8 := hw.Config{Width: w, Datapath: "int8"}.Normalized()
	t.Notes = append(t.Notes,
		fmt.Sprintf("Sum datapaths (hw package doc): one worker line per clock into exact %d-bit lane accumulators (W <= %d), saturated once to int16; the response is both view lines of a payload line at once (%d bits). int8 registers input | accumulate | saturate; bfp8 input (with k = min(E - e, 8) per block) | align (round to nearest, ties up) | accumulate (its exponent pass takes the lane max in the same registers) | saturate, E coming from its exponent view.",
			c8.AccBits(), c8.Workers, c8.OutWidth()),
		"The vote row is the paper's five-stage datapath (workers = its 8 sign bits per byte), the same run as the Table 7 analogue; \"vs vote\" divides by its cells and registers.",
		"Throughput differs: per cycle the vote datapath aggregates all 8 workers' signs of one line's elements (element-major packet), a sum datapath one worker's line, so an aggregate of W workers takes W cycles.")
	for _, p := range d.parts {
		t.Notes = append(t.Notes, fmt.Sprintf("%s route: the serial wrapper of the place-and-route proxy around each datapath (the sum datapaths' request and %d-bit response are wider), %s then %s --freq %.0f --seed 1.",
			partLabel(p), 2*w, p.Family.SynthPass(), p.Family.Nextpnr().Name, hw.PnrTargetMHz))
	}
	return t
}

// formatCosimCell summarizes the co-simulation runs of c's datapath at its
// width: "pass (iverilog)" or the failures; "-" when none ran.
func formatCosimCell(d *hardwareData, c hw.Config) string {
	rs := d.Cosim
	if !c.Datapath.Paper() {
		rs = d.FormatCosim
	}
	var pass, fail []string
	for _, r := range rs {
		if r.Width != c.Width || r.Datapath != c.Datapath || r.Stages != c.Stages {
			continue
		}
		if r.Passed() {
			pass = append(pass, string(r.Simulator))
		} else {
			fail = append(fail, fmt.Sprintf("%s: %d mismatches", r.Simulator, r.Mismatches))
		}
	}
	switch {
	case len(fail) > 0:
		return "FAIL (" + strings.Join(fail, "; ") + ")"
	case len(pass) > 0:
		return "pass (" + strings.Join(pass, ", ") + ")"
	}
	return "-"
}
