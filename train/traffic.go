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
// SignOfMean counts as FP32: it reduces FP32 gradients first.
type Traffic struct {
	Paper  lowbit.Traffic `json:"paper"`
	Stored lowbit.Traffic `json:"stored"`
}

// PolicyTraffic returns the traffic of one step of m under p.
func PolicyTraffic(m *nn.Model, p Policy) Traffic {
	groups := make([]lowbit.Group, 0, nn.NumGroups)
	for _, g := range nn.Groups() {
		s := p[g]
		lg := lowbit.Group{Name: g.String(), Elements: int64(m.GroupParams(g)), Format: s.Format()}
		if s.Rule == GTernary {
			lg.Gate = s.Gate
		}
		groups = append(groups, lg)
	}
	return Traffic{
		Paper:  lowbit.Account(groups, lowbit.PaperAccounting),
		Stored: lowbit.Account(groups, lowbit.PlaneAccounting),
	}
}

// FormatRatio formats a traffic ratio to four decimals rounding halves
// away from zero, as the paper does (1/32 = 0.03125 prints 0.0313, where
// Go's %.4f would round half to even and print 0.0312).
func FormatRatio(r float64) string {
	return fmt.Sprintf("%.4f", math.Round(r*1e4)/1e4)
}
