package train

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// Traffic is the gradient payload one worker sends per step under a
// policy, by group, normalised to FP32: under the paper's accounting (FP32
// 32, G-Binary and MajoritySign 1, G-Ternary 1.58 bits per element) and
// under the bits our stored planes need (G-Ternary with the positional or
// margin gate 1 bit: the controller derives the gate; the worker gate 2).
// SignOfMean counts as FP32: it reduces FP32 gradients first. Int8 and
// BFP8 (extensions) cost 8 and 8.125 bits per element under both; Int8's
// scale agreement is the separate term ScaleBits, not in either ratio.
type Traffic struct {
	Paper  lowbit.Traffic `json:"paper"`
	Stored lowbit.Traffic `json:"stored"`
	// ScaleBits is the scale agreement one worker sends per step for its
	// Int8 groups: lowbit.ScaleBits per parameter tensor (one bucket
	// each, see ScaleAgreementBits); 0, and absent from JSON, without
	// Int8.
	ScaleBits float64 `json:"scale_bits,omitempty"`
}

// PolicyTraffic returns the traffic of one step of m under p.
func PolicyTraffic(m *nn.Model, p Policy) Traffic {
	var sizes PerGroup[int64]
	for _, g := range nn.Groups() {
		sizes[g] = int64(m.GroupParams(g))
	}
	t := groupTraffic(sizes, p)
	for _, b := range ScaleAgreementBits(m, p) {
		t.ScaleBits += b
	}
	return t
}

// groupTraffic is the payload traffic, without the scale agreement, of
// layer groups of the given sizes under p.
func groupTraffic(sizes PerGroup[int64], p Policy) Traffic {
	groups := make([]lowbit.Group, 0, nn.NumGroups)
	for _, g := range nn.Groups() {
		s := p[g]
		lg := lowbit.Group{Name: g.String(), Elements: sizes[g], Format: s.Rule.Format()}
		if s.Rule == FormatRule(lowbit.Ternary) {
			lg.Gate = s.Gate
		}
		groups = append(groups, lg)
	}
	return Traffic{Paper: lowbit.Account(groups, lowbit.PaperAccounting), Stored: lowbit.Account(groups, lowbit.PlaneAccounting)}
}

// ScaleAgreementBits returns, per group, the bits one worker sends per
// step to agree on Int8 scales: lowbit.ScaleBits (one float32 of
// max |g|, max-reduced over the workers) for each non-empty parameter
// tensor of a group aggregated as Int8, the aggregator's bucket; 0 for
// every other rule.
func ScaleAgreementBits(m *nn.Model, p Policy) PerGroup[float64] {
	var out PerGroup[float64]
	for _, prm := range m.Params {
		if p[prm.Group].Rule.Format().Scaled() && prm.Len() > 0 {
			out[prm.Group] += lowbit.ScaleBits
		}
	}
	return out
}

// FormatRatio formats a traffic ratio to four decimals rounding halves
// away from zero, as the paper does (1/32 = 0.03125 prints 0.0313, where
// Go's %.4f would round half to even and print 0.0312).
func FormatRatio(r float64) string {
	return fmt.Sprintf("%.4f", math.Round(r*1e4)/1e4)
}
