package timing

import (
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
				lp.DeliveredGiBps = float64(r.ControllerReads*LineBytes) / (float64(r.RunTime) / float64(Second)) / (1 << 30)
			}
		}
	}
	return pts, nil
}
