package hw

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Datapath names which datapath a Config generates: the paper's low-bit
// datapath (identity, FP32 bypass, G-Binary, G-Ternary behind one mode
// latch) or one of the conservative formats' sum datapaths
// (/work/notes/FORMATS-SPEC.md), named as the controller mode that runs
// them.
type Datapath string

const (
	// LowBit is the paper's datapath (the zero value, so every existing
	// Config keeps its meaning, module name and RTL).
	LowBit Datapath = ""
	// Int8Sum is the INT8 format's transform (mode int8-sum): a lane-wise
	// exact integer sum of W worker lines, saturated once to int16.
	Int8Sum Datapath = "int8-sum"
	// BFP8Sum is the BFP8 format's transform (mode bfp8-sum): a lane-wise
	// exponent max over W exponent lines, then per block an alignment of
	// each worker's mantissas to the block maximum and a saturated sum.
	BFP8Sum Datapath = "bfp8-sum"
)

// Datapaths lists the datapaths, the paper's first.
var Datapaths = []Datapath{LowBit, Int8Sum, BFP8Sum}

// SumDatapaths lists the conservative formats' sum datapaths.
var SumDatapaths = []Datapath{Int8Sum, BFP8Sum}

// ParseDatapath accepts "lowbit" (also "" and "gbinary", the paper's
// datapath), "int8-sum" and "bfp8-sum".
func ParseDatapath(s string) (Datapath, error) {
	switch t := strings.ToLower(strings.TrimSpace(s)); t {
	case "", "lowbit", "gbinary", "g-binary":
		return LowBit, nil
	case string(Int8Sum), string(BFP8Sum):
		return Datapath(t), nil
	}
	return "", fmt.Errorf("unknown datapath %q (known: lowbit, int8-sum, bfp8-sum)", s)
}

// String is the datapath's name ("lowbit" for the paper's).
func (d Datapath) String() string {
	if d == LowBit {
		return "lowbit"
	}
	return string(d)
}

// IsSum reports whether d is a conservative format's sum datapath.
func (d Datapath) IsSum() bool { return d == Int8Sum || d == BFP8Sum }

// Depth is a sum datapath's fixed pipeline depth: int8-sum registers
// input | accumulate | saturate (3), bfp8-sum input | round | shift |
// accumulate | saturate (5: its alignment's rounding add and barrel shift
// take a stage each). The low-bit datapath's depth is Config.Stages.
func (d Datapath) Depth() int {
	switch d {
	case Int8Sum:
		return 3
	case BFP8Sum:
		return 5
	}
	return DefaultStages
}

// The sum datapaths' deliberate faults (tests only).
const (
	// FaultWrapSum returns the low 16 bits of the lane sum instead of
	// saturating it (detectable only when the sum can leave int16, so
	// Validate requires more than 256 workers).
	FaultWrapSum Fault = "wrap-sum"
	// FaultZeroExtend zero-extends each int8 lane instead of sign-extending.
	FaultZeroExtend Fault = "zero-extend"
	// FaultKeepAcc adds an aggregate's first line to the previous
	// aggregate's sum instead of restarting from it.
	FaultKeepAcc Fault = "keep-acc"
	// FaultTruncShift aligns with a plain arithmetic shift (floor) instead
	// of round to nearest.
	FaultTruncShift Fault = "trunc-shift"
	// FaultCap7 caps the alignment shift at 7 instead of 8, so a mantissa
	// of magnitude 64 or more keeps a unit 8 or more exponents down.
	FaultCap7 Fault = "cap-7"
	// FaultUnsignedMax compares exponents as unsigned bytes in the max pass.
	FaultUnsignedMax Fault = "unsigned-max"
)

// Faults returns the faults the datapath can inject.
func (d Datapath) Faults() []Fault {
	switch d {
	case Int8Sum:
		return []Fault{FaultWrapSum, FaultZeroExtend, FaultKeepAcc}
	case BFP8Sum:
		return []Fault{FaultWrapSum, FaultTruncShift, FaultCap7, FaultUnsignedMax}
	}
	return Faults
}

// validateSum checks a sum datapath's configuration (c normalized).
func (c Config) validateSum() error {
	d := c.Datapath
	if !slices.Contains(Widths, c.Width) {
		return fmt.Errorf("%s: line width %d bits is not one of %v", d, c.Width, Widths)
	}
	if c.Stages != d.Depth() {
		return fmt.Errorf("%s: pipeline depth %d, but the datapath has a fixed depth of %d", d, c.Stages, d.Depth())
	}
	if c.Workers < 1 || c.Workers > lowbit.MaxWorkers {
		return fmt.Errorf("%s: workers %d out of range [1, %d]", d, c.Workers, lowbit.MaxWorkers)
	}
	if c.SplitCount {
		return fmt.Errorf("%s: the split count is a low-bit datapath option", d)
	}
	if c.Fault != FaultNone && !slices.Contains(d.Faults(), c.Fault) {
		return fmt.Errorf("%s: unknown fault %q (known: %v)", d, c.Fault, d.Faults())
	}
	if c.Fault == FaultWrapSum && c.AccBits() <= 16 {
		return fmt.Errorf("%s: fault %s needs more than 256 workers (with %d the sum never leaves int16)", d, c.Fault, c.Workers)
	}
	return nil
}

// AccBits is the width of a sum datapath's lane accumulator: the fewest
// two's-complement bits that hold any sum of Workers int8 values,
// [-128 W, 127 W], exactly: 8 + ceil(log2 W). The accumulator never wraps,
// so saturating it once to int16 at the end is the spec's "exact, then
// saturated once".
func (c Config) AccBits() int {
	w := c.Normalized().Workers
	a := 8
	for n := 1; n < w; n <<= 1 {
		a++
	}
	return a
}

// ExpGroups is the number of 64-element BFP8 blocks a line covers (at
// least one: a narrower line lies inside one block and shares its
// exponent): in_exp and in_emax carry one int8 per group.
func (c Config) ExpGroups() int { return max(1, c.Elements()/lowbit.BFPBlock) }

// OutWidth is the response width in bits: the line width for the low-bit
// datapath, twice it (one int16 per element) for the sum datapaths.
func (c Config) OutWidth() int {
	if c.Datapath.IsSum() {
		return 2 * c.Width
	}
	return c.Width
}
