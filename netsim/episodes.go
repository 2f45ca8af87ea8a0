package netsim

import (
	"fmt"

	"github.com/neuronfabric/nfabric/control"
)

// Episodes builds a pilot's telemetry from two ns-3 traces of the same job,
// a (first) and b, each simulated at training step period srcStepNS:
// episodes of episodeSteps pilot steps alternate between them over steps
// pilot steps of dstStepNS. Pilot step s of an episode replays the samples
// of simulated step s mod (the trace's steps), times rescaled from
// srcStepNS to dstStepNS (pressure is a ratio of rates, so it is unchanged
// by the rescaling). It is control.Episodes with the two scenarios replaced
// by ns-3 runs.
func Episodes(a, b []control.Telemetry, srcStepNS, dstStepNS int64, episodeSteps, steps int) ([]control.Telemetry, error) {
	if srcStepNS <= 0 || dstStepNS <= 0 || episodeSteps < 1 || steps < 1 {
		return nil, fmt.Errorf("netsim: episodes of %d steps over %d steps (%d -> %d ns per step)", episodeSteps, steps, srcStepNS, dstStepNS)
	}
	bySteps := func(tel []control.Telemetry) ([][]control.Telemetry, error) {
		var out [][]control.Telemetry
		for _, t := range tel {
			k := int((t.TimeNS - 1) / srcStepNS) // a sample at the end of an interval belongs to the step it ends
			if k < 0 {
				k = 0
			}
			for len(out) <= k {
				out = append(out, nil)
			}
			out[k] = append(out[k], t)
		}
		var full [][]control.Telemetry
		for _, s := range out {
			if len(s) > 0 {
				full = append(full, s)
			}
		}
		if len(full) == 0 {
			return nil, fmt.Errorf("netsim: episodes: an empty trace")
		}
		return full, nil
	}
	sa, err := bySteps(a)
	if err != nil {
		return nil, err
	}
	sb, err := bySteps(b)
	if err != nil {
		return nil, err
	}
	var out []control.Telemetry
	for s := 0; s < steps; s++ {
		src := sa
		if (s/episodeSteps)%2 == 1 {
			src = sb
		}
		k := s % len(src)
		for _, t := range src[k] {
			off := t.TimeNS - int64(k)*srcStepNS // within the simulated step, in (0, srcStepNS]
			t.TimeNS = int64(s)*dstStepNS + int64(float64(off)*float64(dstStepNS)/float64(srcStepNS))
			if n := len(out); n > 0 && t.TimeNS < out[n-1].TimeNS {
				t.TimeNS = out[n-1].TimeNS
			}
			out = append(out, t)
		}
	}
	return out, nil
}
