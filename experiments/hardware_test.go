package experiments

import (
	"context"
	"testing"

	"github.com/neuronfabric/nfabric/hw"
)

func TestHardwareUnitsSmall(t *testing.T) {
	if !hw.Yosys.Available() || !hw.Iverilog.Available() {
		t.Skip("skipping: needs the Debian packages yosys and iverilog")
	}
	o := HardwareOptions{Widths: []int{64}, Stages: []int{3}, SweepWidth: 64, Cosim: true,
		Sims: []hw.Simulator{hw.SimIcarus}, Vectors: 100, Seed: 1, Tech: hw.NanGate45}
	us := hardwareUnits(o)
	rs := make([]HardwareUnit, len(us))
	for i, u := range us {
		var err error
		if rs[i], err = u.Run(context.Background(), Config{}); err != nil {
			t.Fatal(err)
		}
	}
	g := gatherHardware(o.withDefaults(), rs)
	if len(g.d.Cosim) != len(hw.Widths) || g.cosimFailed != 0 || g.cosimPassed != len(hw.Widths) {
		t.Errorf("co-simulation: %d runs, %d passed, %d failed", len(g.d.Cosim), g.cosimPassed, g.cosimFailed)
	}
	for _, c := range g.d.Cosim {
		if c.Checked == 0 || c.Mismatches != 0 {
			t.Errorf("cosim %+v", c)
		}
	}
	// 64 bits at five stages and at three: two syntheses with estimates.
	if !g.haveSynth || len(g.synth) != 2 || len(g.d.Tools) == 0 {
		t.Fatalf("synth %d results, tools %v", len(g.synth), g.d.Tools)
	}
	deep, shallow := g.synth[hw.Config{Width: 64}.Normalized()], g.synth[hw.Config{Width: 64, Stages: 3}.Normalized()]
	if deep.Generic.Registers() <= shallow.Generic.Registers() || !(g.est[hw.Config{Width: 64}.Normalized()].GE > 0) {
		t.Errorf("five stages register %d bits, three %d", deep.Generic.Registers(), shallow.Generic.Registers())
	}
	res, err := HardwareLayout(o.withDefaults(), rs)
	if err != nil || res.Passed != len(hw.Widths) || len(res.Figures) == 0 {
		t.Errorf("layout: %v", err)
	}
}

// A missing synthesis tool skips every synthesis and what depends on it
// (place and route), once in the summary.
func TestHardwareMissingTool(t *testing.T) {
	o := HardwareOptions{Widths: []int{64, 512}, PnR: true}.withDefaults()
	us := []HardwareUnit{{Stage: "tools", Tools: []string{"yosys: not found"}},
		{Stage: "synth", Skipped: "skipped: yosys"}, {Stage: "synth", Skipped: "skipped: yosys"},
		{Stage: "pnr", Skipped: "skipped: nextpnr"}}
	g := gatherHardware(o, us)
	if g.haveSynth || len(g.d.Skipped) != 1 || g.d.Skipped[0] != "skipped: yosys" {
		t.Errorf("skipped %v, have synth %v", g.d.Skipped, g.haveSynth)
	}
	res, err := HardwareLayout(o, us)
	if err != nil || len(res.Tables) != 0 || len(res.Figures) != 0 {
		t.Errorf("layout without synthesis: %d tables, %v", len(res.Tables), err)
	}
}

func TestHardwareBlockRegistered(t *testing.T) {
	bs, err := Select([]string{"hardware"})
	if err != nil || len(bs) != 1 || bs[0].Order != 60 {
		t.Fatalf("hardware block: %v %v", bs, err)
	}
}
