package train

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// NewLatchedAggregator returns an aggregator whose layer groups follow the
// mode latches of their controller regions, as in the paper's control
// interface (Sec. 3): every parameter tensor has a region, mapped in FP32
// bypass; before each step the aggregator reads each group's latch and
// aggregates the group through the software FP32 mean (FP32 bypass) or
// through the controller (G-Binary, G-Ternary with gate; the INT8 and
// BFP8 modes through an integer-sum bucket of the tensor, mapped when a latch
// first selects that format, since sum payloads have their own layout). Only the control
// plane changes the latches, through Latches. Error feedback is not
// available here; the worker gate needs gate bits the plain latch path
// does not write, so gate must be positional or a margin gate.
func NewLatchedAggregator(m *nn.Model, w int, layout lowbit.Layout, gate lowbit.Gate) (*Aggregator, error) {
	if err := gate.Validate(); err != nil {
		return nil, fmt.Errorf("latched aggregator: %w", err)
	}
	if gate.Kind == lowbit.GateWorker {
		return nil, fmt.Errorf("latched aggregator: the worker gate is not supported")
	}
	a, err := NewAggregator(m, Uniform(RuleSpec{Rule: FormatRule(lowbit.FP32)}), w, layout)
	if err != nil {
		return nil, err
	}
	a.ctrl, err = mapCtrlPath(m, a.policy, w, layout, &gate)
	if err != nil {
		return nil, err
	}
	a.latched, a.gate = true, gate
	return a, nil
}

// Latches returns the controller's mode-latch writer (the only capability
// the control plane gets) and the regions of each layer group, keyed by the
// group's name (nn.Group.String: the names the control plane knows groups
// by), for a latched aggregator; nil otherwise.
func (a *Aggregator) Latches() (cxl.ModeWriter, map[string][]cxl.RegionID) {
	if !a.latched {
		return nil, nil
	}
	groups := map[string][]cxl.RegionID{}
	for i, prm := range a.model.Params {
		if b := a.ctrl.ts[i].b; b != nil {
			name := prm.Group.String()
			groups[name] = append(groups[name], b.ID())
		}
	}
	return a.ctrl.dev.ModeWriter(), groups
}

// Policy returns the policy the last Aggregate used (for a latched
// aggregator, the one its latches selected).
func (a *Aggregator) Policy() Policy { return a.policy }

// readLatches sets the policy from the latches: a group's regions must
// agree, since the control plane writes a group at once.
func (a *Aggregator) readLatches() error {
	var mode [nn.NumGroups]cxl.Mode
	var seen [nn.NumGroups]bool
	for i, prm := range a.model.Params {
		t := &a.ctrl.ts[i]
		if t.b == nil {
			continue
		}
		m, err := a.ctrl.dev.Mode(t.b.ID())
		if err != nil {
			return err
		}
		g := prm.Group
		if seen[g] && m != mode[g] {
			return fmt.Errorf("latched aggregator: %s regions disagree (%v and %v)", g, mode[g], m)
		}
		mode[g], seen[g] = m, true
		t.on = m.LowBit()
		if t.on {
			t.spec, _ = a.latchSpec(m)
		}
	}
	for g := range mode {
		if s, ok := a.latchSpec(mode[g]); ok {
			a.policy[g] = s
		} else if seen[g] {
			return fmt.Errorf("latched aggregator: %s latch holds %v, which is not a gradient path", nn.Group(g), mode[g])
		}
	}
	return nil
}

// latchSpec is the rule spec a latch holding m selects: the rule of the
// format m aggregates (FP32 for the bypass), with the aggregator's
// G-Ternary gate. Identity carries no gradient: false.
func (a *Aggregator) latchSpec(m cxl.Mode) (RuleSpec, bool) {
	if m == cxl.Identity || !m.Valid() {
		return RuleSpec{}, false
	}
	r := FormatRule(m.Format())
	s := RuleSpec{Rule: r}
	if r == FormatRule(lowbit.Ternary) {
		s.Gate = a.gate
	}
	return s, true
}
