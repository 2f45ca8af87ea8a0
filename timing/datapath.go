package timing

import (
	"fmt"
	"math/bits"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TreeLevelsPerCycle is how many levels of a binary reduction tree one
// controller cycle holds: the paper's count stage reduces W = 8 workers'
// sign bits per element, a log2(8) = 3-level adder tree, in one of its
// five cycles (paper Sec. 3; hw.OpCount). The integer-sum modes have no
// tree (DatapathCycles).
const TreeLevelsPerCycle = 3

// treeCycles returns the cycles of a w-input reduction tree:
// ceil(ceil(log2 w) / TreeLevelsPerCycle), at least 1 (a one-input
// "tree" still occupies its stage).
func treeCycles(w int) int {
	levels := bits.Len(uint(w - 1)) // ceil(log2 w) for w >= 1
	return max(1, (levels+TreeLevelsPerCycle-1)/TreeLevelsPerCycle)
}

// DatapathCycles returns the depth, in controller cycles, of mode m's
// aggregation datapath over w workers' lines: the cycles from the last
// input line a read needs to its aggregate, at one 64-byte line per cycle
// (the paper's line rate) in every mode.
//
// The paper's modes are counted from their structure, with the paper's
// five operations (decode | unpack | count | gate | select, one register
// each; paper Sec. 3, hw.StageOps) as the unit and the count stage's
// w-input reduction tree at TreeLevelsPerCycle levels per cycle
// (treeCycles):
//
//	G-Binary, G-Ternary  decode 1 + unpack 1 + count tree(w) + majority/gate 1 + select 1
//
// which gives the paper's stated 5 cycles at W = 8 rather than assuming
// it. The integer-sum modes are the RTL's: package hw builds them as
// streaming accumulators that take one worker line per clock (initiation
// interval 1, aggregates back to back) and answer Depth() clock edges
// after an aggregate's last worker line, whatever w (w only widens the
// lane accumulators). The depth is hw.Datapath.Depth of the mode's
// datapath (hw.ModeDatapath), which hw.MeasureTiming checks against
// the simulated RTL: 3 for INT8 (input | accumulate | saturate), 5 for
// BFP8 (input with the shift | round | shift | accumulate | saturate). The W
// worker lines of a sum aggregate are W line reads, one per cycle, so the
// mode's throughput is the paper's line rate; BFP8's exponent pass (one
// W-line aggregate per 64 mantissa lines, whose view the mantissa lines
// need) is in its traffic (8.125 bits per element), not in this depth: a
// controller issues it ahead, as an independent aggregate in the same
// pipeline. Identity and FP32 bypass do not enter the datapath: 0 cycles.
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
	if m.Sum() {
		d, err := hw.ModeDatapath(m)
		if err != nil {
			return 0, fmt.Errorf("timing: datapath cycles: %w", err)
		}
		return d.Depth(), nil
	}
	const decode, unpack, gate, sel = 1, 1, 1, 1
	return decode + unpack + treeCycles(w) + gate + sel, nil
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
