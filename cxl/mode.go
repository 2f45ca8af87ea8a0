package cxl

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Mode is the value of a region's mode latch: what a read response returns
// (paper Table 2). Only the control path changes it (Core.SetMode).
//
// A mode is identity, FP32 bypass, or the aggregate of one payload format
// under that format's read-side transform (Aggregate): the paper's
// G-Binary and G-Ternary, and beyond the paper every further format of
// lowbit's registry (INT8, BFP8). What an aggregating mode implies (its
// region shape, view lines, exponent plane, bits) comes from its format's
// traits, so a format added to the registry has its mode without a line
// here.
type Mode uint8

const (
	// Identity returns the stored cache-line bytes exactly: the functional
	// read-back check.
	Identity Mode = iota
	// FP32Bypass returns the stored FP32 payload untouched; the software
	// collective reduces it. It is the warm-up, calibration and recovery
	// path. Bytes are as in Identity; only the accounting differs. It is
	// Aggregate(lowbit.FP32): FP32 is aggregated by the collective, not
	// the controller.
	FP32Bypass
	numModes = FP32Bypass + Mode(lowbit.NumFormats)
)

// NumModes is the number of modes; Mode values are 0 to NumModes-1.
const NumModes = int(numModes)

// Aggregate returns the mode whose reads return the aggregate of payload
// format f: the sign vote of G-Binary and G-Ternary (times the region's
// gate), the saturated lane sum of INT8 codes, the aligned sum of BFP8
// mantissas; FP32Bypass for lowbit.FP32 (the software collective reduces
// it). An invalid format gives an invalid mode (Valid reports false).
func Aggregate(f lowbit.Format) Mode {
	if !f.Valid() {
		return numModes
	}
	return FP32Bypass + Mode(f)
}

func (m Mode) String() string {
	switch {
	case m == Identity:
		return "identity"
	case m == FP32Bypass:
		return "fp32-bypass"
	case m.Valid():
		return m.Format().String()
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Valid reports whether m is identity, FP32 bypass or the aggregate of a
// format in lowbit's registry.
func (m Mode) Valid() bool { return m < numModes }

// Format is the payload format m aggregates: lowbit.FP32 for Identity and
// FP32Bypass (and for an invalid mode).
func (m Mode) Format() lowbit.Format {
	if m == Identity || !m.Valid() {
		return lowbit.FP32
	}
	return lowbit.Format(m - FP32Bypass)
}

// LowBit reports whether reads of aggregate views are transformed in m:
// whether m aggregates a low-bit format (any format but FP32: G-Binary,
// G-Ternary and, beyond the paper, INT8 and BFP8) through the
// controller's datapath.
func (m Mode) LowBit() bool { return m.Valid() && m.Format() != lowbit.FP32 }

// Sum reports whether m aggregates an integer-sum format (INT8, BFP8),
// whose region is shaped for its format (Region.Sum) and whose view lines
// hold lowbit.SumViewElements int16 lane sums.
func (m Mode) Sum() bool { return m.Format().Sum() }

// SumLines returns how many view lines one payload line reads back as in
// an integer-sum mode (2: 64 int8 codes in, 64 int16 sums out), and 0 for
// the other modes.
func (m Mode) SumLines() int {
	if !m.Sum() {
		return 0
	}
	return lowbit.LineBytes / lowbit.SumViewElements
}

// ExpPlane reports whether m's workers also write block exponents, read
// back through an exponent view (a format with lowbit block exponents:
// BFP8).
func (m Mode) ExpPlane() bool { return m.Format().BlockExponents() }

// Paper reports whether the paper's Table 2 has m; the aggregates of the
// formats beyond the paper are extensions and are named as such wherever
// they appear.
func (m Mode) Paper() bool { return m.Valid() && m.Format().Paper() }

// BitsPerElement returns the payload bits one worker sends per gradient
// element in mode m with G-Ternary gate g, under accounting a
// (lowbit.BitsPerElement of the mode's format).
func (m Mode) BitsPerElement(g lowbit.Gate, a lowbit.Accounting) float64 {
	return lowbit.BitsPerElement(m.Format(), g, a)
}

// ModeWriter writes a region's mode latch: all the control plane may do
// to a controller. *Controller and *Core satisfy it. Because the control
// plane holds only this interface, it cannot read or rewrite gradient
// payloads (paper Sec. 3: "the control path only writes mode metadata").
type ModeWriter interface {
	SetMode(id RegionID, m Mode, ts int64) error
}

// Modes lists the four modes of the paper's Table 2, in its order.
func Modes() []Mode {
	return []Mode{Identity, FP32Bypass, Aggregate(lowbit.Binary), Aggregate(lowbit.Ternary)}
}

// AllModes lists every mode: the paper's four, then the aggregates of the
// formats beyond the paper, in lowbit's registry order.
func AllModes() []Mode {
	ms := make([]Mode, numModes)
	for i := range ms {
		ms[i] = Mode(i)
	}
	return ms
}

// ParseMode accepts identity (id), fp32-bypass (fp32, bypass, fp32bypass)
// or the name or an alias of the format the mode aggregates
// (lowbit.ParseFormat: g-binary, binary, g-ternary, int8, bfp8, ...), in
// any case.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "identity", "id":
		return Identity, nil
	case "fp32-bypass", "bypass", "fp32bypass":
		return FP32Bypass, nil
	}
	if f, err := lowbit.ParseFormat(s); err == nil {
		return Aggregate(f), nil
	}
	names := make([]string, numModes)
	for i, m := range AllModes() {
		names[i] = m.String()
	}
	return 0, fmt.Errorf("unknown mode %q (want one of %s)", s, strings.Join(names, ", "))
}

// MarshalText writes the mode's name, so JSON and YAML show "g-binary"
// rather than a number.
func (m Mode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("cxl: invalid mode %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads a name ParseMode accepts.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
