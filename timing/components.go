package timing

import (
	"fmt"
	"regexp"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// LineBytes is the CXL cache-line (flit payload) size the whole model moves:
// 64 bytes (paper Sec. 3, "64-byte CXL response granularity"), declared
// once in lowbit.
const LineBytes = lowbit.LineBytes

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])?(\.[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])?)*$`)

// mustName panics unless name is hierarchical like "Host[0].Stream[3]";
// names come from code, never from users, so a bad one is a programming
// error.
func mustName(name string) string {
	if !nameRE.MatchString(name) {
		panic(fmt.Sprintf("timing: invalid component name %q", name))
	}
	return name
}

// ---------------------------------------------------------------- LLC

// LLC is a tags-only, set-associative, LRU last-level cache shared by all
// request streams (paper Sec. 4: 8 MiB). It holds no data: Access only
// decides hit or miss and updates replacement state at the instant of the
// lookup. Writes allocate without fetching (full-line writes) and mark the
// line dirty; evicting a dirty line counts a writeback.
type LLC struct {
	name    string
	sets    uint64
	ways    int
	latency Time
	tags    []uint64 // line address + 1; 0 is an empty way
	stamp   []uint64 // LRU: larger is more recent
	dirty   []bool
	clock   uint64
	// Hits, Misses and Writebacks count accesses since Build.
	Hits, Misses, Writebacks int64
	// victim is the line address of the dirty line the last Access
	// evicted; hasVictim says whether it evicted one.
	victim    uint64
	hasVictim bool
}

// LLCBuilder builds LLCs. Its zero value is not useful: start from
// MakeLLCBuilder, whose defaults are the paper's 8 MiB with our assumed
// 16 ways and 10 ns lookup.
type LLCBuilder struct {
	size    int64
	ways    int
	latency Time
}

// MakeLLCBuilder returns a builder with the defaults of DefaultConfig.
func MakeLLCBuilder() LLCBuilder {
	d := DefaultConfig().LLC
	return LLCBuilder{size: int64(d.SizeMiB * (1 << 20)), ways: d.Ways, latency: FromNS(d.HitLatencyNS)}
}

// WithSize returns a copy with capacity bytes (a multiple of 64*ways).
func (b LLCBuilder) WithSize(bytes int64) LLCBuilder { b.size = bytes; return b }

// WithWays returns a copy with the given associativity.
func (b LLCBuilder) WithWays(w int) LLCBuilder { b.ways = w; return b }

// WithLatency returns a copy whose lookups (hit or miss) take lat.
func (b LLCBuilder) WithLatency(lat Time) LLCBuilder { b.latency = lat; return b }

// Build returns an empty cache. It panics on an impossible geometry;
// Config.Validate rejects those before a user's values get here.
func (b LLCBuilder) Build(name string) *LLC {
	if b.ways <= 0 || b.size <= 0 || b.size%(int64(b.ways)*LineBytes) != 0 {
		panic(fmt.Sprintf("timing: LLC %s: size %d not a positive multiple of %d ways x 64 B", name, b.size, b.ways))
	}
	sets := b.size / (int64(b.ways) * LineBytes)
	n := sets * int64(b.ways)
	return &LLC{name: mustName(name), sets: uint64(sets), ways: b.ways, latency: b.latency,
		tags: make([]uint64, n), stamp: make([]uint64, n), dirty: make([]bool, n)}
}

// Name returns the component's hierarchical name.
func (c *LLC) Name() string { return c.name }

// Latency is the lookup time paid by every access, hit or miss.
func (c *LLC) Latency() Time { return c.latency }

// Access looks up the line holding addr, allocates it on a miss (evicting
// the least recently used way) and reports whether it hit.
func (c *LLC) Access(addr uint64, write bool) bool {
	line := addr / LineBytes
	base := int(line%c.sets) * c.ways
	tag := line + 1
	c.clock++
	tags := c.tags[base : base+c.ways]
	victim, oldest := 0, ^uint64(0)
	for i, t := range tags {
		if t == tag {
			c.hasVictim = false
			c.stamp[base+i] = c.clock
			if write {
				c.dirty[base+i] = true
			}
			c.Hits++
			return true
		}
		if s := c.stamp[base+i]; s < oldest {
			victim, oldest = i, s
		}
	}
	c.Misses++
	v := base + victim
	c.hasVictim = false
	if c.tags[v] != 0 && c.dirty[v] {
		c.Writebacks++
		c.victim, c.hasVictim = (c.tags[v]-1)*LineBytes, true
	}
	c.tags[v] = tag
	c.stamp[v] = c.clock
	c.dirty[v] = write
	return false
}

// Victim returns the byte address of the dirty line the last Access
// evicted, if it evicted one.
func (c *LLC) Victim() (addr uint64, ok bool) { return c.victim, c.hasVictim }

// ---------------------------------------------------------------- Link

// Link is the CXL link modelled as a bandwidth gate (paper Sec. 3): a FIFO
// server that spaces cache-line transfers by LineBytes/bandwidth. At
// 128 GiB/s the interval is 2^-31 s = 465.661... ps; the gate keeps the
// fractional picoseconds as an exact remainder, so a train of n
// back-to-back lines that starts at an idle gate at t ends at exactly
// t + round(n * 64 B / bandwidth) (half rounds up), and the long-run
// throughput equals the bandwidth with no rounding drift.
type Link struct {
	name      string
	q, r, den int64 // interval = q + r/den picoseconds
	free      Time  // the gate is busy until free
	rem       int64 // accumulated r/den fraction, in [0, den)
	// Lines counts transfers; Busy sums their service time (rounded down).
	Lines int64
	Busy  Time
	// Wait sums the time lines spent queued in front of the gate.
	Wait Time
}

// LinkBuilder builds bandwidth gates. Start from MakeLinkBuilder.
type LinkBuilder struct {
	bytesPerSec int64
}

// MakeLinkBuilder returns a builder with the paper's 128 GiB/s.
func MakeLinkBuilder() LinkBuilder { return LinkBuilder{bytesPerSec: 128 << 30} }

// WithBandwidth returns a copy with the given effective bandwidth in bytes
// per second (> 0).
func (b LinkBuilder) WithBandwidth(bytesPerSec int64) LinkBuilder {
	b.bytesPerSec = bytesPerSec
	return b
}

// Build returns an idle gate.
func (b LinkBuilder) Build(name string) *Link {
	if b.bytesPerSec <= 0 {
		panic(fmt.Sprintf("timing: link %s: bandwidth %d B/s", name, b.bytesPerSec))
	}
	num := int64(LineBytes) * int64(Second)
	return &Link{name: mustName(name), q: num / b.bytesPerSec, r: num % b.bytesPerSec, den: b.bytesPerSec}
}

// Name returns the component's hierarchical name.
func (l *Link) Name() string { return l.name }

// Interval returns the per-line gate interval rounded down to a picosecond.
func (l *Link) Interval() Time { return Time(l.q) }

// Accept queues a line that reaches the gate at arrive and returns when its
// transfer ends. Lines are served in the order Accept is called (an in-order
// response path).
func (l *Link) Accept(arrive Time) Time {
	if arrive > l.free {
		// Idle gate: a new back-to-back train starts. Starting the fraction
		// at one half rounds every train end to the nearest picosecond.
		l.free, l.rem = arrive, l.den/2
	} else {
		l.Wait += l.free - arrive
	}
	start := l.free
	l.free += Time(l.q)
	l.rem += l.r
	if l.rem >= l.den {
		l.free++
		l.rem -= l.den
	}
	l.Lines++
	l.Busy += l.free - start
	return l.free
}

// ---------------------------------------------------------------- Pipeline

// Pipeline is the controller's k-stage low-bit aggregation datapath (paper
// Sec. 3: five stages at 2 GHz, 512 bits = one line per cycle). A line
// entering at t leaves at t + stages*cycle; a new line may enter every
// initiation interval (one cycle by default), so the datapath sustains one
// 64-byte line per cycle: 128 GB/s at 2 GHz, slightly below the link's
// 128 GiB/s (137.4 GB/s). Lines may enter between clock edges (no
// clock-edge alignment); see the package doc.
type Pipeline struct {
	name     string
	latency  Time
	interval Time
	free     Time
	// Lines counts lines through the datapath; Wait sums their queueing in
	// front of it.
	Lines int64
	Wait  Time
}

// PipelineBuilder builds aggregation pipelines. Start from
// MakePipelineBuilder.
type PipelineBuilder struct {
	stages, initCycles int
	cycle              Time
}

// MakePipelineBuilder returns the paper's 5 stages at 2 GHz (500 ps cycle),
// one line per cycle.
func MakePipelineBuilder() PipelineBuilder {
	return PipelineBuilder{stages: 5, initCycles: 1, cycle: 500 * Picosecond}
}

// WithStages returns a copy with k >= 0 stages (0 is a wire).
func (b PipelineBuilder) WithStages(k int) PipelineBuilder { b.stages = k; return b }

// WithCycle returns a copy with the given clock period.
func (b PipelineBuilder) WithCycle(c Time) PipelineBuilder { b.cycle = c; return b }

// WithInitiationCycles returns a copy accepting a new line every n cycles
// (capped at the number of stages).
func (b PipelineBuilder) WithInitiationCycles(n int) PipelineBuilder { b.initCycles = n; return b }

// Build returns an empty pipeline.
func (b PipelineBuilder) Build(name string) *Pipeline {
	if b.stages < 0 || b.initCycles < 0 || b.cycle <= 0 {
		panic(fmt.Sprintf("timing: pipeline %s: stages %d, initiation %d, cycle %v", name, b.stages, b.initCycles, b.cycle))
	}
	// A line never blocks the entry for longer than it takes to cross the
	// whole pipeline, so the initiation interval is capped at the depth
	// (0 stages is a plain wire).
	return &Pipeline{name: mustName(name), latency: Time(b.stages) * b.cycle, interval: Time(min(b.initCycles, b.stages)) * b.cycle}
}

// Name returns the component's hierarchical name.
func (p *Pipeline) Name() string { return p.name }

// Latency returns stages*cycle, the pipeline's own time per line.
func (p *Pipeline) Latency() Time { return p.latency }

// Accept enters a line that reaches the datapath at arrive and returns when
// it leaves the last stage. Lines enter in the order Accept is called.
func (p *Pipeline) Accept(arrive Time) Time {
	start := arrive
	if p.free > start {
		p.Wait += p.free - start
		start = p.free
	}
	p.free = start + p.interval
	p.Lines++
	return start + p.latency
}

// ---------------------------------------------------------------- Stack

// Stack is one CXL controller stack: a request queue, the fixed-latency
// memory access (paper Sec. 4: 200 ns, unlimited concurrency), the
// aggregation pipeline on the read-response path, and the stack's link
// bandwidth gate. Identity reads bypass the pipeline; low-bit reads go
// through it; both then cross the gate in controller order.
type Stack struct {
	name       string
	memLatency Time
	Pipe       *Pipeline
	Link       *Link
	lastArrive Time
	// Reads counts lines the stack served.
	Reads int64
}

// StackBuilder builds controller stacks. Start from MakeStackBuilder.
type StackBuilder struct {
	memLatency Time
	pipe       PipelineBuilder
	link       LinkBuilder
}

// MakeStackBuilder returns the paper's defaults: 200 ns memory access,
// 5-stage 2 GHz pipeline, 128 GiB/s link.
func MakeStackBuilder() StackBuilder {
	return StackBuilder{memLatency: 200 * Nanosecond, pipe: MakePipelineBuilder(), link: MakeLinkBuilder()}
}

// WithMemLatency returns a copy with the given fixed access latency.
func (b StackBuilder) WithMemLatency(t Time) StackBuilder { b.memLatency = t; return b }

// WithPipeline returns a copy building its datapath with p.
func (b StackBuilder) WithPipeline(p PipelineBuilder) StackBuilder { b.pipe = p; return b }

// WithLink returns a copy building its gate with l.
func (b StackBuilder) WithLink(l LinkBuilder) StackBuilder { b.link = l; return b }

// Build returns an idle stack whose parts are named name.Pipe and
// name.Link.
func (b StackBuilder) Build(name string) *Stack {
	if b.memLatency < 0 {
		panic(fmt.Sprintf("timing: stack %s: memory latency %v", name, b.memLatency))
	}
	return &Stack{name: mustName(name), memLatency: b.memLatency,
		Pipe: b.pipe.Build(name + ".Pipe"), Link: b.link.Build(name + ".Link")}
}

// Name returns the component's hierarchical name.
func (s *Stack) Name() string { return s.name }

// Accept serves a read that reaches the controller at arrive in
// controller mode m and returns when its response has crossed the link;
// the read crosses the aggregation datapath when m does
// (cxl.Mode.LowBit). Arrivals must come in nondecreasing time order (the
// model guarantees it; a violation panics).
func (s *Stack) Accept(arrive Time, m cxl.Mode) Time {
	if arrive < s.lastArrive {
		panic("timing: controller arrivals out of time order")
	}
	s.lastArrive = arrive
	s.Reads++
	t := arrive + s.memLatency
	if m.LowBit() {
		t = s.Pipe.Accept(t)
	}
	return s.Link.Accept(t)
}
