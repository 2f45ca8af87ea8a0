package cxl

import (
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// TestModeTraits pins what each mode implies (paper Table 2): the payload
// format, whether reads go through the low-bit datapath, the paper's bits
// per element, and ModeOf as the inverse of Format on the gradient paths.
func TestModeTraits(t *testing.T) {
	for _, tc := range []struct {
		m      Mode
		f      lowbit.Format
		lowBit bool
		bits   float64
	}{
		{Identity, lowbit.FP32, false, 32},
		{FP32Bypass, lowbit.FP32, false, 32},
		{GBinary, lowbit.Binary, true, 1},
		{GTernary, lowbit.Ternary, true, 1.58},
		{Int8Sum, lowbit.Int8, true, 8},
		{BFPSum, lowbit.BFP8, true, 8.125},
	} {
		if tc.m.Format() != tc.f || tc.m.LowBit() != tc.lowBit || tc.m.BitsPerElement(lowbit.PaperGate, lowbit.PaperAccounting) != tc.bits {
			t.Errorf("%v: format %v low-bit %v bits %v", tc.m, tc.m.Format(), tc.m.LowBit(), tc.m.BitsPerElement(lowbit.PaperGate, lowbit.PaperAccounting))
		}
		if got, err := ModeOf(tc.f); tc.m != Identity && (err != nil || got != tc.m) {
			t.Errorf("ModeOf(%v) = %v, %v, want %v", tc.f, got, err, tc.m)
		}
	}
	// Every format in lowbit's table has a mode, and a format beyond the
	// table is an error, not FP32 bypass.
	for _, f := range lowbit.Formats() {
		if m, err := ModeOf(f); err != nil || m.Format() != f {
			t.Errorf("ModeOf(%v) = %v, %v", f, m, err)
		}
	}
	if m, err := ModeOf(lowbit.Format(lowbit.NumFormats)); err == nil {
		t.Errorf("ModeOf(an unknown format) = %v, want an error", m)
	}
	if bad := Mode(NumModes); bad.LowBit() || bad.Format() != lowbit.FP32 {
		t.Errorf("invalid mode: low-bit %v format %v", bad.LowBit(), bad.Format())
	}
}
