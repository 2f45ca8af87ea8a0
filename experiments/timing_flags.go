package experiments

import (
	"fmt"
	"reflect"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/pflag"
)

// TimingFlags are the command-line flags of a TimingSetup shared by the
// 'nfabric timing' commands: one per stream, LLC, link, memory,
// controller and experiment field of timingFlagFields, plus the model
// selectors and device flags (timing.AddFlags). Each flag binds straight
// into a field of a scratch setup; Apply copies onto the real setup only
// the fields whose flag the user set, so that the values of a --config
// file, or of a preset, stay unless a flag overrides them.
type TimingFlags struct {
	vals  TimingSetup
	model *timing.Flags
}

// timingFlagField is one flag of TimingFlags: its name, its usage text,
// and the field of a setup it sets (a pointer into s, of type *int,
// *float64, *string or *[]int).
type timingFlagField struct {
	name, usage string
	field       func(s *TimingSetup) any
}

// timingFlagFields are TimingFlags' own flags, in the order they are
// registered.
var timingFlagFields = []timingFlagField{
	{"streams", "request streams W (virtual workers)", func(s *TimingSetup) any { return &s.Model.Streams.Count }},
	{"outstanding", "outstanding requests per stream", func(s *TimingSetup) any { return &s.Model.Streams.Outstanding }},
	{"issue-interval-ns", "minimum ns between two issues of a stream", func(s *TimingSetup) any { return &s.Model.Streams.IssueIntervalNS }},
	{"footprint-mib", "active footprint per stream (MiB)", func(s *TimingSetup) any { return &s.Model.Streams.FootprintMiB }},
	{"passes", "sweeps over each stream's footprint", func(s *TimingSetup) any { return &s.Model.Streams.Passes }},
	{"pattern", "issue pattern: read or write-read", func(s *TimingSetup) any { return &s.Model.Streams.Pattern }},
	{"layout", "streams' buffers in physical memory: contiguous (aligned regions) or scattered (4 KiB pages on shuffled frames); default scattered under a CXL device (--memory dram), contiguous under ideal",
		func(s *TimingSetup) any { return &s.Model.Streams.Layout }},
	{"llc-mib", "LLC size (MiB)", func(s *TimingSetup) any { return &s.Model.LLC.SizeMiB }},
	{"llc-ways", "LLC associativity", func(s *TimingSetup) any { return &s.Model.LLC.Ways }},
	{"llc-latency-ns", "LLC lookup latency (ns)", func(s *TimingSetup) any { return &s.Model.LLC.HitLatencyNS }},
	{"bandwidth-gibps", "CXL link bandwidth per stack (GiB/s)", func(s *TimingSetup) any { return &s.Model.Link.BandwidthGiBps }},
	{"share", "fraction of the link left to gradient lines (1 = healthy)", func(s *TimingSetup) any { return &s.Model.Link.Share }},
	{"latency-ns", "fixed memory-access latency (ns)", func(s *TimingSetup) any { return &s.Model.Memory.LatencyNS }},
	{"stacks", "controller stacks N", func(s *TimingSetup) any { return &s.Model.Controller.Stacks }},
	{"interleave-bytes", "address-interleaving granule across stacks (bytes)", func(s *TimingSetup) any { return &s.Model.Controller.InterleaveBytes }},
	{"stages", "aggregation pipeline stages", func(s *TimingSetup) any { return &s.Model.Controller.Stages }},
	{"clock-ghz", "controller clock (GHz)", func(s *TimingSetup) any { return &s.Model.Controller.ClockGHz }},
	{"initiation-cycles", "cycles between two lines entering the pipeline", func(s *TimingSetup) any { return &s.Model.Controller.InitiationCycles }},
	{"congested-share", "link share in the congested rows", func(s *TimingSetup) any { return &s.Experiments.CongestedShare }},
	{"step-ms", "training-step time for Fig. 3(d) (ms)", func(s *TimingSetup) any { return &s.Experiments.StepMS }},
	{"load-outstanding", "per-stream outstanding limits the loaded-latency curve sweeps", func(s *TimingSetup) any { return &s.Experiments.LoadOutstanding }},
}

// timingNonEmpty are the string flags for which "" is never a choice:
// --memory "" used to mean the default, so an empty value is refused
// rather than read as one.
var timingNonEmpty = []string{"memory", "link", "layout", "pattern", "cxl-device", "cxl-link", "dram-preset", "dram-protocol", "dram-page-policy", "dram-mapping", "dram-bank-hash"}

// AddTimingFlags registers the flags on fs with def's values as defaults.
func AddTimingFlags(fs *pflag.FlagSet, def TimingSetup) *TimingFlags {
	f := &TimingFlags{vals: def}
	for _, e := range timingFlagFields {
		switch p := e.field(&f.vals).(type) {
		case *int:
			fs.IntVar(p, e.name, *p, e.usage)
		case *float64:
			fs.Float64Var(p, e.name, *p, e.usage)
		case *string:
			fs.StringVar(p, e.name, *p, e.usage)
		case *[]int:
			fs.IntSliceVar(p, e.name, *p, e.usage)
		default:
			panic(fmt.Sprintf("experiments: timing flag --%s binds a %T", e.name, p))
		}
	}
	f.model = timing.AddFlags(fs, def.Model)
	return f
}

// Apply sets on s every flag the user set: first its own flags, then the
// model selectors and device flags (timing.Flags.Apply, which may refuse
// settings that do not apply to the chosen memory). An empty value of a
// flag of timingNonEmpty is a usage error naming the flag, refused before
// anything is set. It does not validate the result (TimingSetup.Validate).
func (f *TimingFlags) Apply(fs *pflag.FlagSet, s *TimingSetup) error {
	for _, name := range timingNonEmpty {
		if fl := fs.Lookup(name); fl != nil && fs.Changed(name) && fl.Value.String() == "" {
			return usage.Errorf("--%s is empty: give a value (see --help)", name)
		}
	}
	for _, e := range timingFlagFields {
		if fs.Changed(e.name) {
			reflect.ValueOf(e.field(s)).Elem().Set(reflect.ValueOf(e.field(&f.vals)).Elem())
		}
	}
	return f.model.Apply(fs, &s.Model)
}
