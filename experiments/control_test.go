package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/usage"
)

// TestPilotsSmall runs the control block's defaults (the ResNet stand-ins)
// on small slices of Fashion-MNIST and mnist-stack100: four scenarios,
// the live loop and the delay runs all complete, the fixed scenarios
// report their fixed traffic exactly, every unit survives the JSON round
// trip, and the calibration table re-derives the CUSUM and ladder from the
// always-fp32 run exactly as control.CalibrateCUSUM and CalibrateLadder do
// on that run's own pre-fault losses and warm-up cosines.
func TestPilotsSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("trains small models")
	}
	o := PilotDefaults(run.TierQuick, 1)
	o.Train.TrainN, o.Train.TestN, o.Train.Epochs, o.Train.Seeds = 768, 256, 3, 1
	o.Hard.TrainN, o.Hard.TestN, o.Hard.Epochs = 768, 256, 2
	o.Control.WarmupSteps, o.Control.CooldownSteps, o.Control.CalibrationSteps = 6, 3, 2
	o.DiagEvery, o.TelemetryEpochs = 2, 2
	o.Fault = pilot.Fault{StartEpoch: 3, EndEpoch: 3, Rate: 0.5}
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
	for _, sr := range fig6 {
		if sr.scenario != pilot.AlwaysFP32 {
			continue
		}
		r := sr.runs[0]
		if r.Steps != 18 || len(r.Losses) != 18 || r.Warmup == nil || r.Warmup.Step != 4 {
			t.Fatalf("always-fp32: %d steps, %d losses, warm-up diagnostics %+v", r.Steps, len(r.Losses), r.Warmup)
		}
		// Steps 0-11 precede the fault (epoch 3 of 6-step epochs).
		wantLoss, err := control.CalibrateCUSUM(r.Losses[:12], o.Control.LossAlpha, 6)
		if err != nil {
			t.Fatal(err)
		}
		floor := func(v float64) float64 { return math.Floor(v*20+1e-9) / 20 } // the ladder's 0.05 grid, by hand
		wantBin, wantTer := floor(r.Warmup.Binary.Groups[nn.Backbone]), floor(r.Warmup.Ternary.Groups[nn.Backbone])
		cal, err := o.calibrationTable(fig6)
		if err != nil {
			t.Fatal(err)
		}
		g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
		for i, want := range []string{g(wantLoss.K), g(wantLoss.H), g(wantBin), g(wantTer), "6", "6", "2"} {
			if got := fmt.Sprint(cal.Rows[i][2]); got != want {
				t.Errorf("calibration row %d (%v): derived %s, want %s", i, cal.Rows[i][0], got, want)
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
		if err := run.DecodeExact(raw, &back); err != nil || !reflect.DeepEqual(back, u) {
			t.Errorf("unit %d: JSON round trip: %v", i, err)
		}
		if err := back.CheckConsistent(); err != nil {
			t.Errorf("unit %d: the pilot's own result: %v", i, err)
		}
	}
	res, err := o.Layout(us)
	if err != nil {
		t.Fatal(err)
	}
	catalogueMatches(t, "control", run.Config{Tier: run.TierQuick}, res.Claims)
	figs := 2
	if netsim.Available() == nil {
		figs += 2 // the ns-3 runs' figures
	}
	names := []string{"fig6", "claims", "calibration", "fig6-timeline", "live-loop", "telemetry-delay", "predictor", "ns3-telemetry"}
	var got []string
	for _, tb := range res.Tables {
		got = append(got, tb.Name)
	}
	if !reflect.DeepEqual(got, names) || len(res.Figures) != figs {
		t.Fatalf("tables %q, %d figures; want %q, %d", got, len(res.Figures), names, figs)
	}
	if len(res.Tables) != 8 {
		t.Fatalf("%d tables, %d figures", len(res.Tables), len(res.Figures))
	}
}

// TestCalibrateAlone checks `nfabric pilot --calibrate`'s run: the
// always-fp32 pilot over the epochs before the fault window, fault-free,
// whose table derives K and H as control.CalibrateCUSUM does on that
// record's losses after warm-up; and a fault in epoch 1 leaves nothing to
// calibrate on.
func TestCalibrateAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	o := PilotDefaults(run.TierQuick, 1)
	o.Train.TrainN, o.Train.TestN = 512, 128
	o.Control.WarmupSteps, o.DiagEvery = 4, 2
	o.Fault = pilot.Fault{StartEpoch: 3, EndEpoch: 3, Rate: 0.5}
	res, err := o.Calibrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u := res.Data.(ControlUnit)
	r := u.Pilot.Result
	if r.Scenario != pilot.AlwaysFP32.String() || len(r.Epochs) != 2 || r.Epochs[0].Fault || r.Epochs[1].Fault || len(r.Losses) != 8 {
		t.Fatalf("record: %s, %d epochs, %d losses", r.Scenario, len(r.Epochs), len(r.Losses))
	}
	want, err := control.CalibrateCUSUM(r.Losses, o.Control.LossAlpha, 4)
	if err != nil {
		t.Fatal(err)
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	if tb := res.Tables[0]; tb.Name != "calibration" || tb.Rows[0][2] != g(want.K) || tb.Rows[1][2] != g(want.H) {
		t.Errorf("table %s: K %s H %s; want %s %s", tb.Name, tb.Rows[0][2], tb.Rows[1][2], g(want.K), g(want.H))
	}
	o.Fault.StartEpoch = 1
	if _, err := o.Calibrate(context.Background()); err == nil {
		t.Error("a fault from epoch 1 was calibrated on")
	}
}

// TestPilotOptionsValidate: each option that is wrong in itself is a usage
// error naming its flag; the block's own defaults pass; the live loop takes
// only the training options the user set.
func TestPilotOptionsValidate(t *testing.T) {
	def := PilotDefaults(run.TierQuick, 1)
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for flag, edit := range map[string]func(o *PilotOptions){
		"--fault-rate":   func(o *PilotOptions) { o.Fault.Rate = 1.5 },
		"--fault-epochs": func(o *PilotOptions) { o.Fault.StartEpoch = o.Train.Epochs + 1 },
		"--diag-every":   func(o *PilotOptions) { o.DiagEvery = -1 },
	} {
		o := def
		edit(&o)
		if err := o.Validate(); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: %v; want a usage error naming it", flag, err)
		}
	}
	o := def
	o.Train.Epochs, o.Train.TrainN = 3, 99
	o.LiveFollowsTrain(func(flag string) bool { return flag == "epochs" })
	if o.Hard.Epochs != 3 || o.Hard.TrainN != def.Hard.TrainN {
		t.Errorf("live loop: epochs %d, train-n %d; want 3 and its own %d", o.Hard.Epochs, o.Hard.TrainN, def.Hard.TrainN)
	}
}
