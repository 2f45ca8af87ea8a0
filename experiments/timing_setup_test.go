package experiments

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/timing"
)

func TestTimingSetupDefaultsValid(t *testing.T) {
	if err := DefaultTimingSetup().Validate(); err != nil {
		t.Fatal(err)
	}
	q := DefaultTimingSetup()
	q.Experiments = QuickTimingParams()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestTimingSetupValidateNamesField: each bad value is rejected with an error that
// names its YAML field.
func TestTimingSetupValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		field string
		mut   func(*TimingSetup)
	}{
		{"model.streams.count", func(s *TimingSetup) { s.Model.Streams.Count = 0 }},
		{"model.streams.outstanding", func(s *TimingSetup) { s.Model.Streams.Outstanding = -1 }},
		{"model.streams.issue_interval_ns", func(s *TimingSetup) { s.Model.Streams.IssueIntervalNS = -1 }},
		{"model.streams.footprint_mib", func(s *TimingSetup) { s.Model.Streams.FootprintMiB = 1e-9 }},
		{"model.streams.passes", func(s *TimingSetup) { s.Model.Streams.Passes = 0 }},
		{"model.streams.pattern", func(s *TimingSetup) { s.Model.Streams.Pattern = "random" }},
		{"model.streams.layout", func(s *TimingSetup) { s.Model.Streams.Layout = "huge" }},
		{"model.streams.layout scattered", func(s *TimingSetup) {
			s.Model.Streams.Layout, s.Model.Streams.Count, s.Model.Streams.FootprintMiB = timing.LayoutScattered, 4096, 8
		}},
		{"model.streams:", func(s *TimingSetup) { s.Model.Streams.FootprintMiB = 60000; s.Model.Streams.Passes = 100 }},
		{"model.llc.size_mib", func(s *TimingSetup) { s.Model.LLC.SizeMiB = 0.5 / 1024 }},
		{"model.llc.size_mib", func(s *TimingSetup) { s.Model.LLC.SizeMiB = 4096 }},
		{"model.streams.footprint_mib", func(s *TimingSetup) { s.Model.Streams.FootprintMiB = 0 }},
		{"model.streams.count x streams.outstanding", func(s *TimingSetup) { s.Model.Streams.Count, s.Model.Streams.Outstanding = 4096, 65536 }},
		{"experiments.stream_counts 4096 x model.streams.outstanding", func(s *TimingSetup) { s.Model.Streams.Outstanding = 1024; s.Experiments.StreamCounts = []int{8, 4096} }},
		{"model.streams.count 32 x experiments.load_outstanding", func(s *TimingSetup) { s.Model.Streams.Count = 32; s.Experiments.LoadOutstanding = []int{1, 1 << 16} }},
		{"model.llc.ways", func(s *TimingSetup) { s.Model.LLC.Ways = 0 }},
		{"model.llc.hit_latency_ns", func(s *TimingSetup) { s.Model.LLC.HitLatencyNS = -2 }},
		{"model.link.bandwidth_gibps", func(s *TimingSetup) { s.Model.Link.BandwidthGiBps = 0 }},
		{"model.link.share", func(s *TimingSetup) { s.Model.Link.Share = 1.5 }},
		{"model.memory.latency_ns", func(s *TimingSetup) { s.Model.Memory.LatencyNS = 2e6 }},
		{"model.controller.stacks", func(s *TimingSetup) { s.Model.Controller.Stacks = 0 }},
		{"model.controller.interleave_bytes", func(s *TimingSetup) { s.Model.Controller.InterleaveBytes = 100 }},
		{"model.controller.stages", func(s *TimingSetup) { s.Model.Controller.Stages = -1 }},
		{"model.controller.clock_ghz", func(s *TimingSetup) { s.Model.Controller.ClockGHz = 0 }},
		{"model.controller.initiation_cycles", func(s *TimingSetup) { s.Model.Controller.InitiationCycles = -1 }},
		{"experiments.congested_share", func(s *TimingSetup) { s.Experiments.CongestedShare = 0 }},
		{"experiments.stream_counts[1]", func(s *TimingSetup) { s.Experiments.StreamCounts = []int{1, 0} }},
		{"experiments.stack_counts", func(s *TimingSetup) { s.Experiments.StackCounts = nil }},
		{"experiments.bandwidths_gibps[0]", func(s *TimingSetup) { s.Experiments.BandwidthsGiBps = []float64{-1} }},
		{"experiments.depths[0]", func(s *TimingSetup) { s.Experiments.Depths = []int{-5} }},
		{"experiments.latencies_ns[0]", func(s *TimingSetup) { s.Experiments.LatenciesNS = []float64{-1} }},
		{"experiments.footprint_ratios[0]", func(s *TimingSetup) { s.Experiments.FootprintRatios = []float64{0} }},
		{"experiments.delays_ms[0]", func(s *TimingSetup) { s.Experiments.DelaysMS = []float64{5000} }},
		{"experiments.step_ms", func(s *TimingSetup) { s.Experiments.StepMS = 0 }},
		{"experiments.exposure_budget_pct", func(s *TimingSetup) { s.Experiments.ExposureBudgetPct = 101 }},
	} {
		s := DefaultTimingSetup()
		tc.mut(&s)
		err := s.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: Validate() = %v; want an error starting with %q", tc.field, err, tc.field)
		}
	}
}

func TestDecodeTimingSetup(t *testing.T) {
	s, err := DecodeTimingSetup(strings.NewReader(""))
	if err != nil || !reflect.DeepEqual(s, DefaultTimingSetup()) {
		t.Fatalf("empty document: %v, %+v; want defaults", err, s)
	}
	s, err = DecodeTimingSetup(strings.NewReader("model:\n  controller:\n    stacks: 4\nexperiments:\n  depths: [5, 7]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultTimingSetup()
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
		_, err := DecodeTimingSetup(strings.NewReader(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeTimingSetup(%q) = %v; want an error mentioning %q", tc.doc, err, tc.want)
		}
	}
}

func TestEncodeTimingSetupRoundTrip(t *testing.T) {
	s := DefaultTimingSetup()
	s.Model.Streams.IssueIntervalNS = 0.25
	s.Experiments = QuickTimingParams()
	var buf bytes.Buffer
	if err := EncodeTimingSetup(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTimingSetup(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip: got %+v; want %+v", got, s)
	}
}

// FuzzDecodeTimingSetup: decoding never panics; whatever decodes is valid, and
// encoding it and decoding again gives the same setup.
func FuzzDecodeTimingSetup(f *testing.F) {
	var buf bytes.Buffer
	EncodeTimingSetup(&buf, DefaultTimingSetup())
	f.Add(buf.String())
	f.Add("")
	f.Add("model:\n  controller:\n    stacks: 4\n")
	f.Add("experiments:\n  delays_ms: [0, 10]\n  step_ms: 250\n")
	f.Add("model:\n  streams: {count: 2, pattern: write-read, footprint_mib: 0.5}\n")
	f.Add("model: &a {}\nexperiments: *a\n")
	f.Add("model:\n  memory:\n    model: dram\n  device:\n    media: {preset: ddr5-6400, t_rfc_ns: 410, mapping: ro:ch:ra:ba:bg:co}\n")
	f.Add("model:\n  link: {model: cxl}\n  device: {link: {preset: pcie5-x16}, request_queue: 4}\n")
	f.Add("model:\n  memory:\n    model: dram\n  device: {preset: asic-pcie5-x8, media: {bank_hash: none}}\n")
	f.Add("model:\n  device:\n    media:\n      channels: 2.5\n")
	f.Add("model:\n  device: {preset: fpga-pcie5-x16, host: {fabric_ns: 20}}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := DecodeTimingSetup(strings.NewReader(doc))
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded an invalid setup: %v", err)
		}
		var out bytes.Buffer
		if err := EncodeTimingSetup(&out, s); err != nil {
			t.Fatalf("encode: %v", err)
		}
		s2, err := DecodeTimingSetup(&out)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, out.String())
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the setup:\n%+v\n%+v", s, s2)
		}
	})
}

func TestDecodeTimingSetupPresetsAndIntegers(t *testing.T) {
	doc := `model:
  memory:
    model: dram
  device:
    preset: asic-pcie5-x8
    media:
      preset: ddr5-6400
      t_rfc_ns: 410
    link:
      preset: pcie5-x16
      port_latency_ns: 40
`
	s, err := DecodeTimingSetup(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	d := s.Model.Device.Media
	if d.DataRateMTs != 6400 || d.TCLNS != 16.25 || d.TRFCNS != 410 {
		t.Errorf("ddr5-6400 with t_rfc_ns override: rate %d, tCL %g, tRFC %g", d.DataRateMTs, d.TCLNS, d.TRFCNS)
	}
	if x := s.Model.Device.Link; x.FlitBytes != 68 || x.Lanes != 16 || x.PortLatencyNS != 40 {
		t.Errorf("pcie5-x16 with port override: flit %d, lanes %d, port %g", x.FlitBytes, x.Lanes, x.PortLatencyNS)
	}
	if c := s.Model.Device; c.Preset != "asic-pcie5-x8" || c.ProtocolNS != 15 || c.Host.BridgeNS != 50 {
		t.Errorf("the device block's other keys should come from asic-pcie5-x8: %+v", c)
	}
	for _, bad := range []struct{ doc, want string }{
		{"model:\n  device:\n    media:\n      channels: 2.5\n", "model.device.media.channels: must be an integer"},
		{"model:\n  streams:\n    count: 8.0\n", "model.streams.count: must be an integer"},
		{"experiments:\n  stack_counts: [1, 2.5]\n", "experiments.stack_counts[1]: must be an integer"},
		{"model:\n  controller:\n    stages: 2.9\n", "model.controller.stages: must be an integer"},
		{"model:\n  device:\n    media:\n      preset: lpddr5\n", `line 4: preset: unknown DRAM preset "lpddr5"`},
		{"model:\n  device:\n    link:\n      preset: pcie7\n", `line 4: preset: unknown CXL link preset "pcie7"`},
		{"model:\n  device:\n    preset: gpu\n", `line 3: preset: unknown CXL device "gpu"`},
		{"model:\n  device:\n    host: {bridge: 50}\n", "field host.bridge not found"},
		{"model:\n  memory:\n    ddr5: {}\n", "field ddr5 not found"},
	} {
		if _, err := DecodeTimingSetup(strings.NewReader(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v; want %q", bad.doc, err, bad.want)
		}
	}
}

// TestTable4Determinism: the Table 4 driver gives the same rows whatever
// GOMAXPROCS is.
func TestTable4Determinism(t *testing.T) {
	s := DefaultTimingSetup()
	s.Model.Streams.FootprintMiB = 0.25
	s.Model.LLC.SizeMiB = 1
	s.Experiments.StreamCounts = []int{1, 3, 8}
	run := func(procs int) []Table4Row {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		rows, err := RunTable4(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	a, b := run(1), run(4)
	if len(a) != len(b) {
		t.Fatalf("%d rows vs %d", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Errorf("row %d differs across GOMAXPROCS:\n%+v\n%+v", i, a[i], b[i])
		}
	}
}
