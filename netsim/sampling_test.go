package netsim

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestSamplingLimit: an interval too fine for the run's length is refused
// by Plan (and Run) before ns-3 starts (--interval 1ns would end in
// std::bad_alloc inside ns-3). The bound is intervals x link
// directions <= MaxLinkSamples, by hand: a star of W hosts has 2W
// directions, a leaf-spine adds 2 x leaves x spines.
func TestSamplingLimit(t *testing.T) {
	tr, err := Trace("gpt2-xl", 0, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	c := smallConfig()
	sched, err := Plan(c, tr)
	if err != nil {
		t.Fatalf("default sampling: %v", err)
	}
	if got := c.linkDirections(); got != 8 {
		t.Errorf("star of 4: %d link directions, want 8", got)
	}
	ls := c
	ls.Topology, ls.Leaves, ls.Spines = LeafSpine, 2, 3
	if got := ls.linkDirections(); got != 8+12 {
		t.Errorf("leaf-spine 4 hosts, 2x3: %d link directions, want 20", got)
	}
	ivl, dur, err := c.sampling(sched)
	if err != nil || dur%ivl != 0 || dur < int64(c.Steps+1)*sched.StepNS || (dur/ivl)*c.linkDirections() > MaxLinkSamples {
		t.Errorf("default sampling: interval %d, duration %d, %v", ivl, dur, err)
	}
	// The finest interval the limit allows passes; one nanosecond less
	// than a whole interval count past it fails.
	span := int64(c.Steps+1) * sched.StepNS
	per := MaxLinkSamples / c.linkDirections()
	for _, tt := range []struct {
		ivl int64
		ok  bool
	}{{1, false}, {span/per + 1, true}, {span / (per + 1), false}} {
		c.IntervalNS = tt.ivl
		_, err := Plan(c, tr)
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "limit")) {
			t.Errorf("interval %d ns (span %d ns, %d intervals allowed): %v; want ok %v", tt.ivl, span, per, err, tt.ok)
		}
		if !tt.ok {
			if _, err := Run(context.Background(), c, sched); err == nil || !strings.Contains(err.Error(), "limit") {
				t.Errorf("Run with interval %d ns: %v; want the limit before ns-3 starts", tt.ivl, err)
			}
		}
	}
	c.IntervalNS = 0
	for _, steps := range []int{MaxSteps + 1, math.MaxInt32} {
		c.Steps = steps
		if _, err := Plan(c, tr); err == nil {
			t.Errorf("%d steps accepted", c.Steps)
		}
	}
}
