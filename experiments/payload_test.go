package experiments

import (
	"context"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
)

// TestPayloadUnits runs the payload block's units and checks the typed
// results against the paper's Sec. 2 example computed by hand: each byte
// holds six positive workers of eight, so c = 6, a = 4, u = +1, and the
// 2-of-3 gate zeroes flat index 2.
func TestPayloadUnits(t *testing.T) {
	us, err := payloadUnits(run.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var res []PayloadUnit
	for _, u := range us {
		if keys[u.Key] {
			t.Errorf("duplicate unit key %s", u.Key)
		}
		keys[u.Key] = true
		r, err := u.Run(context.Background(), run.Config{Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", u.Key, err)
		}
		res = append(res, r)
	}
	ex := res[0].Example
	if ex == nil || !slices.Equal(ex.Counts, []int{6, 6, 6}) || !slices.Equal(ex.Binary, []int{1, 1, 1}) || !slices.Equal(ex.Ternary, []int{1, 1, 0}) {
		t.Errorf("example = %+v, want counts 6 6 6, G-Binary +1 +1 +1, G-Ternary +1 +1 0", ex)
	}
	checks := 0
	for _, r := range res {
		if c := r.Check; c != nil {
			checks++
			if c.Mismatches != 0 || c.Elements == 0 {
				t.Errorf("cross-check %+v", *c)
			}
		}
	}
	if checks != len(payloadSpecs()) || checks != 5*4 {
		t.Errorf("%d cross-checks, want 20 (5 layout x worker cases x 4 formats/gates)", checks)
	}
	bits := res[len(res)-1].Bits
	if len(bits) != 5 || bits[1].Ratio != 1.0/32 || bits[0].Ratio != 1 {
		t.Errorf("bits = %+v", bits)
	}
	l := PayloadLayout(res)
	if l.Passed != 20 || l.Failed != 0 {
		t.Errorf("layout: %d passed, %d failed", l.Passed, l.Failed)
	}
}
