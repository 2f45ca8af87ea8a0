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

// LowBit reports whether reads of aggregate views are transformed in m
// (G-Binary and G-Ternary).
func (m Mode) LowBit() bool { return m == GBinary || m == GTernary }

// Format is the lowbit payload format the mode aggregates: FP32 for
// Identity and FP32Bypass.
func (m Mode) Format() lowbit.Format {
	switch m {
	case GBinary:
		return lowbit.Binary
	case GTernary:
		return lowbit.Ternary
	}
	return lowbit.FP32
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
