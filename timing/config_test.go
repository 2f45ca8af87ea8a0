package timing

import (
	"strings"
	"testing"
)

func TestDefaultsValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.Cycle(); got != 500 {
		t.Errorf("Cycle() = %v; want 500ps (2 GHz)", got)
	}
	if got := c.PipelineLatency(); got != 2500 {
		t.Errorf("PipelineLatency() = %v; want 2.5ns (5 stages at 2 GHz)", got)
	}
	// 64 B at 128 GiB/s = 2^6 / 2^37 s = 2^-31 s.
	if got, want := c.LinkInterval(), 1e12/(1<<31); got != want {
		t.Errorf("LinkInterval() = %v ps; want %v", got, want)
	}
}

// TestValidateNamesField: each bad value is rejected with an error that
// names its YAML field (below model: in a configuration file).
func TestValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		field string
		mut   func(*Config)
	}{
		{"streams.count", func(c *Config) { c.Streams.Count = 0 }},
		{"streams.outstanding", func(c *Config) { c.Streams.Outstanding = -1 }},
		{"streams.issue_interval_ns", func(c *Config) { c.Streams.IssueIntervalNS = -1 }},
		{"streams.footprint_mib", func(c *Config) { c.Streams.FootprintMiB = 1e-9 }},
		{"streams.passes", func(c *Config) { c.Streams.Passes = 0 }},
		{"streams.pattern", func(c *Config) { c.Streams.Pattern = "random" }},
		{"streams.layout", func(c *Config) { c.Streams.Layout = "huge" }},
		{"streams.layout scattered", func(c *Config) {
			c.Streams.Layout, c.Streams.Count, c.Streams.FootprintMiB = LayoutScattered, 4096, 8
		}},
		{"streams:", func(c *Config) { c.Streams.FootprintMiB = 60000; c.Streams.Passes = 100 }},
		{"llc.size_mib", func(c *Config) { c.LLC.SizeMiB = 0.5 / 1024 }},
		{"llc.size_mib", func(c *Config) { c.LLC.SizeMiB = 4096 }},
		{"streams.footprint_mib", func(c *Config) { c.Streams.FootprintMiB = 0 }},
		{"streams.count x streams.outstanding", func(c *Config) { c.Streams.Count, c.Streams.Outstanding = 4096, 65536 }},
		{"llc.ways", func(c *Config) { c.LLC.Ways = 0 }},
		{"llc.hit_latency_ns", func(c *Config) { c.LLC.HitLatencyNS = -2 }},
		{"link.bandwidth_gibps", func(c *Config) { c.Link.BandwidthGiBps = 0 }},
		{"link.share", func(c *Config) { c.Link.Share = 1.5 }},
		{"memory.latency_ns", func(c *Config) { c.Memory.LatencyNS = 2e6 }},
		{"controller.stacks", func(c *Config) { c.Controller.Stacks = 0 }},
		{"controller.interleave_bytes", func(c *Config) { c.Controller.InterleaveBytes = 100 }},
		{"controller.stages", func(c *Config) { c.Controller.Stages = -1 }},
		{"controller.clock_ghz", func(c *Config) { c.Controller.ClockGHz = 0 }},
		{"controller.initiation_cycles", func(c *Config) { c.Controller.InitiationCycles = -1 }},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: Validate() = %v; want an error starting with %q", tc.field, err, tc.field)
		}
	}
}
