package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/hw"
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
	for _, want := range []string{"Table 7 analogue", "Fig. 8 analogue", "paper", "yosys:", "5 passed, 0 failed"} {
		if !strings.Contains(txt, want) {
			t.Errorf("report lacks %q:\n%s", want, txt)
		}
	}
	if len(res.Figures) == 0 {
		t.Error("no figures")
	}
}

func TestHardwareBlockRegistered(t *testing.T) {
	bs, err := Select([]string{"hardware"})
	if err != nil || len(bs) != 1 || bs[0].Order != 60 {
		t.Fatalf("hardware block: %v %v", bs, err)
	}
}
