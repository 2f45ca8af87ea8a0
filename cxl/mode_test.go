package cxl

import (
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// TestModeTraits pins what each mode implies (paper Table 2): the payload
// format, whether reads go through the low-bit datapath, the paper's bits
// per element, and Aggregate as the inverse of Format on every mode but
// Identity.
func TestModeTraits(t *testing.T) {
	for _, tc := range []struct {
		m      Mode
		f      lowbit.Format
		lowBit bool
		bits   float64
		name   string
	}{
		{Identity, lowbit.FP32, false, 32, "identity"},
		{FP32Bypass, lowbit.FP32, false, 32, "fp32-bypass"},
		{Aggregate(lowbit.Binary), lowbit.Binary, true, 1, "g-binary"},
		{Aggregate(lowbit.Ternary), lowbit.Ternary, true, 1.58, "g-ternary"},
		{Aggregate(lowbit.Int8), lowbit.Int8, true, 8, "int8"},
		{Aggregate(lowbit.BFP8), lowbit.BFP8, true, 8.125, "bfp8"},
	} {
		if tc.m.Format() != tc.f || tc.m.LowBit() != tc.lowBit || tc.m.BitsPerElement(lowbit.PaperGate, lowbit.PaperAccounting) != tc.bits || tc.m.String() != tc.name {
			t.Errorf("%v: format %v low-bit %v bits %v", tc.m, tc.m.Format(), tc.m.LowBit(), tc.m.BitsPerElement(lowbit.PaperGate, lowbit.PaperAccounting))
		}
	}
	// Every format in lowbit's registry has a mode that aggregates it, with
	// the format's traits; FP32's is the bypass.
	seen := map[Mode]bool{Identity: true}
	for _, f := range lowbit.Formats() {
		m := Aggregate(f)
		if !m.Valid() || m.Format() != f || seen[m] || m.LowBit() != (f != lowbit.FP32) || m.Sum() != f.Sum() ||
			m.ExpPlane() != f.BlockExponents() || m.Paper() != f.Paper() || (m.SumLines() == 2) != f.Sum() {
			t.Errorf("Aggregate(%v) = %v: format %v sum %v lines %d", f, m, m.Format(), m.Sum(), m.SumLines())
		}
		seen[m] = true
	}
	if len(seen) != NumModes || len(AllModes()) != NumModes || Aggregate(lowbit.FP32) != FP32Bypass {
		t.Errorf("%d modes seen, NumModes %d", len(seen), NumModes)
	}
	for _, bad := range []Mode{Mode(NumModes), Aggregate(lowbit.Format(lowbit.NumFormats))} {
		if bad.Valid() || bad.LowBit() || bad.Format() != lowbit.FP32 {
			t.Errorf("invalid mode %v: valid %v low-bit %v format %v", bad, bad.Valid(), bad.LowBit(), bad.Format())
		}
	}
}
