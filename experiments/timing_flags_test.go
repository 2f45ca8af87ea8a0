package experiments

import (
	"reflect"
	"testing"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/spf13/pflag"
)

// TestTimingFlagsApply parses hand-written command lines and checks that
// each flag sets its own field of the setup, that a flag not given leaves
// the base's value (a --config file's) alone, and that the refusals name
// the flag.
func TestTimingFlagsApply(t *testing.T) {
	base := func() TimingSetup {
		s := DefaultTimingSetup()
		s.Model.Streams.Count, s.Model.Controller.Stacks, s.Experiments.StepMS = 7, 3, 123 // as if from --config
		return s
	}
	tests := []struct {
		name string
		args []string
		edit func(s *TimingSetup)
		err  string
	}{
		{"nothing set keeps the base", nil, func(*TimingSetup) {}, ""},
		{"streams", []string{"--streams", "4", "--outstanding", "8", "--issue-interval-ns", "2.5", "--footprint-mib", "3", "--passes", "2",
			"--pattern", "write-read", "--layout", "scattered"}, func(s *TimingSetup) {
			m := &s.Model.Streams
			m.Count, m.Outstanding, m.IssueIntervalNS, m.FootprintMiB, m.Passes, m.Pattern, m.Layout = 4, 8, 2.5, 3, 2, "write-read", "scattered"
		}, ""},
		{"llc, link and memory", []string{"--llc-mib", "16", "--llc-ways", "8", "--llc-latency-ns", "12", "--bandwidth-gibps", "40", "--share", "0.5", "--latency-ns", "200"},
			func(s *TimingSetup) {
				s.Model.LLC.SizeMiB, s.Model.LLC.Ways, s.Model.LLC.HitLatencyNS = 16, 8, 12
				s.Model.Link.BandwidthGiBps, s.Model.Link.Share, s.Model.Memory.LatencyNS = 40, 0.5, 200
			}, ""},
		{"controller", []string{"--stacks", "2", "--interleave-bytes", "512", "--stages", "5", "--clock-ghz", "1.5", "--initiation-cycles", "2"},
			func(s *TimingSetup) {
				c := &s.Model.Controller
				c.Stacks, c.InterleaveBytes, c.Stages, c.ClockGHz, c.InitiationCycles = 2, 512, 5, 1.5, 2
			}, ""},
		{"experiments", []string{"--congested-share", "0.3", "--step-ms", "250", "--load-outstanding", "1,2,4"},
			func(s *TimingSetup) {
				s.Experiments.CongestedShare, s.Experiments.StepMS, s.Experiments.LoadOutstanding = 0.3, 250, []int{1, 2, 4}
			}, ""},
		{"a flag set to the default still overrides the base", []string{"--stacks", "1"}, func(s *TimingSetup) { s.Model.Controller.Stacks = 1 }, ""},
		{"model selectors", []string{"--memory", "dram", "--link", "gate"}, func(s *TimingSetup) {
			s.Model.Memory.Model, s.Model.Link.Model = timing.MemoryDRAM, "gate"
		}, ""},
		{"empty memory", []string{"--memory", ""}, nil, "--memory is empty: give a value (see --help)"},
		{"empty layout", []string{"--streams", "2", "--layout", ""}, nil, "--layout is empty: give a value (see --help)"},
		{"empty dram preset", []string{"--dram-preset="}, nil, "--dram-preset is empty"},
		{"DRAM setting without DRAM", []string{"--dram-channels", "4"}, nil, "--dram-channels: device and DRAM settings do not apply to --memory ideal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("timing", pflag.ContinueOnError)
			f := AddTimingFlags(fs, DefaultTimingSetup())
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got := base()
			err := f.Apply(fs, &got)
			wantUsage(t, err, tt.err)
			if tt.err != "" {
				return
			}
			want := base()
			tt.edit(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v:\n got %+v\nwant %+v", tt.args, got, want)
			}
		})
	}
}

// TestTimingFlagDefaults checks that the flags show the defaults they
// were registered with.
func TestTimingFlagDefaults(t *testing.T) {
	fs := pflag.NewFlagSet("timing", pflag.ContinueOnError)
	def := DefaultTimingSetup()
	def.Model.Streams.Count, def.Experiments.LoadOutstanding = 5, []int{3, 9}
	AddTimingFlags(fs, def)
	for name, want := range map[string]string{"streams": "5", "load-outstanding": "[3,9]", "memory": def.Model.Memory.Model, "step-ms": "1000"} {
		if f := fs.Lookup(name); f == nil || f.DefValue != want {
			t.Errorf("--%s default %v; want %q", name, f, want)
		}
	}
}

// TestQuickSweeps checks that --quick shortens the four Fig. 3 sweeps and
// leaves every other parameter, as a --config file set it, alone.
func TestQuickSweeps(t *testing.T) {
	e := DefaultTimingParams()
	e.CongestedShare, e.StepMS, e.LoadOutstanding, e.Depths = 0.5, 250, []int{2, 8}, []int{7}
	want := e
	want.BandwidthsGiBps = []float64{16, 32, 64, 128, 512}
	want.LatenciesNS = []float64{50, 200, 800}
	want.FootprintRatios = []float64{0.5, 1, 2, 4}
	want.DelaysMS = []float64{0, 1, 10}
	e.QuickSweeps()
	if !reflect.DeepEqual(e, want) {
		t.Errorf("QuickSweeps:\n got %+v\nwant %+v", e, want)
	}
}
