package lowbit

import (
	"fmt"
	"math"
)

// Accounting is a way of counting the payload bits of a format.
type Accounting uint8

const (
	// PaperAccounting is the paper's: FP32 32 bits, G-Binary 1 bit and
	// G-Ternary 1.58 bits per element (log2 3 rounded to two decimals),
	// whatever the gate. Its Table 6 traffic column follows from it.
	PaperAccounting Accounting = iota
	// PlaneAccounting counts the bits our layouts store: 1 sign bit, plus a
	// gate bit per element for GateWorker (two bit-planes). The positional
	// and margin gates need no gate bits: the controller derives them.
	PlaneAccounting
	// Base3Accounting packs each worker's ternary symbol five to a byte
	// (3^5 = 243 <= 256), 1.6 bits per element, for GateWorker payloads;
	// other formats count as in PlaneAccounting.
	Base3Accounting
)

func (a Accounting) String() string {
	switch a {
	case PaperAccounting:
		return "paper"
	case PlaneAccounting:
		return "planes"
	case Base3Accounting:
		return "base3"
	}
	return fmt.Sprintf("Accounting(%d)", uint8(a))
}

// PaperTernaryBits is the paper's G-Ternary cost: log2(3) rounded to 1.58.
const PaperTernaryBits = 1.58

// BitsPerElement returns the payload bits one worker sends per gradient
// element in format f with gate g under accounting a.
//
// Int8 and BFP8 cost the same under every accounting: 8 bits, and for
// BFP8 its exponent byte per 64-element block (8.125). Int8's scale
// agreement (one float32 per worker and bucket) is a separate term:
// ScaleBits.
//
// It returns NaN for an invalid format.
func BitsPerElement(f Format, g Gate, a Accounting) float64 {
	if !f.Valid() {
		return math.NaN()
	}
	if b := formatTraits[f].bits; b != 0 {
		return b
	}
	switch f {
	case Ternary:
		switch a {
		case PaperAccounting:
			return PaperTernaryBits
		case Base3Accounting:
			if g.Kind == GateWorker {
				return 8.0 / 5.0
			}
			return 1
		default:
			if g.Kind == GateWorker {
				return 2
			}
			return 1
		}
	}
	return math.NaN()
}

// Group is a set of parameters that share one aggregation format, such as
// a model's backbone or its classifier head.
type Group struct {
	Name     string
	Elements int64
	Format   Format
	Gate     Gate
}

// GroupTraffic is one group's payload bits per worker and step.
type GroupTraffic struct {
	Name     string  `json:"name"`
	Elements int64   `json:"elements"`
	Format   string  `json:"format"`
	Bits     float64 `json:"bits"`
	FP32Bits float64 `json:"fp32_bits"`
}

// Traffic is the gradient payload of a list of groups, normalised to the
// same groups sent as FP32. Only gradient payload counts: no headers, scale
// metadata or framework overheads.
type Traffic struct {
	Accounting string         `json:"accounting"`
	Groups     []GroupTraffic `json:"groups"`
	Bits       float64        `json:"bits"`
	FP32Bits   float64        `json:"fp32_bits"`
	// Ratio is Bits / FP32Bits.
	Ratio float64 `json:"ratio"`
}

// Account returns the traffic of groups under accounting a.
func Account(groups []Group, a Accounting) Traffic {
	t := Traffic{Accounting: a.String()}
	for _, g := range groups {
		gt := GroupTraffic{
			Name:     g.Name,
			Elements: g.Elements,
			Format:   g.Format.String(),
			Bits:     float64(g.Elements) * BitsPerElement(g.Format, g.Gate, a),
			FP32Bits: float64(g.Elements) * 32,
		}
		t.Groups = append(t.Groups, gt)
		t.Bits += gt.Bits
		t.FP32Bits += gt.FP32Bits
	}
	if t.FP32Bits > 0 {
		t.Ratio = t.Bits / t.FP32Bits
	}
	return t
}
