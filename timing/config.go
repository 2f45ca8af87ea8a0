package timing

import (
	"math"
	"strings"

	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/internal/field"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/usage"
)

// Config is the timing model's configuration. Every default comes from the
// paper (section named on the field) or is an assumption marked as such;
// DefaultConfig returns them. YAML field names are the snake_case tags.
type Config struct {
	Streams StreamsConfig `yaml:"streams" json:"streams"`
	LLC     LLCConfig     `yaml:"llc" json:"llc"`
	Link    LinkConfig    `yaml:"link" json:"link"`
	Memory  MemoryConfig  `yaml:"memory" json:"memory"`
	// Device is the CXL memory device of each stack under the detailed
	// models (memory.model dram, link.model cxl): its host stages, link,
	// protocol stages, queues and DRAM (cxldev.Config).
	Device     cxldev.Config    `yaml:"device" json:"device"`
	Controller ControllerConfig `yaml:"controller" json:"controller"`
}

// StreamsConfig describes the W request streams (one per virtual worker).
type StreamsConfig struct {
	// Count is W. Paper Sec. 4: eight virtual workers.
	Count int `yaml:"count" json:"count"`
	// Outstanding is each stream's limit on requests in flight.
	// Assumption: 16 (the paper gives no MSHR count); it keeps the default
	// 8-stream load below the healthy link's capacity. Limit: Count x
	// Outstanding at most MaxInFlight.
	Outstanding int `yaml:"outstanding" json:"outstanding"`
	// IssueIntervalNS is the minimum time between two issues of one
	// stream. Assumption: 0 (back-to-back).
	IssueIntervalNS float64 `yaml:"issue_interval_ns" json:"issue_interval_ns"`
	// FootprintMiB is each stream's active gradient-buffer footprint.
	// Paper Sec. 4: 2 MiB per GPU (16 MiB across eight workers). At least
	// one 64-byte line: a run that reads nothing measures nothing.
	FootprintMiB float64 `yaml:"footprint_mib" json:"footprint_mib"`
	// Passes is how many times each stream sweeps its footprint.
	// Assumption: 2, so that reuse, and hence the LLC, matters at all.
	Passes int `yaml:"passes" json:"passes"`
	// Pattern is "read" (default: the aggregate reads) or "write-read".
	Pattern string `yaml:"pattern" json:"pattern"`
	// Layout places the streams' buffers in physical memory (the address
	// the LLC, the stack interleave and the DRAM mapping see).
	// "" (the default) is the memory model's own: scattered under dram
	// (what an OS with 4 KiB pages gives a buffer; the contiguous layout's
	// equal aligned sweeps lock onto shared banks there, an artifact of the
	// synthetic workload, so it is kept as an ablation row), contiguous
	// under ideal (whose fixed-latency memory has no banks, and the
	// paper states no layout); see Config.StreamLayout.
	// "contiguous": stream s's
	// region starts at s x footprint, so at the default 2 MiB footprint
	// every region is 2 MiB-aligned, as buffers on 2 MiB huge pages are,
	// and equal offsets of the W regions are equal offsets modulo the
	// DRAM's row-set. "scattered": every 4 KiB page of that address range
	// lands on a frame drawn by a fixed-seed permutation of the range's
	// frames, as an OS with 4 KiB pages places a buffer's pages. See
	// NOTES.md's Timing section for what the choice does under dram (the
	// scale-out bank lock of equal aligned sweeps).
	Layout string `yaml:"layout" json:"layout"`
}

// StreamsConfig.Layout values, and the largest address range (all
// streams' footprints) that scattered permutes: 16 GiB, a 16 MiB frame
// table.
const (
	MaxScatteredMiB  = 16384
	LayoutContiguous = "contiguous"
	LayoutScattered  = "scattered"
)

// LLCConfig describes the shared last-level cache.
type LLCConfig struct {
	// SizeMiB: paper Sec. 4, 8 MiB. Limit: MaxLLCMiB.
	SizeMiB float64 `yaml:"size_mib" json:"size_mib"`
	// Ways: assumption, 16.
	Ways int `yaml:"ways" json:"ways"`
	// HitLatencyNS is the lookup time paid by hits and misses alike.
	// Assumption: 10 ns (the paper gives none).
	HitLatencyNS float64 `yaml:"hit_latency_ns" json:"hit_latency_ns"`
}

// LinkConfig describes each stack's CXL link.
type LinkConfig struct {
	// BandwidthGiBps: paper Sec. 4, 128 GiB/s per direction.
	BandwidthGiBps float64 `yaml:"bandwidth_gibps" json:"bandwidth_gibps"`
	// Share is the fraction of the bandwidth left to gradient lines: 1 is
	// healthy; below 1 models background traffic holding the rest
	// (congestion). Default 1. Under the cxl link it scales the flit rate.
	Share float64 `yaml:"share" json:"share"`
	// Model is "gate" (the paper's abstraction: one bandwidth gate of
	// BandwidthGiBps on the response direction, nothing else), "cxl" (the
	// device's two-way flit link and host and device stages, device.link)
	// or "auto" (gate under the ideal memory, cxl under dram). Default
	// auto.
	Model string `yaml:"model" json:"model"`
}

// MemoryConfig describes the CXL-attached memory.
type MemoryConfig struct {
	// Model is "ideal" (the paper's abstraction: LatencyNS fixed, unlimited
	// concurrency) or "dram" (the device's DRAM channels and scheduler,
	// device.media). Default ideal.
	Model string `yaml:"model" json:"model"`
	// LatencyNS: paper Sec. 4, 200 ns fixed access latency (ideal only).
	LatencyNS float64 `yaml:"latency_ns" json:"latency_ns"`
	// RefreshPhases is how many refresh schedules a pair (RunPair and
	// every driver built on it) averages over when the DRAM refreshes on
	// its periodic schedule (device.media.refresh_seed 0): both runs of
	// the pair run under each of the dithered schedules refresh_seed
	// 1..RefreshPhases, and the pair reports the mean runs
	// (Pair.PhaseExposed keeps each schedule's exposure). The mean over
	// refresh phases is the exposure that does not depend on where
	// refresh falls; for one stream with one outstanding read it is the
	// datapath's latency per read (TestPairExposureIsDatapath). 0 reports
	// the single pair under the periodic schedule (the phase-locked
	// ablation). A nonzero refresh_seed runs that one schedule. Default 8
	// (one schedule's exposure per read scatters by about 0.4 ns at
	// 16,384 lines; the mean of 8 by about 0.14 ns).
	RefreshPhases int `yaml:"refresh_phases" json:"refresh_phases"`
}

// Memory and link model names.
const (
	MemoryIdeal = "ideal"
	MemoryDRAM  = "dram"
	LinkAuto    = "auto"
	LinkGate    = "gate"
	LinkCXL     = "cxl"
)

// PresetIdeal is the paper's stated abstraction (fixed-latency memory, one
// gate); every other model preset is a CXL device (cxldev.Devices).
const PresetIdeal = "ideal"

// Presets lists the model presets: ideal, then the CXL devices.
func Presets() []string { return append([]string{PresetIdeal}, cxldev.Names()...) }

// PresetConfig returns DefaultConfig under a model preset: ideal, or a
// CXL device (memory.model dram behind that device's stages and link).
func PresetConfig(name string) (Config, error) {
	c := DefaultConfig()
	if name == PresetIdeal {
		return c, nil
	}
	p, err := cxldev.Lookup(name)
	if err != nil {
		return Config{}, usage.Errorf("unknown timing preset %q (want %s)", name, strings.Join(Presets(), ", "))
	}
	c.Memory.Model, c.Device = MemoryDRAM, p.Config
	return c, nil
}

// StreamLayout returns the effective streams.layout: the configured one,
// or for "" the memory model's default (scattered under dram, contiguous
// under ideal).
func (c Config) StreamLayout() string {
	switch {
	case c.Streams.Layout != "":
		return c.Streams.Layout
	case c.Memory.Model == MemoryDRAM:
		return LayoutScattered
	}
	return LayoutContiguous
}

// LinkModel returns the effective link model, gate or cxl.
func (c Config) LinkModel() string {
	if c.Link.Model == LinkAuto || c.Link.Model == "" {
		if c.Memory.Model == MemoryDRAM {
			return LinkCXL
		}
		return LinkGate
	}
	return c.Link.Model
}

// Detailed reports whether the configuration needs the event-driven
// device (DRAM memory or the two-way link) rather than the ideal stack.
func (c Config) Detailed() bool { return c.Memory.Model == MemoryDRAM || c.LinkModel() == LinkCXL }

// ControllerConfig describes the controller stacks and their datapath.
type ControllerConfig struct {
	// Stacks is N, the number of controller stacks; paper Sec. 5.3 sweeps
	// 1, 2, 4, 8. Default 1 (one shared controller).
	Stacks int `yaml:"stacks" json:"stacks"`
	// InterleaveBytes is the address-interleaving granule across stacks.
	// Assumption: 64 (one line).
	InterleaveBytes int `yaml:"interleave_bytes" json:"interleave_bytes"`
	// Stages: paper Sec. 3, five controller cycles.
	Stages int `yaml:"stages" json:"stages"`
	// ClockGHz: paper Sec. 3/10, 2 GHz.
	ClockGHz float64 `yaml:"clock_ghz" json:"clock_ghz"`
	// InitiationCycles is how often a new line may enter the datapath:
	// paper Sec. 3, 512 bits wide = one 64-byte line per cycle. Capped at
	// Stages (a line never blocks the entry longer than the whole pipeline).
	InitiationCycles int `yaml:"initiation_cycles" json:"initiation_cycles"`
}

// DefaultConfig returns the paper's default configuration (Sec. 4) with
// the assumptions documented on each field. Its device (used under
// memory.model dram or link.model cxl) is the projection-pcie6-x16
// preset.
func DefaultConfig() Config {
	p, _ := cxldev.Lookup("projection-pcie6-x16")
	return Config{
		Streams: StreamsConfig{Count: 8, Outstanding: 16, FootprintMiB: 2, Passes: 2, Pattern: "read"},
		LLC:     LLCConfig{SizeMiB: 8, Ways: 16, HitLatencyNS: 10},
		Link:    LinkConfig{BandwidthGiBps: 128, Share: 1, Model: LinkAuto},
		Memory:  MemoryConfig{Model: MemoryIdeal, LatencyNS: 200, RefreshPhases: 8},
		Device:  p.Config,
		Controller: ControllerConfig{Stacks: 1, InterleaveBytes: 64, Stages: 5, ClockGHz: 2,
			InitiationCycles: 1},
	}
}

// MaxLinesPerRun bounds the lines one run may simulate (W x footprint x
// passes x 2 for write-read), so that a configuration cannot ask for an
// unbounded run.
const MaxLinesPerRun = 1 << 30

// MaxLLCMiB bounds llc.size_mib: the cache's tag arrays are allocated
// whole, and Table 4 at 512 MiB peaks at 0.64 GB resident (measured,
// `nfabric timing table4 --llc-mib 512`; 4096 MiB took 4.6 GB).
const MaxLLCMiB = 512

// MaxInFlight bounds streams.count x streams.outstanding (and the same
// product over experiments.stream_counts and experiments.load_outstanding):
// 1024 x 1024 requests in flight peak at 0.14 GB resident and 1.2 s for a
// one-line-per-stream run (measured); 4096 x 65536 took 2 GB and minutes.
const MaxInFlight = 1 << 20

// Validate returns an error naming the first invalid field (YAML path,
// e.g. "streams.count").
func (c Config) Validate() error {
	s := c.Streams
	if err := field.Int("streams.count", s.Count, 1, 4096); err != nil {
		return err
	}
	if err := field.Int("streams.outstanding", s.Outstanding, 1, 1<<16); err != nil {
		return err
	}
	if err := field.Float("streams.issue_interval_ns", s.IssueIntervalNS, 0, 1e6); err != nil {
		return err
	}
	if err := field.Float("streams.footprint_mib", s.FootprintMiB, 0, 1<<16); err != nil {
		return err
	}
	if s.FootprintMiB < float64(LineBytes)/(1<<20) {
		return usage.Errorf("streams.footprint_mib: must be at least one 64-byte line (%g MiB), got %g: the run would read nothing", float64(LineBytes)/(1<<20), s.FootprintMiB)
	}
	if s.Layout != "" && s.Layout != LayoutContiguous && s.Layout != LayoutScattered {
		return usage.Errorf("streams.layout: want %s or %s, got %q", LayoutContiguous, LayoutScattered, s.Layout)
	}
	if mib := float64(s.Count) * s.FootprintMiB; c.StreamLayout() == LayoutScattered && mib > MaxScatteredMiB {
		return usage.Errorf("streams.layout scattered: streams.count x streams.footprint_mib = %g MiB, above the limit %d MiB (the frame table)", mib, MaxScatteredMiB)
	}
	if n := int64(s.Count) * int64(s.Outstanding); n > MaxInFlight {
		return usage.Errorf("streams.count x streams.outstanding = %d requests in flight, above the limit %d", n, MaxInFlight)
	}
	if b := s.FootprintMiB * (1 << 20); b != math.Trunc(b) || int64(b)%LineBytes != 0 {
		return usage.Errorf("streams.footprint_mib: %g MiB is not a whole number of 64-byte lines", s.FootprintMiB)
	}
	if err := field.Int("streams.passes", s.Passes, 1, 1<<20); err != nil {
		return err
	}
	p, err := ParsePattern(s.Pattern)
	if err != nil {
		return usage.Errorf("streams.pattern: %w", err)
	}
	lines := float64(s.Count) * s.FootprintMiB * (1 << 20) / LineBytes * float64(s.Passes)
	if p == PatternWriteRead {
		lines *= 2
	}
	if lines > MaxLinesPerRun {
		return usage.Errorf("streams: count x footprint x passes = %.0f lines per run, above the limit %d", lines, MaxLinesPerRun)
	}
	l := c.LLC
	if err := field.Int("llc.ways", l.Ways, 1, 1024); err != nil {
		return err
	}
	if err := field.Float("llc.size_mib", l.SizeMiB, 1.0/(1<<20), MaxLLCMiB); err != nil {
		return err
	}
	if b := l.SizeMiB * (1 << 20); b != math.Trunc(b) || int64(b)%(int64(l.Ways)*LineBytes) != 0 {
		return usage.Errorf("llc.size_mib: %g MiB is not a whole number of sets of %d ways x 64 B", l.SizeMiB, l.Ways)
	}
	if err := field.Float("llc.hit_latency_ns", l.HitLatencyNS, 0, 1e6); err != nil {
		return err
	}
	if err := field.Float("link.bandwidth_gibps", c.Link.BandwidthGiBps, 1e-3, 1e6); err != nil {
		return err
	}
	if !field.Finite(c.Link.Share) || c.Link.Share <= 0 || c.Link.Share > 1 {
		return usage.Errorf("link.share: must be in (0, 1], got %g", c.Link.Share)
	}
	if err := field.Float("memory.latency_ns", c.Memory.LatencyNS, 0, 1e6); err != nil {
		return err
	}
	if err := field.Int("memory.refresh_phases", c.Memory.RefreshPhases, 0, 1024); err != nil {
		return err
	}
	// The zero values ("") mean ideal and auto; the device block is
	// checked when it is used.
	if c.Memory.Model != "" {
		if err := field.OneOf("memory.model", c.Memory.Model, MemoryIdeal, MemoryDRAM); err != nil {
			return err
		}
	}
	if c.Link.Model != "" {
		if err := field.OneOf("link.model", c.Link.Model, LinkAuto, LinkGate, LinkCXL); err != nil {
			return err
		}
	}
	if c.Detailed() {
		if err := field.Under("device", c.Device.Validate()); err != nil {
			return err
		}
	}
	k := c.Controller
	if err := field.Int("controller.stacks", k.Stacks, 1, 1024); err != nil {
		return err
	}
	if k.InterleaveBytes < LineBytes || k.InterleaveBytes > 1<<30 || k.InterleaveBytes%LineBytes != 0 {
		return usage.Errorf("controller.interleave_bytes: must be a multiple of 64 in [64, 2^30], got %d", k.InterleaveBytes)
	}
	if err := field.Int("controller.stages", k.Stages, 0, 1<<16); err != nil {
		return err
	}
	if err := field.Float("controller.clock_ghz", k.ClockGHz, 1e-3, 1000); err != nil {
		return err
	}
	if err := field.Int("controller.initiation_cycles", k.InitiationCycles, 0, 1<<16); err != nil {
		return err
	}
	return nil
}

// Cycle returns the controller clock period, rounded to a picosecond
// (exact for 2 GHz: 500 ps).
func (c Config) Cycle() sim.Time {
	t := sim.Time(math.Round(1000 / c.Controller.ClockGHz))
	if t < 1 {
		t = 1
	}
	return t
}

// PipelineLatency returns Stages x Cycle, the datapath's own time per line.
func (c Config) PipelineLatency() sim.Time { return sim.Time(c.Controller.Stages) * c.Cycle() }

// LinkBytesPerSec returns the effective per-stack gate bandwidth:
// bandwidth x share, in bytes per second (at least 1).
func (c Config) LinkBytesPerSec() int64 {
	b := int64(math.Round(c.Link.BandwidthGiBps * c.Link.Share * (1 << 30)))
	if b < 1 {
		b = 1
	}
	return b
}

// LinkInterval returns the exact per-line link (gate) interval in picoseconds as
// a float (465.66 ps at 128 GiB/s).
func (c Config) LinkInterval() float64 {
	return float64(LineBytes) * float64(sim.Second) / float64(c.LinkBytesPerSec())
}

// FootprintLines returns each stream's footprint in lines.
func (c Config) FootprintLines() int64 { return int64(c.Streams.FootprintMiB*(1<<20)) / LineBytes }
