package train

import (
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TestRuleModes pins the one rule-to-mode mapping against the paper's
// Table 2 reading of each rule, and RuleOf as its inverse on the gradient
// paths.
func TestRuleModes(t *testing.T) {
	for _, tc := range []struct {
		r      Rule
		mode   cxl.Mode
		format lowbit.Format // what RuleSpec.Format accounts
	}{
		{FP32, cxl.FP32Bypass, lowbit.FP32},
		{GBinary, cxl.GBinary, lowbit.Binary},
		{GTernary, cxl.GTernary, lowbit.Ternary},
		{MajoritySign, cxl.FP32Bypass, lowbit.Binary}, // signs, in software
		{SignOfMean, cxl.FP32Bypass, lowbit.FP32},
		{Int8, cxl.Int8Sum, lowbit.Int8},
		{BFP8, cxl.BFPSum, lowbit.BFP8},
	} {
		if m := tc.r.Mode(); m != tc.mode || tc.r.ViaController() != (m != cxl.FP32Bypass) {
			t.Errorf("%v: mode %v, want %v", tc.r, m, tc.mode)
		}
		if f := (RuleSpec{Rule: tc.r}).Format(); f != tc.format {
			t.Errorf("%v: format %v, want %v", tc.r, f, tc.format)
		}
	}
	for _, m := range cxl.Modes() {
		r, ok := RuleOf(m)
		if ok != (m != cxl.Identity) || (ok && r.Mode() != m) {
			t.Errorf("RuleOf(%v) = %v, %v", m, r, ok)
		}
	}
}
