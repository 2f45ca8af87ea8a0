package timing

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultsValid(t *testing.T) {
	if err := DefaultSetup().Validate(); err != nil {
		t.Fatal(err)
	}
	q := DefaultSetup()
	q.Experiments = QuickExperiments()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
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
// names its YAML field.
func TestValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		field string
		mut   func(*Setup)
	}{
		{"model.streams.count", func(s *Setup) { s.Model.Streams.Count = 0 }},
		{"model.streams.outstanding", func(s *Setup) { s.Model.Streams.Outstanding = -1 }},
		{"model.streams.issue_interval_ns", func(s *Setup) { s.Model.Streams.IssueIntervalNS = -1 }},
		{"model.streams.footprint_mib", func(s *Setup) { s.Model.Streams.FootprintMiB = 1e-9 }},
		{"model.streams.passes", func(s *Setup) { s.Model.Streams.Passes = 0 }},
		{"model.streams.pattern", func(s *Setup) { s.Model.Streams.Pattern = "random" }},
		{"model.streams.layout", func(s *Setup) { s.Model.Streams.Layout = "huge" }},
		{"model.streams.layout scattered", func(s *Setup) {
			s.Model.Streams.Layout, s.Model.Streams.Count, s.Model.Streams.FootprintMiB = LayoutScattered, 4096, 8
		}},
		{"model.streams:", func(s *Setup) { s.Model.Streams.FootprintMiB = 60000; s.Model.Streams.Passes = 100 }},
		{"model.llc.size_mib", func(s *Setup) { s.Model.LLC.SizeMiB = 0.5 / 1024 }},
		{"model.llc.size_mib", func(s *Setup) { s.Model.LLC.SizeMiB = 4096 }},
		{"model.streams.footprint_mib", func(s *Setup) { s.Model.Streams.FootprintMiB = 0 }},
		{"model.streams.count x streams.outstanding", func(s *Setup) { s.Model.Streams.Count, s.Model.Streams.Outstanding = 4096, 65536 }},
		{"experiments.stream_counts 4096 x model.streams.outstanding", func(s *Setup) { s.Model.Streams.Outstanding = 1024; s.Experiments.StreamCounts = []int{8, 4096} }},
		{"model.streams.count 32 x experiments.load_outstanding", func(s *Setup) { s.Model.Streams.Count = 32; s.Experiments.LoadOutstanding = []int{1, 1 << 16} }},
		{"model.llc.ways", func(s *Setup) { s.Model.LLC.Ways = 0 }},
		{"model.llc.hit_latency_ns", func(s *Setup) { s.Model.LLC.HitLatencyNS = -2 }},
		{"model.link.bandwidth_gibps", func(s *Setup) { s.Model.Link.BandwidthGiBps = 0 }},
		{"model.link.share", func(s *Setup) { s.Model.Link.Share = 1.5 }},
		{"model.memory.latency_ns", func(s *Setup) { s.Model.Memory.LatencyNS = 2e6 }},
		{"model.controller.stacks", func(s *Setup) { s.Model.Controller.Stacks = 0 }},
		{"model.controller.interleave_bytes", func(s *Setup) { s.Model.Controller.InterleaveBytes = 100 }},
		{"model.controller.stages", func(s *Setup) { s.Model.Controller.Stages = -1 }},
		{"model.controller.clock_ghz", func(s *Setup) { s.Model.Controller.ClockGHz = 0 }},
		{"model.controller.initiation_cycles", func(s *Setup) { s.Model.Controller.InitiationCycles = -1 }},
		{"experiments.congested_share", func(s *Setup) { s.Experiments.CongestedShare = 0 }},
		{"experiments.stream_counts[1]", func(s *Setup) { s.Experiments.StreamCounts = []int{1, 0} }},
		{"experiments.stack_counts", func(s *Setup) { s.Experiments.StackCounts = nil }},
		{"experiments.bandwidths_gibps[0]", func(s *Setup) { s.Experiments.BandwidthsGiBps = []float64{-1} }},
		{"experiments.depths[0]", func(s *Setup) { s.Experiments.Depths = []int{-5} }},
		{"experiments.latencies_ns[0]", func(s *Setup) { s.Experiments.LatenciesNS = []float64{-1} }},
		{"experiments.footprint_ratios[0]", func(s *Setup) { s.Experiments.FootprintRatios = []float64{0} }},
		{"experiments.delays_ms[0]", func(s *Setup) { s.Experiments.DelaysMS = []float64{5000} }},
		{"experiments.step_ms", func(s *Setup) { s.Experiments.StepMS = 0 }},
		{"experiments.exposure_budget_pct", func(s *Setup) { s.Experiments.ExposureBudgetPct = 101 }},
	} {
		s := DefaultSetup()
		tc.mut(&s)
		err := s.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: Validate() = %v; want an error starting with %q", tc.field, err, tc.field)
		}
	}
}

func TestDecodeSetup(t *testing.T) {
	s, err := DecodeSetup(strings.NewReader(""))
	if err != nil || !reflect.DeepEqual(s, DefaultSetup()) {
		t.Fatalf("empty document: %v, %+v; want defaults", err, s)
	}
	s, err = DecodeSetup(strings.NewReader("model:\n  controller:\n    stacks: 4\nexperiments:\n  depths: [5, 7]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSetup()
	want.Model.Controller.Stacks = 4
	want.Experiments.Depths = []int{5, 7}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("partial document: got %+v; want %+v", s, want)
	}
	for _, tc := range []struct{ doc, want string }{
		{"model:\n  controler:\n    stacks: 4\n", "controler"},
		{"model:\n  streams:\n    count: eight\n", "eight"},
		{"model:\n  link:\n    share: 0\n", "model.link.share"},
		{"model: {}\n---\nmodel: {}\n", "more than one"},
		{"[1, 2]", "cannot unmarshal"},
	} {
		_, err := DecodeSetup(strings.NewReader(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeSetup(%q) = %v; want an error mentioning %q", tc.doc, err, tc.want)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	s := DefaultSetup()
	s.Model.Streams.IssueIntervalNS = 0.25
	s.Experiments = QuickExperiments()
	var buf bytes.Buffer
	if err := EncodeSetup(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSetup(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip: got %+v; want %+v", got, s)
	}
}

// FuzzDecodeSetup: decoding never panics; whatever decodes is valid, and
// encoding it and decoding again gives the same setup.
func FuzzDecodeSetup(f *testing.F) {
	var buf bytes.Buffer
	EncodeSetup(&buf, DefaultSetup())
	f.Add(buf.String())
	f.Add("")
	f.Add("model:\n  controller:\n    stacks: 4\n")
	f.Add("experiments:\n  delays_ms: [0, 10]\n  step_ms: 250\n")
	f.Add("model:\n  streams: {count: 2, pattern: write-read, footprint_mib: 0.5}\n")
	f.Add("model: &a {}\nexperiments: *a\n")
	f.Add("model:\n  memory:\n    model: ddr5\n    ddr5: {preset: ddr5-6400, t_rfc_ns: 410, mapping: ro:ch:ra:ba:bg:co}\n")
	f.Add("model:\n  link: {model: cxl, cxl: {preset: pcie5-x16, request_credits: 4}}\n")
	f.Add("model:\n  memory:\n    model: ddr5\n    ddr5: {bank_hash: none}\n")
	f.Add("model:\n  memory:\n    ddr5:\n      channels: 2.5\n")
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := DecodeSetup(strings.NewReader(doc))
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded an invalid setup: %v", err)
		}
		var out bytes.Buffer
		if err := EncodeSetup(&out, s); err != nil {
			t.Fatalf("encode: %v", err)
		}
		s2, err := DecodeSetup(&out)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, out.String())
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the setup:\n%+v\n%+v", s, s2)
		}
	})
}
