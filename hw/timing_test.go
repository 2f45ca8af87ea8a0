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

// TestTimingMatchesTimingModel ties the timing model to the RTL, for every
// datapath family: each sum datapath, simulated at 512 bits on two
// aggregates of W worker lines driven back to back, answers its last
// line's aggregate Latency edges later with an initiation interval of one
// line per clock, and the timing model's DatapathCycles for the mode is
// that measured latency, at the W simulated and at every W (the
// accumulator only widens); the paper's vote datapath answers a G-Binary
// line its five stages later, one line per clock, which is DatapathCycles
// of G-Binary at the paper's W = 8.
func TestTimingMatchesTimingModel(t *testing.T) {
	for _, m := range cxl.AllModes() {
		if !m.LowBit() {
			continue
		}
		d, err := hw.ModeDatapath(m)
		if err != nil {
			t.Fatal(err)
		}
		ws := []int{1, 8, 300}
		if d.Paper() {
			ws = []int{8}
		}
		for _, w := range ws {
			t.Run(m.String()+"/w"+strconv.Itoa(w), func(t *testing.T) {
				if err := hw.SimIcarus.Check(); err != nil {
					t.Skipf("skipping: %v", err)
				}
				width := 512
				if w > 8 {
					width = 64 // saturating sums, kept small for the simulator
				}
				c := hw.Config{Width: width, Datapath: d}
				if !d.Paper() {
					c.Workers = w
				}
				got, err := hw.MeasureTiming(context.Background(), c, hw.SimIcarus, "")
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
		if d.Paper() {
			continue
		}
		for w := 1; w <= 1024; w *= 2 {
			if k, _ := timing.DatapathCycles(m, w); k != d.Depth() {
				t.Errorf("%v at W=%d: timing %d cycles, hw depth %d", m, w, k, d.Depth())
			}
		}
	}
	for _, m := range []cxl.Mode{cxl.Identity, cxl.FP32Bypass} {
		if d, err := hw.ModeDatapath(m); err == nil {
			t.Errorf("%v enters datapath %v", m, d)
		}
	}
	if d, err := hw.ModeDatapath(cxl.Aggregate(lowbit.Ternary)); err != nil || d != hw.Vote {
		t.Errorf("G-Ternary runs on %v, %v; want the vote datapath", d, err)
	}
}
