package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/pilot"
)

// TestPilotsSmall runs the control block on a small slice of MNIST: four
// traces, the live loop and the delay runs all complete, and the fixed
// traces report their fixed traffic exactly.
func TestPilotsSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("trains small models")
	}
	o := PilotDefaults(false, 1)
	o.Train.TrainN, o.Train.TestN, o.Train.Epochs, o.Train.Seeds = 1280, 500, 3, 1
	o.Hard.TrainN, o.Hard.TestN, o.Hard.Epochs = 1280, 500, 2
	o.Control.WarmupSteps, o.Control.CooldownSteps, o.Control.CalibrationSteps = 10, 5, 2
	o.Fault = pilot.Fault{StartEpoch: 2, EndEpoch: 2, Rate: 0.5}
	o.Delays = []float64{0, 100}
	res, err := Pilots(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 5 || len(res.Figures) != 2 {
		t.Fatalf("%d tables, %d figures", len(res.Tables), len(res.Figures))
	}
	fig6 := res.Tables[0]
	want := map[string][2]string{"always-fp32": {"0.00", "1.000x"}, "always-g-binary": {"100.00", "0.031x"}}
	for _, r := range fig6.Rows {
		if w, ok := want[r[0]]; ok && (r[1] != w[0] || r[2] != w[1]) {
			t.Errorf("%s: low-bit %s traffic %s; want %s %s", r[0], r[1], r[2], w[0], w[1])
		}
	}
	if !strings.Contains(fig6.Rows[3][6], "81.11") {
		t.Errorf("paper column of g-binary-default: %q", fig6.Rows[3][6])
	}
}
