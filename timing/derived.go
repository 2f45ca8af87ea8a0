package timing

// Figures derived from one run's counters.

// HitRate is the run's LLC hit fraction (0 with no lookups).
func (r Result) HitRate() float64 {
	return float64(r.Hits) / float64(max(1, r.Hits+r.Misses))
}

// MeanQueueWaitNS is the mean time a controller read spent queued in
// front of the pipeline and the link, in ns.
func (r Result) MeanQueueWaitNS() float64 {
	return (r.PipeWait + r.LinkWait).NS() / float64(max(1, r.ControllerReads))
}

// PipeWaitPerLowBitReadNS is the mean time a low-bit read spent queued in
// front of the aggregation pipeline, in ns.
func (r Result) PipeWaitPerLowBitReadNS() float64 {
	return r.PipeWait.NS() / float64(max(1, r.LowBitReads))
}

// FootprintMiB is the run's total footprint: its lines over the given
// number of passes, in MiB.
func (r Result) FootprintMiB(passes int) float64 {
	return float64(r.Lines) * LineBytes / (1 << 20) / float64(passes)
}

// AnchorExposure runs the paper's full-LLC-miss anchor (DefaultConfig: 8
// streams x 2 MiB against an 8 MiB LLC, 128 GiB/s, 200 ns, five 2 GHz
// stages) and returns the G-Binary exposed fraction (not percent): the
// exposure the collective and GPT-scale models apply.
func AnchorExposure() (float64, error) {
	p, err := RunPair(DefaultConfig(), Sweep{})
	if err != nil {
		return 0, err
	}
	return p.OverheadPct / 100, nil
}
