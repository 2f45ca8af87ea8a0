package experiments

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/pilot"
)

// TestPilotsSmall runs the control block on a small slice of MNIST: four
// scenarios, the live loop and the delay runs all complete, the fixed
// scenarios report their fixed traffic exactly, and every unit survives
// the JSON round trip.
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
	o.NS3.Model, o.NS3.Config.Workers, o.NS3.Config.Steps = "bert-large", 4, 1
	us, err := o.RunUnits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fig6, _, live, delays, fc, err := controlParts(us)
	if err != nil {
		t.Fatal(err)
	}
	if len(fig6) != 4 || live == nil || len(delays) != 2 || len(fc) != 4 {
		t.Fatalf("%d scenarios, live loop %v, %d delay runs, %d forecasts", len(fig6), live != nil, len(delays), len(fc))
	}
	// The fixed scenarios' traffic is known in closed form: FP32 is 1,
	// G-Binary sends 1 bit of 32 on every step.
	for _, sr := range fig6 {
		r := sr.runs[0]
		switch sr.scenario {
		case pilot.AlwaysFP32:
			if r.LowBitSteps != 0 || r.Traffic != 1 || r.Alarms != 0 {
				t.Errorf("always-fp32: low-bit %v traffic %v alarms %d", r.LowBitSteps, r.Traffic, r.Alarms)
			}
		case pilot.AlwaysGBinary:
			if r.LowBitSteps != 1 || r.Traffic != 1.0/32 {
				t.Errorf("always-g-binary: low-bit %v traffic %v", r.LowBitSteps, r.Traffic)
			}
		}
	}
	for _, d := range delays {
		if len(d.Modes) != d.Result.Steps {
			t.Errorf("delay %g ms: %d timeline steps, %d run steps", d.DelayMS, len(d.Modes), d.Result.Steps)
		}
	}
	// Every unit survives the JSON round trip shards travel by.
	for i, u := range us {
		raw, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var back ControlUnit
		if err := decodeExact(raw, &back); err != nil || !reflect.DeepEqual(back, u) {
			t.Errorf("unit %d: JSON round trip: %v", i, err)
		}
	}
	res, err := o.Layout(us)
	if err != nil {
		t.Fatal(err)
	}
	figs := 2
	if netsim.Available() == nil {
		figs += 2 // the ns-3 runs' figures
	}
	if len(res.Tables) != 6 || len(res.Figures) != figs || res.Tables[0].Name != "fig6" || res.Tables[5].Name != "ns3-telemetry" {
		t.Fatalf("%d tables, %d figures", len(res.Tables), len(res.Figures))
	}
}
