package train

import (
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TestRuleModes pins the one rule-to-mode mapping against the paper's
// Table 2 reading of each rule (hand-written rows), then checks over every
// format of lowbit's registry and every mode of cxl, not the paper's four
// only, that a format's rule and the mode latch that selects it are
// inverses: FormatRule(f) aggregates in Aggregate(f), and the rule of the
// format a latch aggregates is carried by that latch.
func TestRuleModes(t *testing.T) {
	for _, tc := range []struct {
		r      Rule
		mode   cxl.Mode
		format lowbit.Format // what traffic accounts
		name   string
	}{
		{FormatRule(lowbit.FP32), cxl.FP32Bypass, lowbit.FP32, "fp32"},
		{FormatRule(lowbit.Binary), cxl.Aggregate(lowbit.Binary), lowbit.Binary, "g-binary"},
		{FormatRule(lowbit.Ternary), cxl.Aggregate(lowbit.Ternary), lowbit.Ternary, "g-ternary"},
		{MajoritySign, cxl.FP32Bypass, lowbit.Binary, "majority-sign"}, // signs, in software
		{SignOfMean, cxl.FP32Bypass, lowbit.FP32, "sign-of-mean"},
		{FormatRule(lowbit.Int8), cxl.Aggregate(lowbit.Int8), lowbit.Int8, "int8"},
		{FormatRule(lowbit.BFP8), cxl.Aggregate(lowbit.BFP8), lowbit.BFP8, "bfp8"},
	} {
		if m := tc.r.Mode(); m != tc.mode || tc.r.ViaController() != (m != cxl.FP32Bypass) {
			t.Errorf("%v: mode %v, want %v", tc.r, m, tc.mode)
		}
		if f := tc.r.Format(); f != tc.format || tc.r.String() != tc.name {
			t.Errorf("%v: format %v, want %v; name %q, want %q", tc.r, f, tc.format, tc.r, tc.name)
		}
	}
	for _, f := range lowbit.Formats() {
		r := FormatRule(f)
		if r.Format() != f || r.Mode() != cxl.Aggregate(f) || r.Sum() != f.Sum() || r.Sign() != f.Vote() || r.Label() != f.Label() {
			t.Errorf("FormatRule(%v) = %v: format %v mode %v sum %v sign %v", f, r, r.Format(), r.Mode(), r.Sum(), r.Sign())
		}
		if p, err := ParseRule(f.String()); err != nil || p != r {
			t.Errorf("ParseRule(%q) = %v, %v, want %v", f, p, err, r)
		}
	}
	for _, m := range cxl.AllModes() {
		if m == cxl.Identity {
			continue // carries no gradient
		}
		if r := FormatRule(m.Format()); r.Mode() != m {
			t.Errorf("the rule %v of the format mode %v aggregates is carried by %v", r, m, r.Mode())
		}
	}
	if bad := FormatRule(lowbit.Format(lowbit.NumFormats)); (RuleSpec{Rule: bad}).Validate() == nil {
		t.Errorf("the rule of an invalid format %v validated", bad)
	}
	for _, r := range []Rule{MajoritySign, SignOfMean} {
		if !r.Sign() || r.Sum() || r.ViaController() {
			t.Errorf("baseline %v: sign %v sum %v via controller %v", r, r.Sign(), r.Sum(), r.ViaController())
		}
	}
}
