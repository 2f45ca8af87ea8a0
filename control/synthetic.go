package control

import (
	"time"

	"github.com/neuronfabric/nfabric/usage"
)

// Synthetic asks for a trace of the synthetic generator ('nfabric
// telemetry synthetic'): the healthy or congested scenario, or episodes
// alternating the two, sampled every Interval over Duration. Its errors
// name the command's flags.
type Synthetic struct {
	Scenario string // healthy, congested or episodes
	Duration time.Duration
	Interval time.Duration
	Step     time.Duration // training step period of both scenarios
	Episode  time.Duration // episode length (episodes)
	Seed     uint64
}

// DefaultSynthetic is the command's default: ten seconds of episodes of
// two seconds, sampled every 10 ms, at a 100 ms step.
func DefaultSynthetic() Synthetic {
	return Synthetic{Scenario: "episodes", Duration: 10 * time.Second, Interval: 10 * time.Millisecond,
		Step: 100 * time.Millisecond, Episode: 2 * time.Second, Seed: 1}
}

// Generate checks s (usage errors: a duration that is not positive, an
// unknown scenario, more samples than MaxTelemetrySamples) and returns its
// trace.
func (s Synthetic) Generate() ([]Telemetry, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", s.Duration}, {"interval", s.Interval}, {"step", s.Step}, {"episode", s.Episode}} {
		if d.v <= 0 {
			return nil, usage.Errorf("--%s %v: want a positive duration", d.name, d.v)
		}
	}
	h, c := HealthyScenario(), CongestedScenario()
	h.StepNS, c.StepNS = s.Step.Nanoseconds(), s.Step.Nanoseconds()
	var tel []Telemetry
	var err error
	switch s.Scenario {
	case "healthy":
		tel, err = h.Generate(s.Duration.Nanoseconds(), s.Interval.Nanoseconds(), s.Seed)
	case "congested":
		tel, err = c.Generate(s.Duration.Nanoseconds(), s.Interval.Nanoseconds(), s.Seed)
	case "episodes":
		tel, err = Episodes(h, c, s.Episode.Nanoseconds(), s.Duration.Nanoseconds(), s.Interval.Nanoseconds(), s.Seed)
	default:
		return nil, usage.Errorf("--scenario %q: want healthy, congested or episodes", s.Scenario)
	}
	return tel, usage.Wrap(err)
}
