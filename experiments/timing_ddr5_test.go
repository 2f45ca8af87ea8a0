package experiments

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// The ddr5 layout puts each preset's measured range in its own column of
// the side-by-side Table 4 and carries the ablations and loaded-latency
// points through unchanged.
func TestDDR5LayoutColumns(t *testing.T) {
	pair := func(id, lb sim.Time) timing.Pair {
		return timing.Pair{Identity: timing.Result{RunTime: id}, LowBit: timing.Result{RunTime: lb}, Exposed: lb - id,
			OverheadPct: 100 * float64(lb-id) / float64(id), PipelineLatency: 2500}
	}
	ideal := []Table4Row{{Group: GroupFullMiss, Pair: pair(1000000, 1011900), ClosedFormPct: 1.176}}
	asic := []Table4Row{{Group: GroupFullMiss, Pair: pair(1000000, 1009000), ClosedFormPct: 0.871}, {Group: GroupFullMiss, Pair: pair(1000000, 1010100), ClosedFormPct: 0.874}}
	d := TimingDDR5{
		Table4:    []Table4Row{{Group: GroupFullMiss, Pair: pair(1000000, 1042100), ClosedFormPct: 2.2}},
		Ablations: []timing.Ablation{{Mechanism: timing.MechNone, Pair: pair(1000000, 1042100)}, {Mechanism: timing.MechRefresh, Pair: pair(1000000, 1000600)}},
		Loaded: []PresetLoadPoints{{Preset: "ddr5", Points: []timing.LoadPoint{{Mode: "identity", Outstanding: 4, DeliveredGiBps: 14.2,
			Latency: timing.Latency{MeanNS: 128.3, P50NS: 96, P99NS: 425}}}}},
	}
	res, err := ddr5Layout(DefaultTimingSetup(), d)
	if err != nil {
		t.Fatal(err)
	}
	pt := presetsTable4([]presetColumn{{"ideal", ideal}, {"asic-pcie5-x8", asic}, {"fpga-pcie5-x16", nil}, {projectionPreset, d.Table4}})
	res.Tables = append(res.Tables, pt)
	if want := []string{"result", "ideal % (T_agg/path %)", "asic-pcie5-x8 % (T_agg/path %)", "fpga-pcie5-x16 % (T_agg/path %)", projectionPreset + " % (T_agg/path %)", "paper %"}; fmt.Sprint(pt.Columns) != fmt.Sprint(want) {
		t.Errorf("columns %q, want %q", pt.Columns, want)
	}
	found := map[string]bool{}
	for _, tb := range res.Tables {
		found[tb.Name] = true
		if tb.Name == "table4-presets" {
			for _, r := range tb.Rows {
				if strings.HasPrefix(r[0], "full LLC-miss") && (r[1] != "1.19 (1.18)" || r[2] != "0.90–1.01 (0.87)" || r[3] != "not run" || r[4] != "4.21 (2.20)" || r[5] != "1.67%") {
					t.Errorf("full-miss row %q: want ideal 1.19 (1.18), asic 0.90–1.01 (0.87), fpga not run, projection 4.21 (2.20), paper 1.67%%", r)
				}
			}
		}
		if tb.Name == "ddr5-ablations" && !strings.Contains(tb.Notes[0], "from 4.21% to 0.06%") {
			t.Errorf("ablation note %q does not quote the measured change", tb.Notes[0])
		}
		if tb.Name == "loaded-latency" && (len(tb.Rows) != 1 || tb.Rows[0][3] != "14.20" || tb.Rows[0][4] != "128.3") {
			t.Errorf("loaded-latency rows %v", tb.Rows)
		}
	}
	for _, n := range []string{"table4-presets", "table4-runs-ddr5", "ddr5-ablations", "loaded-latency"} {
		if !found[n] {
			t.Errorf("no table %s", n)
		}
	}
	if len(res.Figures) != 1 || res.Figures[0].Name != "loaded-latency" || len(res.Figures[0].SVG) == 0 {
		t.Errorf("figures %v", res.Figures)
	}
}

// The refresh ablation's note follows the measured percentages: "most of
// it" only when removing refresh takes away at least half the exposure.
func TestRefreshAblationNote(t *testing.T) {
	for _, c := range []struct {
		base, noRef float64
		most        bool
	}{{4.21, 0.06, true}, {2.43, 2.25, false}, {2.0, 1.0, true}, {2.0, 1.01, false}, {-1, 1, true}} {
		got := refreshAblationNote(c.base, c.noRef)
		if strings.Contains(got, "most of it") != c.most || !strings.Contains(got, fmt.Sprintf("from %.2f%% to %.2f%%", c.base, c.noRef)) {
			t.Errorf("%v -> %v: %q", c.base, c.noRef, got)
		}
	}
}

// The ddr5-layout table pairs each contiguous (ablation) row with Table
// 4's healthy scale-out row of the same N (scattered, not a congested
// one), with both runs' row-hit rates.
func TestDDR5LayoutTable(t *testing.T) {
	pair := func(id, lb sim.Time, hid, hlb float64) timing.Pair {
		return timing.Pair{Identity: timing.Result{RunTime: id, Detail: &timing.DetailStats{RowHitRate: hid}},
			LowBit: timing.Result{RunTime: lb, Detail: &timing.DetailStats{RowHitRate: hlb}}, Exposed: lb - id,
			OverheadPct: 100 * float64(lb-id) / float64(id), PipelineLatency: 2500}
	}
	table4 := []Table4Row{
		{Group: GroupScaleCongest, Stacks: 2, Pair: pair(1000000, 1000000, 0.5, 0.5)},
		{Group: GroupScaleHealthy, Stacks: 2, Pair: pair(1000000, 1019500, 0.606, 0.607)},
	}
	ct := []Table4Row{{Group: GroupScaleHealthy, Stacks: 2, Layout: timing.LayoutContiguous, Pair: pair(1000000, 1155900, 0.909, 0.594)}}
	tb := layoutTable(table4, ct)
	want := []string{"2", "1.95", "0.606 / 0.607", "15.59", "0.909 / 0.594"}
	if len(tb.Rows) != 1 || fmt.Sprint(tb.Rows[0]) != fmt.Sprint(want) {
		t.Errorf("rows %v, want [%v]", tb.Rows, want)
	}
}

// The refresh-phases table pairs each Table 4 row with its periodic
// ablation and prints exposure per line from the pairs' own figures:
// 1000 lines, phased 2.6 us exposed = 2.600 ns/line (schedules 2.000 and
// 3.200), periodic 9 us = 9.000 ns/line, over 100 us identity runs.
func TestDDR5RefreshPhasesTable(t *testing.T) {
	row := func(id, lb sim.Time, phases []sim.Time) Table4Row {
		return Table4Row{Group: GroupOneStream, Streams: 1, Stacks: 1, Share: 1,
			Pair: timing.Pair{Identity: timing.Result{RunTime: id, Lines: 1000}, LowBit: timing.Result{RunTime: lb, Lines: 1000},
				Exposed: lb - id, OverheadPct: 100 * float64(lb-id) / float64(id), PhaseExposed: phases}}
	}
	us := sim.Microsecond
	tb := phasesTable([]Table4Row{row(100*us, 1026*us/10, []sim.Time{2 * us, 32 * us / 10, 26 * us / 10})}, []Table4Row{row(100*us, 109*us, nil)})
	want := []string{GroupOneStream, "1", "1", "1", "3", "2.60", "2.600", "2.000 / 3.200", "9.00", "9.000"}
	if len(tb.Rows) != 1 || strings.Join(tb.Rows[0], "|") != strings.Join(want, "|") {
		t.Errorf("rows %v; want %v", tb.Rows, want)
	}
}
