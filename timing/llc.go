package timing

import (
	"github.com/neuronfabric/nfabric/timing/sim"

	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// LineBytes is the CXL cache-line (flit payload) size the whole model moves:
// 64 bytes (paper Sec. 3, "64-byte CXL response granularity"), declared
// once in lowbit.
const LineBytes = lowbit.LineBytes

// ---------------------------------------------------------------- LLC

// LLC is a tags-only, set-associative, LRU last-level cache shared by all
// request streams (paper Sec. 4: 8 MiB). It holds no data: Access only
// decides hit or miss and updates replacement state at the instant of the
// lookup. Writes allocate without fetching (full-line writes) and mark the
// line dirty; evicting a dirty line counts a writeback.
type LLC struct {
	name    string
	sets    uint64
	setMask uint64 // sets - 1 when sets is a power of two above 1, else 0
	ways    int
	latency sim.Time
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
	latency sim.Time
}

// MakeLLCBuilder returns a builder with the defaults of DefaultConfig.
func MakeLLCBuilder() LLCBuilder {
	d := DefaultConfig().LLC
	return LLCBuilder{size: int64(d.SizeMiB * (1 << 20)), ways: d.Ways, latency: sim.FromNS(d.HitLatencyNS)}
}

// WithSize returns a copy with capacity bytes (a multiple of 64*ways).
func (b LLCBuilder) WithSize(bytes int64) LLCBuilder { b.size = bytes; return b }

// WithWays returns a copy with the given associativity.
func (b LLCBuilder) WithWays(w int) LLCBuilder { b.ways = w; return b }

// WithLatency returns a copy whose lookups (hit or miss) take lat.
func (b LLCBuilder) WithLatency(lat sim.Time) LLCBuilder { b.latency = lat; return b }

// Build returns an empty cache. It panics on an impossible geometry;
// Config.Validate rejects those before a user's values get here.
func (b LLCBuilder) Build(name string) *LLC {
	if b.ways <= 0 || b.size <= 0 || b.size%(int64(b.ways)*LineBytes) != 0 {
		panic(fmt.Sprintf("timing: LLC %s: size %d not a positive multiple of %d ways x 64 B", name, b.size, b.ways))
	}
	sets := b.size / (int64(b.ways) * LineBytes)
	n := sets * int64(b.ways)
	c := &LLC{name: sim.MustName(name), sets: uint64(sets), ways: b.ways, latency: b.latency,
		tags: make([]uint64, n), stamp: make([]uint64, n), dirty: make([]bool, n)}
	if sets > 1 && sets&(sets-1) == 0 {
		c.setMask = uint64(sets - 1)
	}
	return c
}

// Name returns the component's hierarchical name.
func (c *LLC) Name() string { return c.name }

// Latency is the lookup time paid by every access, hit or miss.
func (c *LLC) Latency() sim.Time { return c.latency }

// Access looks up the line holding addr, allocates it on a miss (evicting
// the least recently used way) and reports whether it hit.
func (c *LLC) Access(addr uint64, write bool) bool {
	line := addr / LineBytes
	var set uint64
	if c.setMask != 0 {
		set = line & c.setMask // a power-of-two set count (every default): no division
	} else {
		set = line % c.sets
	}
	base := int(set) * c.ways
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
