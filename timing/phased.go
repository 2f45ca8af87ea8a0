package timing

import (
	"fmt"

	"github.com/neuronfabric/nfabric/timing/sim"
)

// refreshPhases returns how many refresh schedules a pair of cfg averages
// over: memory.refresh_phases under dram with refresh on and the periodic
// schedule (device.media.refresh_seed 0), otherwise 0 (one pair).
func refreshPhases(cfg Config) int {
	d := cfg.Device.Media
	if cfg.Memory.Model != MemoryDRAM || d.TREFINS == 0 || d.RefreshSeed != 0 {
		return 0
	}
	return cfg.Memory.RefreshPhases
}

// phasedPair runs the pair of cfg under n refresh schedules,
// device.media.refresh_seed 1..n, both runs of a pair on the same one,
// and returns the mean pair:
//
//	Identity, LowBit = meanResult over the n schedules
//	Exposed          = LowBit.RunTime - Identity.RunTime  (= mean exposure, to a picosecond)
//	PhaseExposed[k]  = exposure under schedule k+1
//
// Why: one stream with one outstanding read is a strictly periodic chain
// that phase-locks onto a strictly periodic refresh, and the identity
// and low-bit runs, whose periods differ by the datapath's latency, lock
// at different phases, so one periodic pair measured 7 to 16 ns exposed
// per read for a 2.5 ns datapath depending on the front-end delay. A
// dithered schedule (Channel.refreshAt) has no strict period to lock
// onto, and the mean over schedules is the exposure averaged over where
// refresh falls. tr records schedule 1's low-bit run (tr.Run says so).
func phasedPair(cfg Config, w Workload, lowBit Window, tr *sim.Tracer, n int) (Pair, error) {
	var traced *Result
	ids := make([]Result, 0, n)
	lbs := make([]Result, 0, n)
	exp := make([]sim.Time, 0, n)
	for k := 1; k <= n; k++ {
		c := cfg
		c.Device.Media.RefreshSeed = uint64(k)
		var t *sim.Tracer
		if k == 1 {
			t = tr
		}
		p, err := singlePair(c, w, lowBit, t)
		if err != nil {
			return Pair{}, fmt.Errorf("refresh schedule %d of %d: %w", k, n, err)
		}
		ids, lbs, exp = append(ids, p.Identity), append(lbs, p.LowBit), append(exp, p.Exposed)
		if t != nil {
			traced = &lbs[len(lbs)-1]
		}
	}
	if tr != nil {
		tr.Run = fmt.Sprintf("the low-bit run under refresh schedule 1 of %d (device.media.refresh_seed 1), not the mean over the %d schedules the pair reports", n, n)
	}
	p := Pair{Identity: meanResult(ids), LowBit: meanResult(lbs), PipelineLatency: cfg.PipelineLatency(), PhaseExposed: exp}
	if traced != nil {
		r := *traced
		p.Traced = &r
	}
	p.Exposed = p.LowBit.RunTime - p.Identity.RunTime
	if p.Identity.RunTime > 0 {
		p.OverheadPct = 100 * float64(p.Exposed) / float64(p.Identity.RunTime)
	}
	return p, nil
}

// meanInt is the mean of n int64 sums, rounded half away from zero.
func meanInt(sum int64, n int) int64 {
	if sum < 0 {
		return -meanInt(-sum, n)
	}
	return (sum + int64(n)/2) / int64(n)
}

// meanResult is the field-wise mean of rs (at least one): counters and
// times rounded to the nearest unit, rates and latencies (P50NS, P99NS:
// the mean of each run's percentile) averaged, MaxNS the largest.
func meanResult(rs []Result) Result {
	n := len(rs)
	var s Result
	var lat Latency
	var d *DetailStats
	if rs[0].Detail != nil {
		d = &DetailStats{}
	}
	for _, r := range rs {
		s.RunTime += r.RunTime
		s.Lines += r.Lines
		s.Reads += r.Reads
		s.Writes += r.Writes
		s.Hits += r.Hits
		s.Misses += r.Misses
		s.Writebacks += r.Writebacks
		s.ControllerReads += r.ControllerReads
		s.LowBitReads += r.LowBitReads
		s.PipeWait += r.PipeWait
		s.LinkWait += r.LinkWait
		s.LinkUtil += r.LinkUtil
		s.Events += r.Events
		lat.Reads += r.Latency.Reads
		lat.MeanNS += r.Latency.MeanNS
		lat.P50NS += r.Latency.P50NS
		lat.P99NS += r.Latency.P99NS
		lat.MaxNS = max(lat.MaxNS, r.Latency.MaxNS)
		if d != nil && r.Detail != nil {
			x := r.Detail
			d.DRAMReads += x.DRAMReads
			d.DRAMWrites += x.DRAMWrites
			d.Acts += x.Acts
			d.Precharges += x.Precharges
			d.Refreshes += x.Refreshes
			d.RowHitRate += x.RowHitRate
			d.DataBusUtil += x.DataBusUtil
			d.ReqLinkUtil += x.ReqLinkUtil
			d.RespLinkUtil += x.RespLinkUtil
			d.Flits += x.Flits
			d.RespFlits += x.RespFlits
			d.CreditStalls += x.CreditStalls
		}
	}
	f := float64(n)
	m := Result{RunTime: sim.Time(meanInt(int64(s.RunTime), n)), Lines: meanInt(s.Lines, n), Reads: meanInt(s.Reads, n),
		Writes: meanInt(s.Writes, n), Hits: meanInt(s.Hits, n), Misses: meanInt(s.Misses, n),
		Writebacks: meanInt(s.Writebacks, n), ControllerReads: meanInt(s.ControllerReads, n),
		LowBitReads: meanInt(s.LowBitReads, n), PipeWait: sim.Time(meanInt(int64(s.PipeWait), n)),
		LinkWait: sim.Time(meanInt(int64(s.LinkWait), n)), LinkUtil: s.LinkUtil / f, Events: meanInt(s.Events, n),
		Latency: Latency{Reads: meanInt(lat.Reads, n), MeanNS: lat.MeanNS / f, P50NS: lat.P50NS / f, P99NS: lat.P99NS / f, MaxNS: lat.MaxNS}}
	if d != nil {
		m.Detail = &DetailStats{DRAMReads: meanInt(d.DRAMReads, n), DRAMWrites: meanInt(d.DRAMWrites, n), Acts: meanInt(d.Acts, n),
			Precharges: meanInt(d.Precharges, n), Refreshes: meanInt(d.Refreshes, n), RowHitRate: d.RowHitRate / f,
			DataBusUtil: d.DataBusUtil / f, ReqLinkUtil: d.ReqLinkUtil / f, RespLinkUtil: d.RespLinkUtil / f,
			Flits: meanInt(d.Flits, n), RespFlits: meanInt(d.RespFlits, n), CreditStalls: meanInt(d.CreditStalls, n)}
	}
	return m
}
