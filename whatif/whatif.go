// Package whatif answers a user's question about their own training job:
// for this trace (recorded by nfabric.torch, a torch.profiler trace, an
// MLCommons Chakra execution trace, ASTRA-sim's multi-rank workloads, or a
// built-in profile cut into buckets), on this network and this memory,
// under this admission plan, what would NEURON-Fabric change?
//
// It computes nothing of its own beyond joining the existing models, per
// step, per layer group and per collective:
//
//   - network collectives: every collective of the trace priced by one
//     collective.Model (the alpha-beta model on the network link, or
//     ASTRA-sim's analytical mode), each operation by its own formula;
//     one the model does not price (ASTRA-sim's REDUCE, say) is listed as
//     unpriced with why, never dropped;
//   - gradient bytes: the all-reduce and reduce-scatter collectives carry
//     the gradients; FP32 (4 bytes an element) against admitted (FP32
//     groups keep 4 bytes; the low-bit formats pay the bits lowbit stores:
//     G-Binary and G-Ternary 1 an element, the positional gate derived by
//     the controller, INT8 and BFP8 8 and 8.125; each group's
//     payload padded to 64-byte lines, as collective.CXLPath counts them);
//   - the NEURON-Fabric path: a gradient collective's admitted groups cross
//     the controller (collective.CXLPath.TimeOp: an all-reduce writes the
//     payload and reads the aggregate back, a reduce-scatter reads back its
//     1/W shard) at the exposure the timing model measures for these
//     buckets; its FP32 groups still take the network collective, at the
//     same time; every other collective (all-gather, all-to-all,
//     broadcast, ...) takes the network on both paths;
//   - the CXL datapath's exposed cost: the low-bit parts replayed through
//     the timing model (replay.FastForward), identity against G-Binary, at
//     their ready times;
//   - encoding cost: the recorded encode time per low-bit element
//     (nfabric.torch measures it), charged to every admitted element; the
//     recorded software vote is what the controller replaces (its vote is
//     in the datapath's exposure), so it is reported, not charged;
//   - the projected step: forward + max(backward, the end of the last
//     collective's communication) + optimizer, where collectives are
//     communicated one at a time in launch order, each starting when it is
//     ready and the previous one is done (Project).
//
// # Bounds
//
// Run keeps per step and per group rows, and per-collective rows for the
// first MaxBucketRows collectives of the trace (the timeline figure and
// the Perfetto trace are drawn from them; the rest are counted in
// Result.BucketRowsOmitted and every total still includes them). Its
// memory is then the trace's plus about 16 bytes a low-bit bucket of one
// step for the datapath replay. It checks its context every
// ctxCheckBuckets collectives, so an interrupt stops it promptly.
package whatif

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/traces"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/neuronfabric/nfabric/workload"
)

// AllGroups is the group of a bucket whose trace does not split it into
// layer groups (built-in profiles cut into buckets, CSV, Chakra and
// profiler traces).
const AllGroups = "all"

// DefaultMemory is the what-if's CXL memory unless asked otherwise: the
// silicon-calibrated ASIC expander preset (timing/cxldev), so a user's
// step is priced on a device that exists; the paper's fixed-latency
// model stays a choice (--memory ideal).
const DefaultMemory = "asic-pcie5-x8"

// DefaultWorkers is the worker count of a trace that records none.
const DefaultWorkers = 8

// MaxBucketRows bounds the per-collective rows a Result keeps.
const MaxBucketRows = 1 << 16

// ctxCheckBuckets is how many collectives Run prices between looks at its
// context.
const ctxCheckBuckets = 1 << 12

// Plan is an admission plan: the mode each layer group runs.
type Plan struct {
	// Modes maps a group to its mode; Default applies to groups not named.
	Modes   map[string]lowbit.Format
	Default lowbit.Format
	// Source says where the plan came from (a policy string, the
	// default, or the control plane's ladder on recorded diagnostics, with
	// its reasons).
	Source string
}

// Mode returns group's mode under the plan.
func (p Plan) Mode(group string) lowbit.Format {
	if m, ok := p.Modes[group]; ok {
		return m
	}
	return p.Default
}

// ParsePlan reads a policy string: one mode for every group ("g-binary"),
// or group=mode pairs ("backbone=g-binary,head=fp32"), where "*" names the
// default for the groups not listed (FP32 unless given). Modes are the
// formats' names (fp32, g-binary, g-ternary, int8, bfp8).
func ParsePlan(s string) (Plan, error) {
	p := Plan{Modes: map[string]lowbit.Format{}, Default: lowbit.FP32, Source: "policy " + s}
	s = strings.TrimSpace(s)
	if s == "" {
		return Plan{}, fmt.Errorf("plan: empty policy (want a mode, or group=mode,...)")
	}
	if !strings.Contains(s, "=") {
		f, err := lowbit.ParseFormat(s)
		if err != nil {
			return Plan{}, fmt.Errorf("plan %q: %w", s, err)
		}
		p.Default = f
		return p, nil
	}
	for _, part := range strings.Split(s, ",") {
		g, m, ok := strings.Cut(strings.TrimSpace(part), "=")
		g = strings.TrimSpace(g)
		if !ok || g == "" {
			return Plan{}, fmt.Errorf("plan %q: %q is not group=mode", s, part)
		}
		f, err := lowbit.ParseFormat(m)
		if err != nil {
			return Plan{}, fmt.Errorf("plan %q: group %s: %w", s, g, err)
		}
		if g == "*" {
			p.Default = f
			continue
		}
		if _, dup := p.Modes[g]; dup {
			return Plan{}, fmt.Errorf("plan %q: group %s twice", s, g)
		}
		p.Modes[g] = f
	}
	return p, nil
}

// DefaultPlan is the plan of a what-if given none: the recorded job's own
// policy when the trace carries one, otherwise the paper's layer-aware
// admission, G-Binary for every group but a "head" group, which stays on
// FP32. A trace whose only group is "all" (a Chakra or profiler trace, a
// CSV trace) is thus admitted on G-Binary.
func DefaultPlan(tr *workload.Trace) Plan {
	if tr.Policy != "" {
		if p, err := ParsePlan(tr.Policy); err == nil && namesOnly(p, Groups(tr)) {
			p.Source = "the recorded job's policy " + tr.Policy
			return p
		}
	}
	p := Plan{Modes: map[string]lowbit.Format{}, Default: lowbit.Binary,
		Source: "default: G-Binary for every group, FP32 for a group named head (the paper's layer-aware admission)"}
	if slices.Contains(Groups(tr), "head") {
		p.Modes["head"] = lowbit.FP32
	}
	return p
}

// namesOnly reports whether every group the plan names is in groups.
func namesOnly(p Plan, groups []string) bool {
	for g := range p.Modes {
		if !slices.Contains(groups, g) {
			return false
		}
	}
	return true
}

// Groups returns the layer groups of the trace's gradient collectives,
// sorted (AllGroups for buckets the trace does not split).
func Groups(tr *workload.Trace) []string {
	set := map[string]bool{}
	for _, s := range stepsOf(tr) {
		for _, b := range s.Buckets {
			if b.Op.Aggregates() {
				for _, g := range shares(b) {
					set[g.Name] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// ResolvePlan builds the what-if's plan from a --plan value: "" (the
// default, DefaultPlan), a policy (ParsePlan), or "recorded" (the control
// plane's ladder r on the trace's recorded diagnostics). rungsGiven says
// the caller set the ladder, which only "recorded" reads: setting it with
// another plan is a usage error rather than silently ignored. Every error
// about the plan lists the trace's groups.
func ResolvePlan(spec string, r control.Ladder, rungsGiven bool, tr *workload.Trace) (Plan, error) {
	groups := strings.Join(Groups(tr), ", ")
	if rungsGiven && spec != "recorded" {
		return Plan{}, usage.Errorf("--ladder-rungs sets the ladder of --plan recorded; with --plan %q it would be ignored", spec)
	}
	var p Plan
	var err error
	switch spec {
	case "":
		p = DefaultPlan(tr)
	case "recorded":
		if p, err = PlanFromDiagnostics(stepsOf(tr), r); err != nil {
			return Plan{}, usage.Errorf("--plan recorded: %v (the trace's groups: %s)", err, groups)
		}
	default:
		if p, err = ParsePlan(spec); err != nil {
			return Plan{}, usage.Errorf("--plan: %v (the trace's groups: %s)", err, groups)
		}
	}
	for g := range p.Modes {
		if !slices.Contains(Groups(tr), g) {
			return Plan{}, usage.Errorf("--plan names group %q, which the trace does not have (its groups: %s)", g, groups)
		}
	}
	return p, nil
}

// PlanFromDiagnostics is the plan the control plane's admission ladder
// (control.Ladder.Admit, the one ladder) derives from the last recorded
// diagnostics of each group: the lowest-traffic rung whose cosine the group
// passes. A rung whose format the recording did not measure (an INT8 rung
// on a version 1 trace) admits nothing. A group without diagnostics stays
// on FP32, as the plane keeps it. The paper's ladder is
// control.DefaultLadder().
func PlanFromDiagnostics(steps []*workload.Trace, r control.Ladder) (Plan, error) {
	if err := r.Validate(); err != nil {
		return Plan{}, fmt.Errorf("plan from diagnostics: %w", err)
	}
	last := map[string]workload.Diagnostics{}
	for _, s := range steps {
		for g, d := range s.Diagnostics {
			last[g] = d
		}
	}
	if len(last) == 0 {
		return Plan{}, fmt.Errorf("plan from diagnostics: the trace holds no diagnostics (record an FP32 run with record_diagnostics=True)")
	}
	p := Plan{Modes: map[string]lowbit.Format{}, Default: lowbit.FP32}
	var why []string
	for _, g := range slices.Sorted(maps.Keys(last)) {
		f, reason := r.Admit(last[g].Cos())
		p.Modes[g] = f
		why = append(why, fmt.Sprintf("%s: %s (%s)", g, f, reason))
	}
	p.Source = "control plane ladder (" + ladderLabel(r) + ") on recorded diagnostics: " + strings.Join(why, "; ")
	return p, nil
}

// ladderLabel describes the ladder in a plan's source: the paper's two
// rungs as "binary >= 0.75, ternary >= 0.5", any other as its rungs,
// "g-binary >= 0.75, int8 >= 0.95" in ladder order.
func ladderLabel(r control.Ladder) string {
	o := r.Ordered()
	if len(o) == 2 && o[0].Format == lowbit.Binary && o[1].Format == lowbit.Ternary {
		return "binary >= " + fmt.Sprint(o[0].Min) + ", ternary >= " + fmt.Sprint(o[1].Min)
	}
	if len(o) == 0 {
		return "no rungs"
	}
	parts := make([]string, len(o))
	for i, g := range o {
		parts[i] = g.Format.String() + " >= " + fmt.Sprint(g.Min)
	}
	return strings.Join(parts, ", ")
}

// Options configure one what-if.
type Options struct {
	// Workers is the data-parallel worker count: 0 takes the trace's (its
	// rank files', which no other count may contradict, or its recorded
	// one), else DefaultWorkers. A count other than the one the trace
	// recorded is allowed and said in the assumptions.
	Workers int
	// Net is the link of the network collectives and Alg their algorithm
	// (ring, tree or halving-doubling), unless Astra is set.
	Net collective.Link
	Alg collective.Algorithm
	// Astra, when set, prices the network collectives in ASTRA-sim's
	// analytical mode; the workers are then its network's NPUs.
	Astra *collective.AstraConfig
	// CXL is the controller link; Shared makes the workers share one port.
	CXL    collective.Link
	Shared bool
	// Memory is the timing preset of the CXL memory (timing.Presets): a
	// CXL device (cxldev.Devices) or the paper's ideal model; ""
	// takes DefaultMemory.
	Memory string
	Plan   Plan
}

// LoadTrace reads the what-if's trace: the file or prefix trace
// (traces.Load: every kind), or, for model, the built-in or YAML profile
// cut into buckets as timing replay does.
func LoadTrace(trace, model string) (*workload.Trace, error) {
	if trace != "" {
		return traces.Load(trace)
	}
	p, err := workload.LoadProfile(model, 0)
	if err != nil {
		return nil, usage.Errorf("--model: %v", err)
	}
	tl, err := p.Timeline(workload.Schedule{Accel: workload.A100, Batch: p.Batch})
	if err != nil {
		return nil, err
	}
	tr, err := workload.Bucketize(tl, workload.BucketOptions{})
	if err != nil {
		return nil, err
	}
	tr.Source = &workload.Provenance{Format: "profile " + p.Name + " cut into 32 MiB buckets (A100 compute model)", Files: []string{model},
		Read: []workload.Tally{{What: "buckets", N: int64(len(tr.Buckets))}}}
	return tr, nil
}
