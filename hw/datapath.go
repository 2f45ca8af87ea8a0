package hw

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Datapath names one generated datapath: the paper's vote datapath (Vote,
// the zero value, so every Config keeps its meaning, module name and RTL),
// which answers identity, FP32 bypass, G-Binary and G-Ternary behind one
// mode latch, or the sum datapath of one integer-sum format of lowbit's
// registry, named by the format ("int8", "bfp8"). What a datapath
// generates, how it is driven and what it must answer come from its
// family (the unexported family interface: one implementation for the
// vote datapath, one for every sum format), so the generator, the
// co-simulation, the harnesses and the place-and-route wrapper are one
// mechanism for all of them.
type Datapath string

// Vote is the paper's datapath: decode | unpack | count | gate | select
// over the element-major sign packet (StageOps).
const Vote Datapath = ""

// family is what one datapath family supplies to the shared mechanism:
// its structure (depth, faults, validation, module name, RTL), its
// request ports (which drive the co-simulation line protocol, both
// harnesses and the place-and-route wrapper) and response width, its
// stimulus, and its oracle.
type family interface {
	// depth is the pipeline depth a Config gets when Stages is 0: the
	// vote datapath's default (DefaultStages), a sum datapath's fixed one.
	depth() int
	faults() []Fault
	// validate checks c (normalized) for this family.
	validate(c Config) error
	// moduleStem is the module name before its _w<width>_k<stages>.
	moduleStem() string
	// emit writes the module (c valid and normalized).
	emit(e *emitter, c Config)
	// inputs are the request ports after clk and rst, in the line
	// protocol's order; outWidth is out_data's width.
	inputs(c Config) []port
	outWidth(c Config) int
	// vectors returns n requests (corner cases first), the same for the
	// same seed; check rejects a stream the datapath cannot answer.
	vectors(c Config, n int, seed uint64) []Vector
	check(c Config, vs []Vector) error
	// expect returns, per input, the response out_data must hold
	// Latency() edges after it (nil where out_valid must stay low),
	// computed from lowbit's Ref twins.
	expect(c Config, vs []Vector) [][]byte
	// group returns two requests that each yield one response, driven
	// back to back by MeasureTiming, and the lines of each.
	group(c Config, a int) []Vector
	// workers is the worker count a result records (0 when the module
	// name already says it, as for the vote datapath).
	workers(c Config) int
}

// fam returns d's family; an unknown name has none (nil).
func (d Datapath) fam() family {
	if d == Vote {
		return voteFamily{}
	}
	if f, err := lowbit.ParseFormat(string(d)); err == nil && f.Sum() && f.String() == string(d) {
		return sumFamily{f}
	}
	return nil
}

// ModeDatapath returns the datapath that runs controller mode m: Vote for
// the paper's G-Binary and G-Ternary, the format's own sum datapath for an
// integer-sum mode. Identity and FP32 bypass enter no datapath: an error.
func ModeDatapath(m cxl.Mode) (Datapath, error) {
	f := m.Format()
	switch {
	case !m.LowBit():
		return "", fmt.Errorf("hw: %v enters no aggregation datapath", m)
	case f.Vote():
		return Vote, nil
	case f.Sum():
		return Datapath(f.String()), nil
	}
	return "", fmt.Errorf("hw: no datapath family aggregates %v", f)
}

// Datapaths lists every datapath: Vote, then one sum datapath per
// integer-sum format in lowbit's registry order.
func Datapaths() []Datapath {
	ds := []Datapath{Vote}
	for _, f := range lowbit.Formats() {
		if f.Sum() {
			ds = append(ds, Datapath(f.String()))
		}
	}
	return ds
}

// ParseDatapath accepts "vote" (or "", the paper's datapath) or the name
// or an alias of a format: a vote format names Vote, an integer-sum format
// its sum datapath.
func ParseDatapath(s string) (Datapath, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" || t == "vote" {
		return Vote, nil
	}
	if f, err := lowbit.ParseFormat(t); err == nil && f != lowbit.FP32 {
		return ModeDatapath(cxl.Aggregate(f))
	}
	names := make([]string, 0, 3)
	for _, d := range Datapaths() {
		names = append(names, d.String())
	}
	return "", fmt.Errorf("unknown datapath %q (known: %s)", s, strings.Join(names, ", "))
}

// String is the datapath's name: "vote" for the paper's, the format's
// name for a sum datapath.
func (d Datapath) String() string {
	if d == Vote {
		return "vote"
	}
	return string(d)
}

// Paper reports whether the paper evaluates d (the vote datapath); the
// sum datapaths are extensions and are named as such wherever they
// appear.
func (d Datapath) Paper() bool { return d == Vote }

// Depth is d's pipeline depth when Config.Stages is 0: the paper's five
// for the vote datapath (whose depth Config.Stages may set from 1 to
// MaxStages), and a sum datapath's fixed depth, from its structure: input
// | accumulate | saturate (3), and for a format with block exponents
// input (+ shift k) | round | shift | accumulate | saturate (5: the
// alignment's rounding add and barrel shift take a stage each). An
// unknown datapath has depth 0.
func (d Datapath) Depth() int {
	if f := d.fam(); f != nil {
		return f.depth()
	}
	return 0
}

// Faults returns the faults the datapath can inject (tests only).
func (d Datapath) Faults() []Fault {
	if f := d.fam(); f != nil {
		return f.faults()
	}
	return nil
}

// OutWidth is the response width in bits: the line width for the vote
// datapath, twice it (one int16 per element) for a sum datapath.
func (c Config) OutWidth() int {
	c = c.Normalized()
	if f := c.Datapath.fam(); f != nil {
		return f.outWidth(c)
	}
	return c.Width
}
