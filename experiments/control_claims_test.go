package experiments

import (
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/train"
)

// pilotRuns makes one scenario's runs: seed s+1 ends at finals[s] (a
// fraction) after a curve that is flat at that value over 8 epochs, or
// rising 3 points an epoch when rising is set.
func pilotRuns(sc pilot.Scenario, finals []float64, rising bool) scenarioRuns {
	sr := scenarioRuns{scenario: sc}
	for s, f := range finals {
		r := &pilot.Result{Scenario: sc.String(), Seed: uint64(s + 1), Final: f}
		for e := range 8 {
			acc := f
			if rising {
				acc = f - 0.03*float64(7-e)
			}
			r.Epochs = append(r.Epochs, pilot.EpochStat{Epoch: e + 1, ValAcc: acc})
		}
		sr.runs = append(sr.runs, r)
	}
	return sr
}

// TestEndpointClaimPaired checks the endpoint verdict on hand-made paired
// seeds. G-Binary-default minus the lower reference: a mean of +0.5 with a
// spread of 0.1 lies far above -2 (holds); 5 points below both lies wholly
// below -2 (does not hold); differences of -1, -4, 0, -3, -2 (mean -2,
// sd 1.58, half-width t_{.975,4} 1.58/sqrt 5 * 2.776 = 1.96) straddle -2
// (inconclusive); a rising FP32 reference makes any verdict indicative.
func TestEndpointClaimPaired(t *testing.T) {
	fp := []float64{0.80, 0.82, 0.78, 0.81, 0.79}
	gb := []float64{0.70, 0.72, 0.69, 0.71, 0.70}
	o := PilotDefaults(run.TierStandard, 1)
	for _, c := range []struct {
		name   string
		gd     []float64
		rising bool
		want   string
	}{
		{"between", []float64{0.705, 0.726, 0.694, 0.715, 0.705}, false, report.VerdictHolds},
		{"far below", []float64{0.65, 0.67, 0.64, 0.66, 0.65}, false, report.VerdictDoesNotHold},
		{"straddles", []float64{0.69, 0.68, 0.69, 0.68, 0.68}, false, report.VerdictInconclusive},
		{"not converged", []float64{0.705, 0.726, 0.694, 0.715, 0.705}, true, report.VerdictIndicative},
	} {
		gd := c.gd
		if c.name == "straddles" {
			// Differences to G-Binary: -1, -4, 0, -3, -2 points.
			gd = []float64{gb[0] - 0.01, gb[1] - 0.04, gb[2], gb[3] - 0.03, gb[4] - 0.02}
		}
		by := map[pilot.Scenario]scenarioRuns{
			pilot.AlwaysFP32:     pilotRuns(pilot.AlwaysFP32, fp, c.rising),
			pilot.AlwaysGBinary:  pilotRuns(pilot.AlwaysGBinary, gb, false),
			pilot.GBinaryDefault: pilotRuns(pilot.GBinaryDefault, gd, false),
		}
		cl := o.endpointClaim(by)
		if got := cl.verdict(); got != c.want {
			t.Errorf("%s: verdict %q (%s), want %q", c.name, got, cl.ours, c.want)
		}
		if cl.judged == nil || strings.Count(cl.judged.Interval, "paired t, n = 5") != 2 {
			t.Errorf("%s: %+v does not carry both intervals with their method and n", c.name, cl.judged)
		}
	}
	// One seed: no paired interval, inconclusive as before.
	by := map[pilot.Scenario]scenarioRuns{
		pilot.AlwaysFP32:     pilotRuns(pilot.AlwaysFP32, fp[:1], false),
		pilot.AlwaysGBinary:  pilotRuns(pilot.AlwaysGBinary, gb[:1], false),
		pilot.GBinaryDefault: pilotRuns(pilot.GBinaryDefault, fp[:1], false),
	}
	if cl := o.endpointClaim(by); cl.verdict() != report.VerdictInconclusive || cl.judged != nil {
		t.Errorf("one seed: %q, judged %+v", cl.verdict(), cl.judged)
	}
}

// TestLiveClaimsOverSeeds: the backbone claim holds only when every seed
// settles on G-Ternary.
func TestLiveClaimsOverSeeds(t *testing.T) {
	live := func(modes ...string) []*PilotRun {
		var out []*PilotRun
		for _, m := range modes {
			var s train.PerGroup[string]
			s[nn.Backbone], s[nn.Head] = m, "fp32-bypass"
			out = append(out, &PilotRun{Part: PartLiveLoop, Result: pilot.Result{Settled: s}})
		}
		return out
	}
	cs := liveClaims(live("g-ternary", "g-ternary", "g-binary"))
	if cs[0].verdict() != report.VerdictDoesNotHold || cs[0].ours != "2 of 3 seeds (g-binary 1, g-ternary 2)" {
		t.Errorf("backbone: %q %q", cs[0].verdict(), cs[0].ours)
	}
	if cs[1].verdict() != report.VerdictHolds {
		t.Errorf("head: %q %q", cs[1].verdict(), cs[1].ours)
	}
	if cs = liveClaims(live("g-ternary", "g-ternary")); cs[0].verdict() != report.VerdictHolds {
		t.Errorf("all g-ternary: %q", cs[0].verdict())
	}
}

// TestPilotTiers: the standard tier runs StandardPilotSeeds of every pilot
// and the live loop, at the quick pilots' size, the Fig. 6 pilot for
// StandardPilotEpochs.
func TestPilotTiers(t *testing.T) {
	q, s := PilotDefaults(run.TierQuick, 1), PilotDefaults(run.TierStandard, 1)
	if q.Train.Seeds != 1 || q.Hard.Seeds != 1 || s.Train.Seeds != StandardPilotSeeds || s.Hard.Seeds != StandardPilotSeeds {
		t.Fatalf("seeds: quick %d/%d, standard %d/%d", q.Train.Seeds, q.Hard.Seeds, s.Train.Seeds, s.Hard.Seeds)
	}
	if s.Train.TrainN != q.Train.TrainN || s.Train.Epochs != StandardPilotEpochs || s.Hard.Epochs != q.Hard.Epochs {
		t.Errorf("standard pilot size %d x %d (live %d), want %d x %d (live %d)", s.Train.TrainN, s.Train.Epochs, s.Hard.Epochs, q.Train.TrainN, StandardPilotEpochs, q.Hard.Epochs)
	}
	us, err := s.Units()
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, u := range us {
		if strings.HasPrefix(u.Key, PartLiveLoop) {
			live++
		}
	}
	if live != StandardPilotSeeds {
		t.Errorf("%d live-loop units, want %d", live, StandardPilotSeeds)
	}
}
