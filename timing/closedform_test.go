package timing

import (
	"github.com/neuronfabric/nfabric/timing/sim"

	"math"
	"testing"
)

// handConfig is the paper's anchor spelled out, so the hand-computed
// figures below do not move with DefaultConfig.
func handConfig() Config {
	return Config{
		Streams: StreamsConfig{Count: 8, Outstanding: 16, FootprintMiB: 2, Passes: 2, Pattern: "read"},
		LLC:     LLCConfig{SizeMiB: 8, Ways: 16, HitLatencyNS: 10},
		Link:    LinkConfig{BandwidthGiBps: 128, Share: 1},
		Memory:  MemoryConfig{LatencyNS: 200},
		Controller: ControllerConfig{Stacks: 1, InterleaveBytes: 64, Stages: 5, ClockGHz: 2,
			InitiationCycles: 1},
	}
}

func TestClosedFormsHand(t *testing.T) {
	c := handConfig()
	// One 64 B line at 2^37 B/s takes 64/2^37 s = 0.46566 ns.
	link := 64 / math.Exp2(37) * 1e9
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"base path ns", c.BasePathNS(), 210 + link},
		// 5 cycles x 0.5 ns over the base path.
		{"latency-bound 5 cycles %", c.LatencyBoundExposurePct(5), 100 * 2.5 / (210 + link)},
		{"latency-bound 20 cycles %", c.LatencyBoundExposurePct(20), 100 * 10 / (210 + link)},
		// 2.5 ns is 1.11% of 225.2 ns.
		{"base path for 1.11% ns", c.BasePathForExposureNS(1.11), 2.5 / 0.0111},
		// 128 lines in flight: g = 210 ns / 127 per line, 64 B per g.
		{"saturation GiB/s", c.SaturationBandwidthGiBps(), 64 / (210e-9 / 127) / math.Exp2(30)},
		{"pipeline GB/s", c.PipelineRateGBps(), 128},
		{"shared link GiB/s", c.SharedLinkGiBps(), 128},
		{"in flight", float64(c.InFlight()), 128},
		{"fixed path ns", c.FixedPathNS(), 10 + link},
		{"link interval ns", c.LinkIntervalNS(), link},
	} {
		if math.Abs(tc.got-tc.want) > 1e-9*math.Max(1, math.Abs(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	one := c
	one.Streams.Count, one.Streams.Outstanding = 1, 1
	if got := one.SaturationBandwidthGiBps(); got != 0 {
		t.Errorf("one line in flight saturates below %v GiB/s, want 0", got)
	}
}

// With one line in flight nothing queues, so the simulator's exposure is
// the latency-bound closed form.
func TestLatencyBoundMatchesSimulator(t *testing.T) {
	c := handConfig()
	c.Streams.Count, c.Streams.Outstanding, c.Streams.FootprintMiB, c.Streams.Passes = 1, 1, 0.25, 1
	p, err := RunPair(c, Sweep{})
	if err != nil {
		t.Fatal(err)
	}
	want := c.LatencyBoundExposurePct(c.Controller.Stages)
	if math.Abs(p.OverheadPct-want) > 0.02*want {
		t.Errorf("simulated %.4f%%, closed form %.4f%%", p.OverheadPct, want)
	}
	if r := p.Identity; r.HitRate() != 0 || r.MeanQueueWaitNS() > 1e-3 {
		t.Errorf("hit rate %v, queue wait %v ns: not latency-bound", r.HitRate(), r.MeanQueueWaitNS())
	}
}

func TestDerivedHand(t *testing.T) {
	r := Result{Lines: 4 << 14, Hits: 3, Misses: 1, ControllerReads: 4, LowBitReads: 2,
		PipeWait: 4 * sim.Nanosecond, LinkWait: 8 * sim.Nanosecond}
	if r.HitRate() != 0.75 || r.MeanQueueWaitNS() != 3 || r.PipeWaitPerLowBitReadNS() != 2 || r.FootprintMiB(2) != 2 {
		t.Errorf("%v %v %v %v", r.HitRate(), r.MeanQueueWaitNS(), r.PipeWaitPerLowBitReadNS(), r.FootprintMiB(2))
	}
	if (Result{}).HitRate() != 0 || (Result{}).MeanQueueWaitNS() != 0 {
		t.Error("empty result: nonzero rates")
	}
}

// TestAnchorExposure checks the simulated anchor against the closed form,
// a different code path: at the full-LLC-miss anchor every read pays the
// base path and the five 2 GHz stages add 2.5 ns to it, so the exposed
// fraction is about LatencyBoundExposurePct/100 (2.5 / 210.47 ns =
// 1.19%), a fraction and not a percentage, within the paper's 2% budget.
func TestAnchorExposure(t *testing.T) {
	e, err := AnchorExposure()
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	want := c.LatencyBoundExposurePct(c.Controller.Stages) / 100
	if math.Abs(e-want) > 0.02*want || !(e > 0 && e < 0.02) {
		t.Errorf("anchor exposure %v, closed form %v", e, want)
	}
}
