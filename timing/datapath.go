package timing

import (
	"fmt"
	"math/bits"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TreeLevelsPerCycle is how many levels of a binary reduction tree one
// controller cycle holds: the paper's count stage reduces W = 8 workers'
// sign bits per element, a log2(8) = 3-level adder tree, in one of its
// five cycles (paper Sec. 3; hw.OpCount). The integer-sum modes are
// counted at the same rate. That is optimistic for them: the popcount's
// levels add 1- to 3-bit operands, an Int8 tree's add 8- to 16-bit ones,
// whose carry chains are longer; the hardware flow (package hw) is where
// the real stage delay is measured.
const TreeLevelsPerCycle = 3

// treeCycles returns the cycles of a w-input reduction tree:
// ceil(ceil(log2 w) / TreeLevelsPerCycle), at least 1 (a one-input
// "tree" still occupies its stage).
func treeCycles(w int) int {
	levels := bits.Len(uint(w - 1)) // ceil(log2 w) for w >= 1
	return max(1, (levels+TreeLevelsPerCycle-1)/TreeLevelsPerCycle)
}

// DatapathCycles returns the depth, in controller cycles, of mode m's
// aggregation datapath over w workers' lines, derived from its structure
// with the paper's five operations (decode | unpack | count | gate |
// select, one register each; paper Sec. 3, hw.StageOps) as the unit and
// a w-input reduction tree at TreeLevelsPerCycle levels per cycle
// (treeCycles):
//
//	G-Binary, G-Ternary  decode 1 + unpack 1 + count tree(w) + majority/gate 1 + select 1
//	Int8Sum              decode 1 + unpack 1 + adder tree(w) + saturate 1 + select 1
//	BFPSum               decode 1 + max(unpack 1, exponent max tree(w)) + align 1
//	                     + adder tree(w) + saturate 1 + select 1
//
// Int8Sum's lanes arrive aligned, so its only change is the tree's
// operands (int8 in, int16 out) and a saturating clamp where the vote has
// its majority compare. BFPSum first needs E = max_w e_w, a w-input tree
// of 8-bit compares that runs beside the unpack (it needs only the
// exponents), then one alignment stage: a barrel shift by min(E - e_w, 8),
// log2(8) = 3 mux levels, with its rounding add. At the paper's W = 8
// this gives 5, 5, 5 and 6 cycles; 5 is the paper's stated depth, which
// the rule reproduces rather than assumes. The line width (one 64-byte
// line per cycle) is the paper's in every mode. Identity and FP32 bypass
// do not enter the datapath: 0 cycles.
func DatapathCycles(m cxl.Mode, w int) (int, error) {
	if !m.Valid() {
		return 0, fmt.Errorf("timing: datapath cycles of %v: not a mode", m)
	}
	if w < 1 || w > lowbit.MaxWorkers {
		return 0, fmt.Errorf("timing: datapath cycles of %v: %d workers out of range [1, %d]", m, w, lowbit.MaxWorkers)
	}
	if !m.LowBit() {
		return 0, nil
	}
	const decode, unpack, gate, sel, align = 1, 1, 1, 1, 1
	tree := treeCycles(w)
	if m.ExpPlane() {
		return decode + max(unpack, tree) + align + tree + gate + sel, nil
	}
	return decode + unpack + tree + gate + sel, nil
}

// ModeExposure returns the Table 4 exposure pair of mode m at the anchor
// cfg (the full-LLC-miss row: Table 4's model as configured, W =
// cfg.Streams.Count streams as the workers): cfg with
// controller.stages = DatapathCycles(m, W), run as identity and low-bit.
// The evidence blocks call it to put every mode's datapath cost beside
// G-Binary's; under the paper's configuration G-Binary's pair is Table
// 4's full-LLC-miss row itself.
func ModeExposure(cfg Config, m cxl.Mode) (Pair, error) {
	if !m.LowBit() {
		return Pair{}, fmt.Errorf("timing: exposure of %v: the mode does not enter the aggregation datapath", m)
	}
	k, err := DatapathCycles(m, cfg.Streams.Count)
	if err != nil {
		return Pair{}, err
	}
	c := cfg
	c.Controller.Stages = k
	if err := c.Validate(); err != nil {
		return Pair{}, fmt.Errorf("timing: exposure of %v: %w", m, err)
	}
	return RunPair(c, Sweep{})
}

// ModeAnchorExposure returns mode m's exposure (a fraction of the
// identity run time) at Table 4's full-LLC-miss anchor, the paper's
// configuration (DefaultConfig): AnchorExposure's figure for the depth
// DatapathCycles derives for m. For G-Binary it is AnchorExposure's.
func ModeAnchorExposure(m cxl.Mode) (float64, error) {
	p, err := ModeExposure(DefaultConfig(), m)
	if err != nil {
		return 0, err
	}
	return p.OverheadPct / 100, nil
}
