package cxl

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Mode is the value of a region's mode latch: what a read response returns
// (paper Table 2). Only the control path changes it (Core.SetMode).
type Mode uint8

const (
	// Identity returns the stored cache-line bytes exactly: the functional
	// read-back check.
	Identity Mode = iota
	// FP32Bypass returns the stored FP32 payload untouched; the software
	// collective reduces it. It is the warm-up, calibration and recovery
	// path. Bytes are as in Identity; only the accounting differs.
	FP32Bypass
	// GBinary returns the majority-sign aggregate of the worker payloads.
	GBinary
	// GTernary returns the G-Binary aggregate times the region's zero gate.
	GTernary
	numModes
)

// NumModes is the number of modes; Mode values are 0 to NumModes-1.
const NumModes = int(numModes)

var modeNames = [...]string{Identity: "identity", FP32Bypass: "fp32-bypass", GBinary: "g-binary", GTernary: "g-ternary"}

func (m Mode) String() string {
	if m < numModes {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool { return m < numModes }

// modeTraits is the one table of what each mode implies for the rest of
// the system: the payload format the runtime writes and whether reads go
// through the low-bit aggregation datapath (the read-side transform, the
// timing model's aggregation stages). Every other vocabulary (training
// rules, the timing and replay models, traffic accounting) maps to a mode
// and reads these through the methods below.
var modeTraits = [numModes]struct {
	format   lowbit.Format
	datapath bool
}{
	Identity:   {lowbit.FP32, false},
	FP32Bypass: {lowbit.FP32, false},
	GBinary:    {lowbit.Binary, true},
	GTernary:   {lowbit.Ternary, true},
}

// LowBit reports whether reads of aggregate views are transformed in m
// (G-Binary and G-Ternary): whether the mode goes through the low-bit
// aggregation datapath.
func (m Mode) LowBit() bool { return m.Valid() && modeTraits[m].datapath }

// Format is the lowbit payload format the mode aggregates: FP32 for
// Identity and FP32Bypass.
func (m Mode) Format() lowbit.Format {
	if !m.Valid() {
		return lowbit.FP32
	}
	return modeTraits[m].format
}

// BitsPerElement returns the payload bits one worker sends per gradient
// element in mode m with G-Ternary gate g, under accounting a
// (lowbit.BitsPerElement of the mode's format).
func (m Mode) BitsPerElement(g lowbit.Gate, a lowbit.Accounting) float64 {
	return lowbit.BitsPerElement(m.Format(), g, a)
}

// ModeOf returns the mode that aggregates payload format f: FP32Bypass for
// FP32 (the software collective), GBinary, GTernary.
func ModeOf(f lowbit.Format) Mode {
	switch f {
	case lowbit.Binary:
		return GBinary
	case lowbit.Ternary:
		return GTernary
	}
	return FP32Bypass
}

// ModeWriter writes a region's mode latch: all the control plane may do
// to a controller. *Controller and *Core satisfy it. Because the control
// plane holds only this interface, it cannot read or rewrite gradient
// payloads (paper Sec. 3: "the control path only writes mode metadata").
type ModeWriter interface {
	SetMode(id RegionID, m Mode, ts int64) error
}

// Modes lists the four modes in Table 2 order.
func Modes() []Mode { return []Mode{Identity, FP32Bypass, GBinary, GTernary} }

// ParseMode accepts identity, fp32-bypass (or fp32, bypass), g-binary (or
// binary, gbinary) and g-ternary (or ternary, gternary), in any case.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "identity", "id":
		return Identity, nil
	case "fp32-bypass", "fp32", "bypass", "fp32bypass":
		return FP32Bypass, nil
	case "g-binary", "gbinary", "binary":
		return GBinary, nil
	case "g-ternary", "gternary", "ternary":
		return GTernary, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want identity, fp32-bypass, g-binary or g-ternary)", s)
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
