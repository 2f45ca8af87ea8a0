package cxl

import (
	"fmt"
	"slices"
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
	// Int8Sum goes beyond the paper: it returns the lane-wise integer sum
	// of the workers' lowbit.Int8 codes, saturated once to int16
	// (lowbit.SumInt8), on a region shaped for lowbit.Int8.
	Int8Sum
	// BFPSum goes beyond the paper: it aligns the workers' lowbit.BFP8
	// mantissas to each block's largest exponent and sums them
	// (lowbit.SumBFP8), on a region shaped for lowbit.BFP8.
	BFPSum
	numModes
)

// NumModes is the number of modes; Mode values are 0 to NumModes-1.
const NumModes = int(numModes)

func (m Mode) String() string {
	if m < numModes {
		return modeTraits[m].name
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Valid reports whether m is one of the modes in the table.
func (m Mode) Valid() bool { return m < numModes }

// modeTraits is the one table of what each mode implies for the rest of
// the system: its names, the payload format the runtime writes, whether
// reads go through the aggregation datapath (the read-side transform, the
// timing model's aggregation stages), how many view lines one payload
// line reads back as, and whether the region carries an exponent plane.
// Every other vocabulary (training rules, the timing and replay models,
// traffic accounting) maps to a mode and reads these through the methods
// below; adding a mode is one row here plus its transform in Core and its
// oracle in the reference model and Verify.
var modeTraits = [numModes]struct {
	name    string
	aliases []string
	format  lowbit.Format
	// datapath: reads of the region's aggregate view are transformed.
	datapath bool
	// sumLines is how many view lines one payload line of an integer-sum
	// mode reads back as: 64 int8 codes in, 64 int16 sums out, so 2. The
	// vote modes have 0: their layout decides (Region.RespLines).
	sumLines int
	// expPlane: workers also write block exponents, and the view has an
	// exponent window (BFPSum).
	expPlane bool
}{
	Identity:   {name: "identity", aliases: []string{"id"}, format: lowbit.FP32},
	FP32Bypass: {name: "fp32-bypass", aliases: []string{"fp32", "bypass", "fp32bypass"}, format: lowbit.FP32},
	GBinary:    {name: "g-binary", aliases: []string{"gbinary", "binary"}, format: lowbit.Binary, datapath: true},
	GTernary:   {name: "g-ternary", aliases: []string{"gternary", "ternary"}, format: lowbit.Ternary, datapath: true},
	Int8Sum:    {name: "int8-sum", aliases: []string{"int8sum", "int8"}, format: lowbit.Int8, datapath: true, sumLines: 2},
	BFPSum:     {name: "bfp8-sum", aliases: []string{"bfp8sum", "bfp-sum", "bfp8"}, format: lowbit.BFP8, datapath: true, sumLines: 2, expPlane: true},
}

// LowBit reports whether reads of aggregate views are transformed in m
// (G-Binary, G-Ternary, and beyond the paper Int8Sum and BFPSum): whether
// the mode goes through the controller's aggregation datapath.
func (m Mode) LowBit() bool { return m.Valid() && modeTraits[m].datapath }

// Sum reports whether m is an integer-sum mode (Int8Sum, BFPSum), whose
// region is shaped for its format (Region.Sum) and whose view lines hold
// lowbit.SumViewElements int16 lane sums.
func (m Mode) Sum() bool { return m.Valid() && modeTraits[m].sumLines > 0 }

// SumLines returns how many view lines one payload line reads back as in
// an integer-sum mode (2), and 0 for the other modes.
func (m Mode) SumLines() int {
	if !m.Valid() {
		return 0
	}
	return modeTraits[m].sumLines
}

// ExpPlane reports whether m's workers also write block exponents, read
// back through an exponent view (BFPSum).
func (m Mode) ExpPlane() bool { return m.Valid() && modeTraits[m].expPlane }

// Paper reports whether the paper's Table 2 has m; Int8Sum and BFPSum are
// extensions and are named as such wherever they appear.
func (m Mode) Paper() bool { return m.Valid() && m.Format().Paper() }

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
// FP32 (the software collective), and the table's aggregating mode of
// every other format. A format no mode aggregates is an error, never a
// silent FP32 fallback.
func ModeOf(f lowbit.Format) (Mode, error) {
	if f == lowbit.FP32 {
		return FP32Bypass, nil
	}
	for m, tr := range modeTraits {
		if tr.datapath && tr.format == f {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("cxl: no mode aggregates format %v", f)
}

// ModeWriter writes a region's mode latch: all the control plane may do
// to a controller. *Controller and *Core satisfy it. Because the control
// plane holds only this interface, it cannot read or rewrite gradient
// payloads (paper Sec. 3: "the control path only writes mode metadata").
type ModeWriter interface {
	SetMode(id RegionID, m Mode, ts int64) error
}

// Modes lists the four modes of the paper's Table 2, in its order.
func Modes() []Mode { return []Mode{Identity, FP32Bypass, GBinary, GTernary} }

// AllModes lists every mode in table order: the paper's four, then the
// extensions (Int8Sum, BFPSum).
func AllModes() []Mode {
	ms := make([]Mode, numModes)
	for i := range ms {
		ms[i] = Mode(i)
	}
	return ms
}

// ParseMode accepts each mode's name or one of its aliases, in any case:
// identity (id), fp32-bypass (fp32, bypass), g-binary (binary, gbinary),
// g-ternary (ternary, gternary), int8-sum (int8) and bfp8-sum (bfp8).
func ParseMode(s string) (Mode, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for m, tr := range modeTraits {
		if t == tr.name || slices.Contains(tr.aliases, t) {
			return Mode(m), nil
		}
	}
	names := make([]string, numModes)
	for m := range modeTraits {
		names[m] = modeTraits[m].name
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
