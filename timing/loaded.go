package timing

import (
	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/sim"

	"context"
	"fmt"
)

// LoadPoint is one point of the loaded-latency curve: the controller-read
// latency against the line bandwidth delivered, at one offered load.
type LoadPoint struct {
	// Mode is "identity" or "lowbit".
	Mode string `json:"mode"`
	// Outstanding is the per-stream limit that set the offered load.
	Outstanding int `json:"outstanding"`
	// DeliveredGiBps is controller reads x 64 B over the run time.
	DeliveredGiBps float64 `json:"delivered_gibps"`
	Latency        Latency `json:"latency"`
	// Result is the whole run.
	Result Result `json:"result"`
}

// RunLoadedLatency measures the loaded-latency curve of cfg, the plot
// memory-system people read first: every stream reads its own footprint
// once (cold, so every read reaches a controller) with the per-stream
// outstanding limit swept over outstanding, identity and low-bit reads
// alike. Latency runs from the stream's issue to the data's arrival, LLC
// lookup included.
func RunLoadedLatency(ctx context.Context, cfg Config, outstanding []int) ([]LoadPoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var jobs []PairJob
	var pts []LoadPoint
	for _, o := range outstanding {
		c := cfg
		c.Streams.Outstanding, c.Streams.Passes, c.Streams.Pattern = o, 1, "read"
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("loaded latency, %d outstanding: %w", o, err)
		}
		jobs = append(jobs, PairJob{Config: c, W: Sweep{}, Window: All})
		pts = append(pts, LoadPoint{Mode: "identity", Outstanding: o}, LoadPoint{Mode: "lowbit", Outstanding: o})
	}
	pairs, err := RunPairs(ctx, jobs)
	if err != nil {
		return nil, err
	}
	for i, p := range pairs {
		for k, r := range []Result{p.Identity, p.LowBit} {
			lp := &pts[2*i+k]
			lp.Result, lp.Latency = r, r.Latency
			if r.RunTime > 0 {
				lp.DeliveredGiBps = float64(r.ControllerReads*LineBytes) / (float64(r.RunTime) / float64(sim.Second)) / (1 << 30)
			}
		}
	}
	return pts, nil
}

// Anchors compares a configuration and its loaded-latency curve with the
// published figures of its device preset (cxldev.Profile).
type Anchors struct {
	// Preset is the device preset; Modified says the configuration's
	// device differs from it (flags or a device block changed a value), so
	// the comparison is of a variant.
	Preset   string `json:"preset"`
	Modified bool   `json:"modified"`
	// IdleNS is the closed form of one read on an idle system (IdleRead,
	// equal to the simulated one); PublishedIdleNS and IdleSource are the
	// preset's (0: none published).
	IdleNS          float64 `json:"idle_ns"`
	PublishedIdleNS float64 `json:"published_idle_ns"`
	IdleSource      string  `json:"idle_source,omitempty"`
	// SaturatedGBps is the most read bandwidth the curve delivered
	// (identity reads, GB/s); PublishedLoGBps..PublishedHiGBps and
	// ReadSource the preset's (0: none published).
	SaturatedGBps   float64 `json:"saturated_gbps"`
	PublishedLoGBps float64 `json:"published_lo_gbps"`
	PublishedHiGBps float64 `json:"published_hi_gbps"`
	ReadSource      string  `json:"read_source,omitempty"`
}

// DeviceAnchors returns cfg's idle read and pts' saturated bandwidth
// beside its device preset's published figures; ok is false under the
// ideal model or an unknown preset name.
func DeviceAnchors(cfg Config, pts []LoadPoint) (a Anchors, ok bool) {
	if cfg.Memory.Model != MemoryDRAM {
		return Anchors{}, false
	}
	p, err := cxldev.Lookup(cfg.Device.Preset)
	if err != nil {
		return Anchors{}, false
	}
	a = Anchors{Preset: p.Config.Preset, Modified: p.Config != cfg.Device, IdleNS: cfg.IdleRead().NS(),
		PublishedIdleNS: p.IdleNS, IdleSource: p.IdleSource, PublishedLoGBps: p.ReadLoGBps, PublishedHiGBps: p.ReadHiGBps, ReadSource: p.ReadSource}
	for _, pt := range pts {
		if pt.Mode == "identity" {
			a.SaturatedGBps = max(a.SaturatedGBps, pt.DeliveredGiBps*(1<<30)/1e9)
		}
	}
	return a, true
}
