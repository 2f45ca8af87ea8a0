package experiments

import (
	"math"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/hw"
)

// TestEveryUnitHasACost: at the quick and standard tiers every unit of
// every block has an estimate (a renamed unit, a new block or a workload
// without coefficients shows here: measure it, see costs.go), and the
// units differ in cost by more than a factor of 1000 (what the deal by
// cost is for).
func TestEveryUnitHasACost(t *testing.T) {
	for _, tier := range []run.Tier{run.TierQuick, run.TierStandard} {
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for _, b := range run.Blocks() {
			us, err := b.Units(run.Config{Tier: tier, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range us {
				if u.Cost <= 0 {
					t.Errorf("%s: %s/%s has no cost estimate", tier, u.Block, u.Key)
				}
				lo, hi = min(lo, u.Cost), max(hi, u.Cost)
			}
		}
		if lo <= 0 || hi/lo < 1000 {
			t.Errorf("%s: unit costs from %v to %v", tier, lo, hi)
		}
	}
}

// TestTrainCostByHand: a standard boundary run, 16 epochs of 40 steps
// (5,000 images, batch 128) and 2,000 validated images, costs
// 1.34 x 16 x (40 x 0.1328 + 2000 x 0.0002616) = 125.1 CPU-seconds;
// a workload no benchmark covers costs 0.
func TestTrainCostByHand(t *testing.T) {
	o := BoundaryOptions(run.TierStandard, 1)
	want := 1.34 * 16 * (40*0.1328 + 2000*0.0002616)
	if got := trainCost(o, loopBoundary).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("standard boundary run: %.3f CPU-s, want %.3f", got, want)
	}
	o.Model = "resnet18"
	if got := trainCost(o, loopBoundary); got != 0 {
		t.Errorf("an unmeasured workload costs %v", got)
	}
	if got, want := hwCost("pnr/ecp5", hw.Config{Width: 64}).Seconds(), 43.4*math.Pow(0.125, 1.17); math.Abs(got-want) > 1e-6 {
		t.Errorf("64-bit ECP5 route: %.3f, want %.3f", got, want)
	}
	if got := functionalCost(functionalFull).Seconds(); math.Abs(got-(1.8*8+0.3*16)) > 1e-9 {
		t.Errorf("full functional tester: %.2f", got)
	}
	// The standard formats pilot: 2 epochs of warm-up and 16 of the
	// boundary budget, 1.22 x 18 x (40 x 0.1328 + 2000 x 0.0002616) + 15
	// = 143.1 CPU-seconds, what it measured.
	us, err := formatsUnits(run.Config{Tier: run.TierStandard, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want = 1.22*18*(40*0.1328+2000*0.0002616) + 15
	pilots := 0
	for _, u := range us {
		if u.Key == "pilot" {
			pilots++
			if math.Abs(u.Cost.Seconds()-want) > 1e-6 {
				t.Errorf("standard formats pilot: %.3f CPU-s, want %.3f", u.Cost.Seconds(), want)
			}
		}
	}
	if pilots != 1 {
		t.Errorf("%d formats pilot units at the standard tier, want 1", pilots)
	}
}
