package timing

import (
	"math"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TestDatapathCycles checks the structural depth against cases counted by
// hand from the stage list in DatapathCycles' comment.
func TestDatapathCycles(t *testing.T) {
	for _, tc := range []struct {
		m    cxl.Mode
		w    int
		want int
	}{
		{cxl.Identity, 8, 0},
		{cxl.FP32Bypass, 8, 0},
		{cxl.Aggregate(lowbit.Binary), 8, 5},  // 3 tree levels: one cycle
		{cxl.Aggregate(lowbit.Ternary), 8, 5}, //
		{cxl.Aggregate(lowbit.Binary), 1, 5},  // a one-input tree still takes its stage
		{cxl.Aggregate(lowbit.Binary), 9, 6},  // 4 levels: two cycles
		{cxl.Aggregate(lowbit.Int8), 8, 3},    // input | accumulate | saturate
		{cxl.Aggregate(lowbit.Int8), 1, 3},    // a streaming accumulator: w only widens it
		{cxl.Aggregate(lowbit.Int8), 1024, 3}, //
		{cxl.Aggregate(lowbit.BFP8), 8, 5},    // input | round | shift | accumulate | saturate
		{cxl.Aggregate(lowbit.BFP8), 1024, 5},
	} {
		got, err := DatapathCycles(tc.m, tc.w)
		if err != nil || got != tc.want {
			t.Errorf("DatapathCycles(%v, %d) = %d, %v; want %d", tc.m, tc.w, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		m cxl.Mode
		w int
	}{{cxl.Aggregate(lowbit.Binary), 0}, {cxl.Aggregate(lowbit.Int8), 1025}, {cxl.Mode(cxl.NumModes), 8}} {
		if _, err := DatapathCycles(bad.m, bad.w); err == nil {
			t.Errorf("DatapathCycles(%v, %d) succeeded", bad.m, bad.w)
		}
	}
	// The paper's W = 8 G-Binary depth is the configured five stages.
	if k, _ := DatapathCycles(cxl.Aggregate(lowbit.Binary), DefaultConfig().Streams.Count); k != DefaultConfig().Controller.Stages {
		t.Errorf("G-Binary at the paper's W: %d cycles, the paper's configuration has %d", k, DefaultConfig().Controller.Stages)
	}
}

// TestTreeCycles compares treeCycles with the levels a pairwise tree
// takes, counted by halving.
func TestTreeCycles(t *testing.T) {
	for w := 1; w <= 1024; w++ {
		levels := 0
		for n := w; n > 1; n = (n + 1) / 2 {
			levels++
		}
		want := max(1, int(math.Ceil(float64(levels)/TreeLevelsPerCycle)))
		if got := treeCycles(w); got != want {
			t.Fatalf("treeCycles(%d) = %d, want %d (%d levels)", w, got, want, levels)
		}
	}
}

// TestModeExposureLatencyBound: with one line in flight nothing queues,
// so each mode's simulated exposure is the latency-bound closed form of
// its own depth.
func TestModeExposureLatencyBound(t *testing.T) {
	c := handConfig()
	c.Streams.Count, c.Streams.Outstanding, c.Streams.FootprintMiB, c.Streams.Passes = 1, 1, 0.25, 1
	for _, m := range cxl.AllModes() {
		p, err := ModeExposure(c, m)
		if !m.LowBit() {
			if err == nil {
				t.Errorf("%v: exposure without a datapath succeeded", m)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		k, _ := DatapathCycles(m, 1)
		if want := c.LatencyBoundExposurePct(k); math.Abs(p.OverheadPct-want) > 0.02*want {
			t.Errorf("%v: simulated %.4f%%, closed form of %d cycles %.4f%%", m, p.OverheadPct, k, want)
		}
	}
}

// TestModeAnchorExposure: at Table 4's anchor G-Binary's derived depth
// gives AnchorExposure's figure (the fixed five stages, another path), and
// the exposure follows the depth: INT8 (3) below BFP8, whose depth
// (5) is G-Binary's and so is its exposure.
func TestModeAnchorExposure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the anchor pair")
	}
	anchor, err := AnchorExposure()
	if err != nil {
		t.Fatal(err)
	}
	got := map[cxl.Mode]float64{}
	for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Int8), cxl.Aggregate(lowbit.BFP8)} {
		if got[m], err = ModeAnchorExposure(m); err != nil {
			t.Fatal(err)
		}
	}
	if got[cxl.Aggregate(lowbit.Binary)] != anchor || !(got[cxl.Aggregate(lowbit.Int8)] < got[cxl.Aggregate(lowbit.BFP8)]) || got[cxl.Aggregate(lowbit.BFP8)] != anchor {
		t.Errorf("anchor %v, modes %v", anchor, got)
	}
	t.Logf("anchor exposure: g-binary %.4f%%, int8 %.4f%%, bfp8 %.4f%%", 100*got[cxl.Aggregate(lowbit.Binary)], 100*got[cxl.Aggregate(lowbit.Int8)], 100*got[cxl.Aggregate(lowbit.BFP8)])
}
