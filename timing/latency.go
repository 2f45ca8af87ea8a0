package timing

import "github.com/neuronfabric/nfabric/timing/sim"

// latencyHist is a fixed-size histogram of controller-read latencies in
// 1 ns bins (the last bin holds everything at or above 16.383 us), so its
// memory does not grow with the lines simulated.
type latencyHist struct {
	bins     []int64
	n        int64
	sum, max sim.Time
}

const latencyBins = 1 << 14

func (h *latencyHist) add(t sim.Time) {
	if h.bins == nil {
		h.bins = make([]int64, latencyBins)
	}
	b := int(t / sim.Nanosecond)
	if b >= latencyBins {
		b = latencyBins - 1
	}
	h.bins[b]++
	h.n++
	h.sum += t
	h.max = max(h.max, t)
}

// quantile returns the upper edge of the bin holding the q-quantile (at
// most the maximum seen).
func (h *latencyHist) quantile(q float64) sim.Time {
	if h.n == 0 {
		return 0
	}
	k := int64(q*float64(h.n-1)) + 1
	var c int64
	for i, v := range h.bins {
		c += v
		if c >= k {
			return min(sim.Time(i+1)*sim.Nanosecond, h.max)
		}
	}
	return h.max
}

// Latency summarises the controller reads of a run: from the stream's
// issue to the data's arrival, LLC lookup included.
type Latency struct {
	Reads  int64   `json:"reads"`
	MeanNS float64 `json:"mean_ns"`
	// P50NS, P99NS are read from 1 ns bins (upper bin edges).
	P50NS float64 `json:"p50_ns"`
	P99NS float64 `json:"p99_ns"`
	MaxNS float64 `json:"max_ns"`
}

func (h *latencyHist) summary() Latency {
	if h.n == 0 {
		return Latency{}
	}
	return Latency{Reads: h.n, MeanNS: h.sum.NS() / float64(h.n), P50NS: h.quantile(0.5).NS(),
		P99NS: h.quantile(0.99).NS(), MaxNS: h.max.NS()}
}
