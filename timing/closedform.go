package timing

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Closed forms of the model, used to explain its measured figures (the
// Table 4 and Fig. 3 notes) and tested against the simulator.

// BasePathNS is one controller read's unloaded path: LLC lookup + memory
// latency + one link interval, in ns.
func (c Config) BasePathNS() float64 {
	return c.LLC.HitLatencyNS + c.Memory.LatencyNS + c.LinkInterval()/1000
}

// LatencyBoundExposurePct is the exposure of a latency-bound run (no
// queueing to overlap the datapath, T_overlap = 0) whose datapath has the
// given depth: stages x cycle / (LLC lookup + memory latency + one link
// interval), in percent.
func (c Config) LatencyBoundExposurePct(stages int) float64 {
	return 100 * float64(stages) * float64(c.Cycle()) / (1000*(c.LLC.HitLatencyNS+c.Memory.LatencyNS) + c.LinkInterval())
}

// BasePathForExposureNS inverts the latency-bound form: the base path (ns)
// at which this model's datapath would expose pct percent.
func (c Config) BasePathForExposureNS(pct float64) float64 {
	return c.PipelineLatency().NS() / (pct / 100)
}

// SaturationBandwidthGiBps is the per-stack link bandwidth (GiB/s) below
// which the W x Outstanding lines in flight keep one link busy: the link
// interval g at which W*L*g = lookup + memory + g. It is 0 with at most one
// line in flight.
func (c Config) SaturationBandwidthGiBps() float64 {
	inflight := float64(c.Streams.Count * c.Streams.Outstanding)
	if inflight <= 1 {
		return 0
	}
	g := (c.LLC.HitLatencyNS + c.Memory.LatencyNS) * 1e-9 / (inflight - 1)
	return LineBytes / g / (1 << 30)
}

// InFlight is the number of lines the streams keep outstanding: W x L.
func (c Config) InFlight() int { return c.Streams.Count * c.Streams.Outstanding }

// SharedLinkGiBps is the link bandwidth one stack's own traffic gets:
// bandwidth x share.
func (c Config) SharedLinkGiBps() float64 { return c.Link.BandwidthGiBps * c.Link.Share }

// PipelineRateGBps is the datapath's own rate: one 64 B line per
// initiation interval, in GB/s.
func (c Config) PipelineRateGBps() float64 {
	return LineBytes / (float64(max(1, c.Controller.InitiationCycles)) * float64(c.Cycle()) * 1e-3)
}

// DepthSeries names a Fig. 3 line by its datapath depth: "5 cycles".
func DepthSeries(stages int) string { return fmt.Sprintf("%d cycles", stages) }

// FixedPathNS is the part of a controller read's path that does not
// depend on the memory latency: LLC lookup + one link interval, in ns.
func (c Config) FixedPathNS() float64 { return c.LLC.HitLatencyNS + c.LinkInterval()/1000 }

// LinkIntervalNS is one line's interval on a stack's link, in ns.
func (c Config) LinkIntervalNS() float64 { return c.LinkInterval() / 1000 }

// IdleRead returns one identity read's latency on an idle system, stage
// by stage: the LLC lookup, then under the detailed models the host
// stages, the request's flits on an idle link and the port, the device's
// protocol stage, the memory (the fixed latency, or under dram an
// activate on the first clock edge of the arrival, tRCD + tCL + the
// burst, and the front end), the protocol stage again, the response's
// flits and port and the host stages back; under the ideal stack the
// memory and one gate interval. A low-bit read adds PipelineLatency. The
// first read of a run takes exactly this (TestIdleReadIsSimulated).
func (c Config) IdleRead() sim.Time {
	t := sim.FromNS(c.LLC.HitLatencyNS)
	if !c.Detailed() {
		return t + sim.FromNS(c.Memory.LatencyNS) + c.gateInterval()
	}
	d := c.Device
	host, proto := d.HostOneWay(), sim.FromNS(d.ProtocolNS)
	cxl := c.LinkModel() == LinkCXL
	flits := func(t sim.Time, m cxldev.Msg) sim.Time {
		if !cxl {
			return t
		}
		fs := int64(t)*1000 + int64(d.Link.IdleFlits(m))*d.Link.FlitFS(c.Link.Share)
		return sim.Time((fs+999)/1000) + sim.FromNS(d.Link.PortLatencyNS)
	}
	t = flits(t+host, cxldev.M2SReq) + proto
	if c.Memory.Model == MemoryDRAM {
		m := d.Media
		ck := m.Clock()
		t = (t+ck-1)/ck*ck + m.RowMissRead() + sim.FromNS(m.FrontendNS)
	} else {
		t += sim.FromNS(c.Memory.LatencyNS)
	}
	t += proto
	if !cxl {
		t += c.gateInterval()
	}
	return flits(t, cxldev.S2MDRS) + host
}

// gateInterval is one line's time through an idle gate: 64 B over the
// gate's bandwidth, rounded to the nearest picosecond.
func (c Config) gateInterval() sim.Time {
	return sim.Time(math.Round(c.LinkInterval()))
}
