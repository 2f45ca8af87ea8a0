package netsim

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/usage"
)

// RingCheck is one packet-level ring All-Reduce beside the analytical
// models of the same bucket on the same hosts.
type RingCheck struct {
	Workers int     `json:"workers"`
	Bytes   int64   `json:"bytes"`
	Link    string  `json:"link"`
	NS3S    float64 `json:"ns3_s"`
	// Models are the analytical times of the same All-Reduce, in order:
	// collective's ring, tree and halving-doubling (alpha-beta, alpha =
	// the two link delays to the ring neighbour), and ASTRA-sim's ring
	// (congestion-aware network of one switch) with its rt_template system
	// configuration and without the local reduction cost.
	Models []RingModel `json:"models"`
	// WireBytes is every byte the hosts' uplinks sent for the bucket
	// (headers, ACKs and retransmissions included); PayloadBytes the
	// application bytes (the closed form 2(W-1) S).
	WireBytes, PayloadBytes int64
}

// RingModel is one analytical estimate.
type RingModel struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// CheckRing times one ring All-Reduce of bytes (unscaled: c.Scale is
// ignored, so per-packet costs are the real ones) on c's network with no
// background, and returns it beside the analytical models. A network or
// size that cannot run is a usage error, found before it checks that ns-3
// is available.
func CheckRing(ctx context.Context, c Config, bytes int64) (*RingCheck, error) {
	c.Scale, c.Steps, c.Background = 1, 1, Background{}
	if err := c.Validate(); err != nil {
		return nil, usage.Wrap(err)
	}
	if bytes < int64(c.Workers) {
		return nil, usage.Errorf("netsim: ring check of %d bytes on %d workers: want at least a byte a worker", bytes, c.Workers)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	l := c.HostLink()
	// A period long enough for the ring at a quarter of the alpha-beta rate.
	ab, err := collective.AlphaBeta{Alg: collective.Ring, N: c.Workers, Link: l}.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(bytes)})
	if err != nil {
		return nil, err
	}
	period := int64(ab.Seconds*4e9) + 1e6
	c.IntervalNS = period
	sched := &Schedule{Model: "ring-check", StepNS: period, Releases: []Release{{AtNS: 0, Bytes: bytes}}}
	res, err := Run(ctx, c, sched)
	if err != nil {
		return nil, err
	}
	b := res.Buckets[0]
	if b.FinishNS < 0 {
		return nil, fmt.Errorf("netsim: ring check: the All-Reduce did not finish in %d ns", res.Duration)
	}
	rc := &RingCheck{Workers: c.Workers, Bytes: bytes, Link: l.String(), NS3S: float64(b.FinishNS-b.ReleaseNS) * 1e-9, PayloadBytes: b.SentBytes}
	for _, t := range res.Totals {
		if len(t.Link) > 1 && t.Link[0] == 'h' {
			rc.WireBytes += t.GradWire
		}
	}
	for _, alg := range []collective.Algorithm{collective.Ring, collective.Tree, collective.HalvingDoubling} {
		e, err := collective.AlphaBeta{Alg: alg, N: c.Workers, Link: l}.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(bytes)})
		if err != nil {
			return nil, err
		}
		rc.Models = append(rc.Models, RingModel{Name: "alpha-beta " + alg.String(), Seconds: e.Seconds})
	}
	d := collective.AstraDim{Topology: collective.AstraSwitch, NPUs: c.Workers, BandwidthGBps: c.HostRate / collective.GiB, LatencyNS: float64(c.DelayNS)}
	for _, s := range []struct {
		name string
		sys  collective.AstraSystem
	}{
		{"ASTRA-sim ring (rt_template system: 4 chunks, local-mem-bw 50 GB/s)", collective.AstraSystem{DatasetSplits: 4, ActiveChunks: 1, LocalMemBWGBps: 50, EndpointDelay: 10}},
		{"ASTRA-sim ring (1 chunk, no reduction cost)", collective.AstraSystem{DatasetSplits: 1, ActiveChunks: 1, LocalMemBWGBps: 1e15, EndpointDelay: 10}},
	} {
		m, err := collective.NewAstra(s.sys, []collective.AstraDim{d})
		if err != nil {
			return nil, err
		}
		e, err := m.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(bytes)})
		if err != nil {
			return nil, err
		}
		rc.Models = append(rc.Models, RingModel{Name: s.name, Seconds: e.Seconds})
	}
	return rc, nil
}
