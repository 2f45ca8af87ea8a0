// Package whatif answers a user's question about their own training job:
// for this bucket trace (recorded by nfabric.torch, imported from a Chakra
// execution trace, or cut from a built-in profile), on this link and this
// memory, under this admission plan, what would NEURON-Fabric change?
//
// It computes nothing of its own beyond joining the existing models, per
// step and per layer group:
//
//   - gradient bytes: FP32 (4 bytes an element) against admitted (FP32
//     groups keep 4 bytes; G-Binary pays 1 bit an element, G-Ternary 2
//     stored bit-planes, each group's payload padded to 64-byte lines, as
//     collective.CXLPath counts them);
//   - All-Reduce time: every bucket by collective.AllReduce on the network
//     link (FP32), and on the NEURON-Fabric path, where a bucket's FP32
//     groups still take the network All-Reduce and its low-bit groups the
//     controller path (collective.CXLPath) at the exposure the timing model
//     measures for these buckets;
//   - the CXL datapath's exposed cost: the low-bit buckets replayed through
//     the timing model (replay.FastForward), identity against G-Binary, at
//     their recorded ready times;
//   - encoding cost: the recorded encode time per low-bit element
//     (nfabric.torch measures it), charged to every admitted element; the
//     recorded software vote is what the controller replaces (its vote is
//     in the datapath's exposure), so it is reported, not charged;
//   - the projected step: forward + max(backward, the end of the last
//     bucket's communication) + optimizer, where buckets are communicated
//     one at a time in launch order, each starting when it is ready and the
//     previous one is done (Project).
package whatif

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/replay"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/workload"
)

// AllGroups is the group of a bucket whose trace does not split it into
// layer groups (built-in profiles cut into buckets, CSV and Chakra traces).
const AllGroups = "all"

// Plan is an admission plan: the mode each layer group runs.
type Plan struct {
	// Modes maps a group to its mode; Default applies to groups not named.
	Modes   map[string]lowbit.Format
	Default lowbit.Format
	// Source says where the plan came from (a policy string, or the
	// control plane's ladder on recorded diagnostics, with its reasons).
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
// default for the groups not listed (FP32 unless given). Modes are fp32,
// g-binary and g-ternary.
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
	// Workers is the data-parallel worker count, >= 2.
	Workers int
	// Net is the link of the FP32 All-Reduce (ring unless Alg says).
	Net collective.Link
	Alg collective.Algorithm
	// CXL is the controller link; Shared makes the workers share one port.
	CXL    collective.Link
	Shared bool
	// Memory is the timing preset of the CXL memory: ideal or a CXL device
	// (timing.Presets).
	Memory string
	Plan   Plan
}

// GroupRow is one group's part of one step.
type GroupRow struct {
	Step          int     `json:"step"`
	Group         string  `json:"group"`
	Mode          string  `json:"mode"`
	Elements      int64   `json:"elements"`
	FP32Bytes     int64   `json:"fp32_bytes"`
	AdmittedBytes int64   `json:"admitted_bytes"`
	FP32S         float64 `json:"fp32_allreduce_s"`
	// FabricS is the group's shares on the NEURON-Fabric path (the
	// controller path, or the network All-Reduce for an FP32 group),
	// encoding not included (EncodeS).
	FabricS float64 `json:"fabric_s"`
	EncodeS float64 `json:"encode_s"`
}

// BucketRow is one bucket of one step.
type BucketRow struct {
	Step          int     `json:"step"`
	Index         int     `json:"index"`
	ReadyS        float64 `json:"ready_s"`
	Bytes         int64   `json:"fp32_bytes"`
	AdmittedBytes int64   `json:"admitted_bytes"`
	FP32S         float64 `json:"fp32_allreduce_s"`
	// FabricS is the bucket's communication on the NEURON-Fabric path,
	// encoding included: max(FP32 groups' All-Reduce, low-bit groups'
	// controller path + encoding).
	FabricS float64 `json:"fabric_s"`
	EncodeS float64 `json:"encode_s"`
	LowBit  bool    `json:"low_bit"`
}

// StepRow is one step's projection.
type StepRow struct {
	Step          int     `json:"step"`
	ForwardS      float64 `json:"forward_s"`
	BackwardS     float64 `json:"backward_s"`
	OptimizerS    float64 `json:"optimizer_s"`
	FP32Bytes     int64   `json:"fp32_bytes"`
	AdmittedBytes int64   `json:"admitted_bytes"`
	FP32S         float64 `json:"fp32_allreduce_s"`
	// FabricS sums the buckets' FabricS (encoding included).
	FabricS float64 `json:"fabric_s"`
	// ExposedS is the CXL datapath's exposed cost of the step's low-bit
	// buckets (G-Binary replay minus identity replay); Exposure the busy
	// time increment the controller path is charged with.
	ExposedS float64 `json:"datapath_exposed_s"`
	Exposure float64 `json:"exposure"`
	EncodeS  float64 `json:"encode_s"`
	// FP32Comm and FabricComm end when each path's last bucket is done
	// (from the start of backward).
	FP32CommEndS   float64 `json:"fp32_comm_end_s"`
	FabricCommEndS float64 `json:"fabric_comm_end_s"`
	FP32StepS      float64 `json:"fp32_step_s"`
	FabricStepS    float64 `json:"fabric_step_s"`
	SpeedUp        float64 `json:"speed_up"`
}

// Result is the what-if of every step.
type Result struct {
	Model       string      `json:"model"`
	Workers     int         `json:"workers"`
	Net         string      `json:"net"`
	Algorithm   string      `json:"algorithm"`
	CXL         string      `json:"cxl"`
	Memory      string      `json:"memory"`
	Plan        string      `json:"plan"`
	EncodeRate  float64     `json:"encode_s_per_element"`
	EncodeKnown bool        `json:"encode_measured"`
	Steps       []StepRow   `json:"steps"`
	Groups      []GroupRow  `json:"groups"`
	Buckets     []BucketRow `json:"buckets"`
	Assumptions []string    `json:"assumptions"`
}

// shares returns a bucket's group shares (one AllGroups share when the
// trace does not split it).
func shares(b workload.Bucket) []workload.GroupShare {
	if len(b.Groups) > 0 {
		return b.Groups
	}
	return []workload.GroupShare{{Name: AllGroups, Elements: b.Elements, Mode: lowbit.FP32}}
}

// encodeRate is the recorded encode cost per low-bit element over every
// step; known is false when the recording measured none.
func encodeRate(steps []*workload.Trace) (rate float64, known bool) {
	var ps, el int64
	for _, s := range steps {
		for _, b := range s.Buckets {
			var low int64
			for _, g := range shares(b) {
				if g.Mode != lowbit.FP32 {
					low += g.Elements
				}
			}
			if low > 0 && b.EncodePS > 0 {
				ps += b.EncodePS
				el += low
			}
		}
	}
	if el == 0 {
		return 0, false
	}
	return float64(ps) * 1e-12 / float64(el), true
}

// Run prices every step of the trace (tr.Steps, or tr itself).
func Run(tr *workload.Trace, o Options) (*Result, error) {
	if o.Workers < 2 {
		return nil, fmt.Errorf("whatif: %d workers; an All-Reduce needs at least 2", o.Workers)
	}
	if err := o.Net.Validate(); err != nil {
		return nil, fmt.Errorf("whatif: net link: %w", err)
	}
	if err := o.CXL.Validate(); err != nil {
		return nil, fmt.Errorf("whatif: cxl link: %w", err)
	}
	cfg, err := timing.PresetConfig(o.Memory)
	if err != nil {
		return nil, fmt.Errorf("whatif: memory: %w", err)
	}
	if tr.BytesPerElement != 4 {
		return nil, fmt.Errorf("whatif: trace %s has %d-byte gradient elements; the FP32 baseline needs 4", tr.Model, tr.BytesPerElement)
	}
	steps := tr.Steps
	if len(steps) == 0 {
		steps = []*workload.Trace{tr}
	}
	groups := map[string]bool{}
	for _, s := range steps {
		for _, b := range s.Buckets {
			for _, g := range shares(b) {
				groups[g.Name] = true
			}
		}
	}
	for g := range o.Plan.Modes {
		if !groups[g] {
			return nil, fmt.Errorf("whatif: the plan names group %q, which the trace does not have (groups: %s)", g, strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
		}
	}
	ar := collective.AlphaBeta{Alg: o.Alg, N: o.Workers, Link: o.Net}
	if o.Alg == collective.Hierarchical {
		return nil, fmt.Errorf("whatif: the hierarchical All-Reduce needs an intra-node link; use ring, tree or halving-doubling")
	}
	rate, known := encodeRate(steps)
	res := &Result{Model: tr.Model, Workers: o.Workers, Net: o.Net.String(), Algorithm: o.Alg.String(), CXL: o.CXL.String(),
		Memory: o.Memory, Plan: o.Plan.Source, EncodeRate: rate, EncodeKnown: known}
	cals := map[replay.Mode]*replay.Calibrator{}
	for _, s := range steps {
		row, err := runStep(s, o, ar, cfg, cals, rate, res)
		if err != nil {
			return nil, fmt.Errorf("whatif %s step %d: %w", tr.Model, s.Step, err)
		}
		res.Steps = append(res.Steps, row)
	}
	res.Assumptions = assumptions(o, known, rate)
	return res, nil
}

func runStep(s *workload.Trace, o Options, ar collective.AlphaBeta, cfg timing.Config, cals map[replay.Mode]*replay.Calibrator,
	rate float64, res *Result) (StepRow, error) {
	row := StepRow{Step: s.Step, ForwardS: ps2s(s.ForwardPS), BackwardS: ps2s(s.BackwardPS), OptimizerS: ps2s(s.OptimizerPS)}
	// The low-bit part of every bucket, replayed through the CXL path at
	// its ready time: the datapath's exposed cost and the exposure.
	var low []timing.Bucket
	for _, b := range s.Buckets {
		var n int64
		for _, g := range shares(b) {
			if o.Plan.Mode(g.Name) != lowbit.FP32 {
				n += g.Elements
			}
		}
		if n > 0 {
			low = append(low, timing.Bucket{Ready: sim.Time(b.ReadyPS), Lines: replay.Lines(4 * n)})
		}
	}
	if len(low) > 0 {
		back := sim.Time(s.BackwardPS)
		var runs [2]replay.Run
		for i, m := range []replay.Mode{replay.Identity, replay.LowBit} {
			c := cals[m]
			if c == nil {
				var err error
				if c, err = replay.NewCalibrator(cfg, m); err != nil {
					return row, err
				}
				cals[m] = c
			}
			r, err := replay.FastForward(c, low, back)
			if err != nil {
				return row, err
			}
			runs[i] = r
		}
		inc := replay.Compare(runs[0], runs[1], low, sim.Time(s.ForwardPS), back, cfg.PipelineLatency())
		row.ExposedS = ps2s(int64(inc.Exposed))
		row.Exposure = math.Max(0, inc.BusyIncrementPct/100)
	}
	cxlp := collective.CXLPath{Link: o.CXL, Workers: o.Workers, Shared: o.Shared, Exposure: row.Exposure}
	per := map[string]*GroupRow{}
	var order []string
	var fp32End, nfEnd float64
	for _, b := range s.Buckets {
		br := BucketRow{Step: s.Step, Index: b.Index, ReadyS: ps2s(b.ReadyPS), Bytes: b.Bytes}
		e, err := ar.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(b.Bytes)})
		if err != nil {
			return row, err
		}
		br.FP32S = e.Seconds
		var fpBytes, lowTime float64
		for _, g := range shares(b) {
			m := o.Plan.Mode(g.Name)
			ga := per[g.Name]
			if ga == nil {
				ga = &GroupRow{Step: s.Step, Group: g.Name, Mode: m.String()}
				per[g.Name] = ga
				order = append(order, g.Name)
			}
			ga.Elements += g.Elements
			ga.FP32Bytes += 4 * g.Elements
			ge, err := ar.Time(collective.Call{Op: collective.AllReduce, Bytes: float64(4 * g.Elements)})
			if err != nil {
				return row, err
			}
			ga.FP32S += ge.Seconds
			if m == lowbit.FP32 {
				fpBytes += float64(4 * g.Elements)
				ga.AdmittedBytes += 4 * g.Elements
				br.AdmittedBytes += 4 * g.Elements
				ga.FabricS += ge.Seconds
				continue
			}
			br.LowBit = true
			// What the controller stores: the plan's G-Ternary has the
			// paper's positional gate, which needs no gate plane.
			bits := lowbit.BitsPerElement(m, lowbit.PaperGate, lowbit.PlaneAccounting)
			ce, err := cxlp.Time(g.Elements, bits, true)
			if err != nil {
				return row, err
			}
			payload := lowbit.PaddedBytes(int64(math.Ceil(float64(g.Elements) * bits / 8)))
			ga.AdmittedBytes += payload
			br.AdmittedBytes += payload
			enc := rate * float64(g.Elements)
			ga.FabricS += ce.Seconds
			ga.EncodeS += enc
			br.EncodeS += enc
			lowTime += ce.Seconds + enc
		}
		// A mixed bucket's FP32 groups reduce on the network while its
		// low-bit groups encode and cross the controller (the hook does
		// both at once): the bucket takes the longer of the two.
		var fpTime float64
		if fpBytes > 0 {
			fe, err := ar.Time(collective.Call{Op: collective.AllReduce, Bytes: fpBytes})
			if err != nil {
				return row, err
			}
			fpTime = fe.Seconds
		}
		br.FabricS = math.Max(fpTime, lowTime)
		ready := ps2s(b.ReadyPS)
		fp32End = math.Max(fp32End, ready) + br.FP32S
		nfEnd = math.Max(nfEnd, ready) + br.FabricS
		row.FP32Bytes += b.Bytes
		row.AdmittedBytes += br.AdmittedBytes
		row.FP32S += br.FP32S
		row.FabricS += br.FabricS
		row.EncodeS += br.EncodeS
		res.Buckets = append(res.Buckets, br)
	}
	for _, g := range order {
		res.Groups = append(res.Groups, *per[g])
	}
	row.FP32CommEndS, row.FabricCommEndS = fp32End, nfEnd
	row.FP32StepS = Project(row.ForwardS, row.BackwardS, row.OptimizerS, fp32End)
	row.FabricStepS = Project(row.ForwardS, row.BackwardS, row.OptimizerS, nfEnd)
	if row.FabricStepS > 0 {
		row.SpeedUp = row.FP32StepS / row.FabricStepS
	}
	return row, nil
}

// Project is the projected step time: forward, then backward overlapped
// with the buckets' communication (which ends commEnd after the start of
// backward), then the optimizer: fwd + max(bwd, commEnd) + opt.
func Project(fwd, bwd, opt, commEnd float64) float64 { return fwd + math.Max(bwd, commEnd) + opt }

func ps2s(ps int64) float64 { return float64(ps) * 1e-12 }

func assumptions(o Options, encodeKnown bool, rate float64) []string {
	a := []string{
		fmt.Sprintf("FP32: every bucket is one %s All-Reduce of its bytes on %s among %d workers (collective.AllReduce)", o.Alg, o.Net, o.Workers),
		fmt.Sprintf("NEURON-Fabric: a bucket's low-bit groups cross the controller path on %s (collective.CXLPath: written and read back, 64-byte lines; the bits lowbit stores: G-Binary and G-Ternary, whose positional gate the controller derives, 1 bit an element); its FP32 groups still take the network All-Reduce, at the same time; the bucket takes the longer", o.CXL),
		fmt.Sprintf("the controller path is charged the datapath's busy-time increment measured by replaying the step's low-bit buckets through the timing model (%s memory, fast-forward), G-Binary against identity", o.Memory),
		"buckets are communicated one at a time in launch order, each from when it is ready (recorded, from the start of backward) or the previous one is done; step = forward + max(backward, end of communication) + optimizer",
	}
	if encodeKnown {
		a = append(a, fmt.Sprintf("encoding: the recorded encode time per low-bit element (%.3g ns) times each bucket's admitted elements, on the bucket's critical path; the recorded software vote (the collective backend's) is not charged: on this path the controller votes", rate*1e9))
	} else {
		a = append(a, "encoding: the trace recorded no encode/vote cost (an FP32 run, a profile or a Chakra trace): not charged")
	}
	if o.Shared {
		a = append(a, "the workers share one controller port")
	}
	if o.Plan.hasSum() {
		a = append(a, "INT8 and BFP8 groups (beyond the paper) cross the same path at 8 and 8.125 bits an element (lowbit's stored bits; INT8's scale agreement, one float32 per worker and bucket, is not charged), and their datapath is replayed as G-Binary's (the timing replay has no sum-mode calibration)")
	}
	return a
}

// hasSum reports whether the plan puts any group on a summed format.
func (p Plan) hasSum() bool {
	if p.Default.Sum() {
		return true
	}
	for _, f := range p.Modes {
		if f.Sum() {
			return true
		}
	}
	return false
}
