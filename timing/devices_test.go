package timing

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// isolated is cfg reduced to one read of one line on an idle system.
func isolated(cfg Config) Config {
	cfg.Streams.Count, cfg.Streams.Outstanding, cfg.Streams.Passes = 1, 1, 1
	cfg.Streams.FootprintMiB = float64(LineBytes) / (1 << 20)
	return cfg
}

// TestIdleReadIsSimulated: the closed form of the stages (IdleRead)
// equals the simulated read of one line on an idle system to the
// picosecond, for every preset and for the mixed models (the ideal memory
// behind a device's link, a DRAM behind the paper's gate, a shared link,
// the low-bit datapath).
func TestIdleReadIsSimulated(t *testing.T) {
	var cases []Config
	for _, n := range Presets() {
		c, err := PresetConfig(n)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
		if n == PresetIdeal {
			continue
		}
		m := c
		m.Memory.Model, m.Link.Model = MemoryIdeal, LinkCXL
		g := c
		g.Link.Model = LinkGate
		s := c
		s.Link.Share = 0.3
		cases = append(cases, m, g, s)
	}
	for _, c := range cases {
		c = isolated(c)
		name := fmt.Sprintf("%s/memory %s/link %s share %g", c.Device.Preset, c.Memory.Model, c.LinkModel(), c.Link.Share)
		for _, w := range []Window{None, All} {
			r, err := Simulate(c, nil, w)
			if err != nil {
				t.Fatal(err)
			}
			want := c.IdleRead()
			if w == All {
				want += c.PipelineLatency()
			}
			if r.RunTime != want {
				t.Errorf("%s, low-bit %v: simulated %v, closed form %v", name, w == All, r.RunTime, want)
			}
		}
	}
}

// saturation is the closed form of a device's peak read bandwidth, in
// GB/s: the least of the link's read-response line rate, the DRAM's peak
// and what the response queue lets through (Little's law: ResponseQueue
// lines held from the host's send until the response has left and its
// credit is back, the idle read's device part).
func saturation(c Config) (gbps float64, bound string) {
	d := c.Device
	link := d.Link.LineGiBps(c.Link.Share) * (1 << 30) / 1e9
	mem := d.Media.PeakGBps()
	held := c.IdleRead() - sim.FromNS(c.LLC.HitLatencyNS) - 2*d.HostOneWay() + sim.FromNS(d.Link.PortLatencyNS)
	queue := float64(d.ResponseQueue) * LineBytes / (float64(held) * 1e-12) / 1e9
	switch {
	case link <= mem && link <= queue:
		return link, "link"
	case mem <= queue:
		return mem, "DRAM"
	}
	return queue, "response queue"
}

// TestDevicePresets is the table test of the silicon presets against
// their published anchors (cxldev.Devices names each source):
//
//   - the idle read (IdleRead, equal to the simulated one by
//     TestIdleReadIsSimulated) lies within 5% of the published idle
//     latency;
//   - a calibrated parameter is what its anchor gives: the ASIC's host
//     fabric is the published idle read less the other stages, halved
//     (within one DRAM clock of the stored value);
//   - the delivered read bandwidth at saturation (8 streams x 64 reads in
//     flight) lies within 10% of the published figure or band, and within
//     10% of the closed form of what bounds it (saturation);
//   - the loaded-latency curve rises with the load and turns where
//     Little's law and that bound put it: at a quarter of the knee's
//     in-flight count N* = peak x idle read / 64 B the mean latency is
//     within 20% of the idle read (refresh and queueing included), and at
//     twice N* the latency is in-flight x 64 B / delivered bandwidth.
//
// Adding a device preset adds its row here through cxldev.Devices.
func TestDevicePresets(t *testing.T) {
	for _, p := range cxldev.Devices() {
		if p.Class == "projection" {
			continue
		}
		name := p.Config.Preset
		t.Run(name, func(t *testing.T) {
			c, err := PresetConfig(name)
			if err != nil {
				t.Fatal(err)
			}
			idle := c.IdleRead().NS()
			if e := idle/p.IdleNS - 1; math.Abs(e) > 0.05 {
				t.Errorf("idle read %.1f ns, %+.1f%% from the published %.1f ns", idle, 100*e, p.IdleNS)
			}
			for _, q := range p.Parameters {
				if q.Calibrated && q.Key == "host.fabric_ns" {
					z := c
					z.Device.Host.FabricNS = 0
					want := (p.IdleNS - z.IdleRead().NS()) / 2
					if math.Abs(want-c.Device.Host.FabricNS) > c.Device.Media.Clock().NS()/2 {
						t.Errorf("host.fabric_ns %g; the idle read %.1f ns gives %.3f", c.Device.Host.FabricNS, p.IdleNS, want)
					}
				}
			}
			c.Streams.FootprintMiB, c.LLC.SizeMiB = 0.25, 1
			outs := []int{1, 2, 4, 8, 16, 32, 64}
			pts, err := RunLoadedLatency(context.Background(), c, outs)
			if err != nil {
				t.Fatal(err)
			}
			peak, bound := saturation(c)
			knee := peak * 1e9 * idle * 1e-9 / LineBytes
			var prev float64
			for _, pt := range pts {
				if pt.Mode != "identity" {
					continue
				}
				gbps := pt.DeliveredGiBps * (1 << 30) / 1e9
				n := float64(c.Streams.Count * pt.Outstanding)
				if pt.Latency.MeanNS < prev*0.99 {
					t.Errorf("%g in flight: mean latency %.1f ns fell from %.1f", n, pt.Latency.MeanNS, prev)
				}
				prev = pt.Latency.MeanNS
				if n <= knee/4 && pt.Latency.MeanNS > 1.2*idle {
					t.Errorf("%g in flight (knee %.0f): mean %.1f ns, above the idle %.1f by more than 20%%", n, knee, pt.Latency.MeanNS, idle)
				}
				if n >= 2*knee {
					little := n * LineBytes / (gbps * 1e9) * 1e9
					if math.Abs(pt.Latency.MeanNS/little-1) > 0.05 {
						t.Errorf("%g in flight: mean %.1f ns, Little's law %.1f ns at %.2f GB/s", n, pt.Latency.MeanNS, little, gbps)
					}
				}
				if pt.Outstanding != outs[len(outs)-1] {
					continue
				}
				if gbps < 0.9*p.ReadLoGBps || gbps > 1.1*p.ReadHiGBps {
					t.Errorf("saturated read %.2f GB/s, outside 10%% of the published %.1f-%.1f GB/s", gbps, p.ReadLoGBps, p.ReadHiGBps)
				}
				if math.Abs(gbps/peak-1) > 0.1 {
					t.Errorf("saturated read %.2f GB/s, the closed form (%s bound) %.2f GB/s", gbps, bound, peak)
				}
				if testing.Verbose() {
					t.Logf("idle %.1f ns (published %.1f); saturated %.2f GB/s (published %.1f-%.1f; %s bound %.2f); knee %.0f in flight",
						idle, p.IdleNS, gbps, p.ReadLoGBps, p.ReadHiGBps, bound, peak, knee)
				}
			}
		})
	}
}
