package collective

import (
	"math"
	"testing"
)

// Hand computation: 1.5e9 elements at 1 bit = 187,500,000 B = 2,929,687.5
// lines -> 2,929,688 lines of 64 B, written and read at 2^37 B/s, times
// (1 + e); the CXL rows add 2 x 200 ns of latency, also scaled by (1 + e)
// when aggregating. The ring is 2(n-1) alpha + 2(n-1)/n S/B on IB.
func TestPathsHand(t *testing.T) {
	const e = 0.02
	cxl, _ := LookupLink("cxl", nil)
	ib, _ := LookupLink("ib", nil)
	nv, _ := LookupLink("nvlink", nil)
	ts, err := Paths{Elements: 1_500_000_000, Workers: 8, Net: ib, Intra: nv, PerNode: 4, CXL: cxl, Exposure: e}.Times()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		PathGBinary:           2*2929688*64/math.Exp2(37)*(1+e) + 400e-9*(1+e),
		PathFP32Pooling:       2*6e9/math.Exp2(37) + 400e-9,
		"FP32 NCCL/RDMA ring": 14*5e-6 + 1.75*6e9/25e9,
		// 1.58 bits: ceil(1.5e9 x 1.58 / 8 / 64) lines.
		PathGTernaryPaper: 2*math.Ceil(1.5e9*1.58/8/64)*64/math.Exp2(37)*(1+e) + 400e-9*(1+e),
	}
	fams := map[string]int{}
	for _, p := range ts {
		fams[p.Family]++
		if p.Traffic != p.Bits/32 || p.Controller != (p.Route == "cxl") {
			t.Errorf("%s: traffic %g for %g bits, controller %v on %s", p.Path, p.Traffic, p.Bits, p.Controller, p.Route)
		}
		// Every row's algbw is against the FP32 gradient (6e9 B), the
		// buffer the table's paths replace, whatever the path moves.
		if got := p.Estimate.AlgBW * p.Estimate.Seconds; math.Abs(got-6e9) > 1 {
			t.Errorf("%s: algbw x time = %.0f B; want the FP32 gradient's 6e9", p.Path, got)
		}
		w, ok := want[p.Path]
		if !ok {
			continue
		}
		delete(want, p.Path)
		if math.Abs(p.Estimate.Seconds-w) > 1e-12 {
			t.Errorf("%s: %.9f s; want %.9f", p.Path, p.Estimate.Seconds, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("paths missing: %v", want)
	}
	// 8 workers, 4 per node: the hierarchical row applies.
	if fams[FamilyFP32] != 5 || fams[FamilySoftwareSign] != 2 || fams[FamilyFabric] != 3 {
		t.Errorf("families %v", fams)
	}
	if _, err := (Paths{Workers: 0, Net: ib, CXL: cxl}).Times(); err == nil {
		t.Error("0 workers accepted")
	}
}

func TestExposedCycles(t *testing.T) {
	// A 100 ms window at 1.67% exposure on a 2 GHz clock: 3.34M cycles.
	if got := ExposedCycles(0.1, 0.0167, 2e9); math.Abs(got-3.34e6) > 1e-6 {
		t.Errorf("got %v", got)
	}
}
