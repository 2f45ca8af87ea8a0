package hw_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing"
)

// TestSumTimingMatchesTimingModel ties the timing model to the RTL: each
// sum datapath, simulated at 512 bits on two aggregates of W worker lines
// driven back to back, answers its last line's aggregate Latency edges
// later with an initiation interval of one line per clock, and the timing
// model's DatapathCycles for the mode is that measured latency, at the W
// simulated and at every W (the accumulator only widens).
func TestSumTimingMatchesTimingModel(t *testing.T) {
	for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Int8), cxl.Aggregate(lowbit.BFP8)} {
		d, err := hw.ModeDatapath(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 8, 300} {
			t.Run(m.String()+"/w"+strconv.Itoa(w), func(t *testing.T) {
				if err := hw.SimIcarus.Check(); err != nil {
					t.Skipf("skipping: %v", err)
				}
				width := 512
				if w > 8 {
					width = 64 // saturating sums, kept small for the simulator
				}
				got, err := hw.MeasureSumTiming(context.Background(), hw.Config{Width: width, Datapath: d, Workers: w}, hw.SimIcarus, "")
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%v at %d bits, W=%d: latency %d, interval %d line/clock", m, width, w, got.Latency, got.Interval)
				k, err := timing.DatapathCycles(m, w)
				if err != nil {
					t.Fatal(err)
				}
				if got.Interval != 1 || got.Latency != k {
					t.Errorf("RTL latency %d, interval %d; timing model %d cycles (interval 1)", got.Latency, got.Interval, k)
				}
			})
		}
		for w := 1; w <= 1024; w *= 2 {
			if k, _ := timing.DatapathCycles(m, w); k != d.Depth() {
				t.Errorf("%v at W=%d: timing %d cycles, hw depth %d", m, w, k, d.Depth())
			}
		}
	}
	if _, err := hw.ModeDatapath(cxl.Aggregate(lowbit.Binary)); err == nil {
		t.Error("G-Binary has a sum datapath")
	}
}
