package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
)

func TestFunctionalBlock(t *testing.T) {
	vr, err := RunFunctional(context.Background(), FunctionalParams{Lines: 2000, Workers: 8, Sweeps: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if vr.Failed != 0 || vr.Passed == 0 {
		t.Fatalf("%d passed, %d failed", vr.Passed, vr.Failed)
	}
	if len(vr.Rows) != len(cxl.Modes()) {
		t.Fatalf("%d mode rows, want Table 2's %d", len(vr.Rows), len(cxl.Modes()))
	}
	// Beside the paper's modes the block checks the integer-sum ones.
	sum := map[string]bool{}
	for _, c := range vr.Checks {
		if c.Group == "sum" && c.Passed && c.Lines > 0 {
			sum[c.Mode] = true
		}
	}
	if !sum[cxl.Aggregate(lowbit.Int8).String()] || !sum[cxl.Aggregate(lowbit.BFP8).String()] {
		t.Errorf("integer-sum checks passed for %v, want int8 and bfp8", sum)
	}
	for _, r := range vr.Rows {
		m, err := cxl.ParseMode(r.Mode)
		if err != nil {
			t.Fatal(err)
		}
		// Sec. 6: the naive read-equals-write oracle is right for the
		// untransformed modes and flags the transformed ones.
		transformed := m == cxl.Aggregate(lowbit.Binary) || m == cxl.Aggregate(lowbit.Ternary)
		if !r.Match || r.Mismatches != 0 || transformed != (r.NaiveFlagged > 0) {
			t.Errorf("row %+v", r)
		}
	}
	res := FunctionalLayout(vr)
	if res.Passed != vr.Passed || res.Failed != vr.Failed || !strings.HasPrefix(res.Tables[0].Columns[5], "paper") {
		t.Errorf("layout: %d/%d checks, columns %v", res.Passed, res.Failed, res.Tables[0].Columns)
	}
	var found bool
	for _, b := range run.Blocks() {
		found = found || (b.Name == "functional" && b.Order == 10)
	}
	if !found {
		t.Error("functional block not registered at order 10")
	}
	if _, err := RunFunctional(context.Background(), FunctionalParams{Lines: 10, Workers: 9}); err == nil {
		t.Error("9 workers accepted")
	}
}
