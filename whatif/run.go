package whatif

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/replay"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/neuronfabric/nfabric/workload"
)

// GroupRow is one gradient group's part of one step.
type GroupRow struct {
	Step          int     `json:"step"`
	Group         string  `json:"group"`
	Mode          string  `json:"mode"`
	Elements      int64   `json:"elements"`
	FP32Bytes     int64   `json:"fp32_bytes"`
	AdmittedBytes int64   `json:"admitted_bytes"`
	FP32S         float64 `json:"fp32_collective_s"`
	// FabricS is the group's shares on the NEURON-Fabric path (the
	// controller path, or the network collective for an FP32 group),
	// encoding not included (EncodeS).
	FabricS float64 `json:"fabric_s"`
	EncodeS float64 `json:"encode_s"`
}

// OpRow is one step's collectives of one operation.
type OpRow struct {
	Step  int           `json:"step"`
	Op    collective.Op `json:"op"`
	Count int64         `json:"count"`
	Bytes int64         `json:"bytes"`
	// FP32S and FabricS are their network (FP32) and NEURON-Fabric times;
	// the same for an operation the controller does not aggregate.
	FP32S   float64 `json:"fp32_s"`
	FabricS float64 `json:"fabric_s"`
	// Unpriced counts those the network model does not price (Why).
	Unpriced      int64  `json:"unpriced,omitempty"`
	UnpricedBytes int64  `json:"unpriced_bytes,omitempty"`
	Why           string `json:"why,omitempty"`
}

// BucketRow is one collective of one step.
type BucketRow struct {
	Step          int           `json:"step"`
	Index         int           `json:"index"`
	Op            collective.Op `json:"op"`
	ReadyS        float64       `json:"ready_s"`
	Bytes         int64         `json:"bytes"`
	AdmittedBytes int64         `json:"admitted_bytes"`
	FP32S         float64       `json:"fp32_s"`
	// FabricS is the collective's communication on the NEURON-Fabric path,
	// encoding included: max(FP32 groups' network collective, low-bit
	// groups' controller path + encoding).
	FabricS float64 `json:"fabric_s"`
	EncodeS float64 `json:"encode_s"`
	LowBit  bool    `json:"low_bit"`
	// FP32StartS and FabricStartS are when each path starts it, from the
	// start of backward (one collective at a time, in launch order).
	FP32StartS   float64 `json:"fp32_start_s"`
	FabricStartS float64 `json:"fabric_start_s"`
	Unpriced     bool    `json:"unpriced,omitempty"`
}

// StepRow is one step's projection.
type StepRow struct {
	Step       int     `json:"step"`
	ForwardS   float64 `json:"forward_s"`
	BackwardS  float64 `json:"backward_s"`
	OptimizerS float64 `json:"optimizer_s"`
	// FP32Bytes and AdmittedBytes count the gradient collectives
	// (all-reduce and reduce-scatter); OtherBytes the others.
	FP32Bytes     int64 `json:"fp32_bytes"`
	AdmittedBytes int64 `json:"admitted_bytes"`
	OtherBytes    int64 `json:"other_bytes"`
	// FP32S is every priced collective's network time; FabricS the same on
	// the NEURON-Fabric path (encoding included).
	FP32S   float64 `json:"fp32_collectives_s"`
	FabricS float64 `json:"fabric_s"`
	// AstraCycles is FP32S in ASTRA-sim's cycles and AlphaBetaS the
	// alpha-beta ring's time on its link (ASTRA-sim mode only).
	AstraCycles int64   `json:"astra_cycles,omitempty"`
	AlphaBetaS  float64 `json:"alpha_beta_s,omitempty"`
	// ExposedS is the CXL datapath's exposed cost of the step's low-bit
	// parts (G-Binary replay minus identity replay); Exposure the busy
	// time increment the controller path is charged with.
	ExposedS float64 `json:"datapath_exposed_s"`
	Exposure float64 `json:"exposure"`
	EncodeS  float64 `json:"encode_s"`
	// FP32CommEndS and FabricCommEndS end when each path's last
	// collective is done (from the start of backward).
	FP32CommEndS   float64 `json:"fp32_comm_end_s"`
	FabricCommEndS float64 `json:"fabric_comm_end_s"`
	FP32StepS      float64 `json:"fp32_step_s"`
	FabricStepS    float64 `json:"fabric_step_s"`
	SpeedUp        float64 `json:"speed_up"`
	Unpriced       int64   `json:"unpriced,omitempty"`
}

// Result is the what-if of every step.
type Result struct {
	Model       string  `json:"model"`
	Workers     int     `json:"workers"`
	Network     string  `json:"network"`
	CXL         string  `json:"cxl"`
	Memory      string  `json:"memory"`
	Plan        string  `json:"plan"`
	EncodeRate  float64 `json:"encode_s_per_element"`
	EncodeKnown bool    `json:"encode_measured"`
	Astra       bool    `json:"astra,omitempty"`
	// Source is what the trace reader read and left out.
	Source  *workload.Provenance `json:"source,omitempty"`
	Steps   []StepRow            `json:"steps"`
	Groups  []GroupRow           `json:"groups"`
	Ops     []OpRow              `json:"collectives"`
	Buckets []BucketRow          `json:"buckets"`
	// BucketRowsOmitted counts collectives past MaxBucketRows, in every
	// total but without a row.
	BucketRowsOmitted int64    `json:"bucket_rows_omitted,omitempty"`
	Assumptions       []string `json:"assumptions"`
}

// shares returns a bucket's group shares (one AllGroups share when the
// trace does not split it).
func shares(b workload.Bucket) []workload.GroupShare {
	if len(b.Groups) > 0 {
		return b.Groups
	}
	return []workload.GroupShare{{Name: AllGroups, Elements: b.Elements, Mode: lowbit.FP32}}
}

func stepsOf(tr *workload.Trace) []*workload.Trace {
	if len(tr.Steps) > 0 {
		return tr.Steps
	}
	return []*workload.Trace{tr}
}

// encodeRate is the recorded encode cost per low-bit element over every
// step (summed in float64: a trace of 10^12 us on every bucket must not
// wrap); known is false when the recording measured none. ignored counts
// the buckets whose recorded encode time has no low-bit element to charge.
func encodeRate(steps []*workload.Trace) (rate float64, known bool, ignored int64) {
	var ps, el float64
	for _, s := range steps {
		for _, b := range s.Buckets {
			if !b.Op.Aggregates() {
				continue
			}
			var low int64
			for _, g := range shares(b) {
				if g.Mode != lowbit.FP32 {
					low += g.Elements
				}
			}
			switch {
			case low > 0 && b.EncodePS > 0:
				ps += float64(b.EncodePS)
				el += float64(low)
			case low == 0 && b.EncodePS > 0:
				ignored++
			}
		}
	}
	if el == 0 {
		return 0, false, ignored
	}
	return ps * 1e-12 / el, true, ignored
}

// pricing is one run's models.
type pricing struct {
	net   collective.Model
	ab    collective.Model // the alpha-beta ring on ASTRA-sim's link (ASTRA-sim mode)
	astra *collective.Astra
	o     Options
	w     int
	rate  float64
	cfg   timing.Config
	cals  map[replay.Mode]*replay.Calibrator
}

// workers settles the worker count (see Options.Workers) and says how.
func workers(tr *workload.Trace, o Options) (int, string, error) {
	if o.Astra != nil {
		n := o.Astra.Model.Ranks()
		switch {
		case tr.Ranks > 0 && tr.Ranks != n:
			return 0, "", usage.Errorf("the trace has %d rank files; the ASTRA-sim network %s has %d NPUs", tr.Ranks, o.Astra.NetworkFile, n)
		case o.Workers != 0 && o.Workers != n:
			return 0, "", usage.Errorf("--workers %d: the ASTRA-sim network %s has %d NPUs (omit --workers)", o.Workers, o.Astra.NetworkFile, n)
		}
		return n, fmt.Sprintf("%d workers: the ASTRA-sim network's NPUs", n), nil
	}
	switch {
	case tr.Ranks > 0 && o.Workers != 0 && o.Workers != tr.Ranks:
		return 0, "", usage.Errorf("--workers %d: the trace has %d rank files, one per worker (omit --workers)", o.Workers, tr.Ranks)
	case tr.Ranks > 0:
		return tr.Ranks, fmt.Sprintf("%d workers: one per rank file", tr.Ranks), nil
	case o.Workers != 0 && tr.Workers > 0 && o.Workers != tr.Workers:
		return o.Workers, fmt.Sprintf("%d workers as asked (--workers); the trace recorded a job of %d", o.Workers, tr.Workers), nil
	case o.Workers != 0:
		return o.Workers, fmt.Sprintf("%d workers (--workers)", o.Workers), nil
	case tr.Workers > 0:
		return tr.Workers, fmt.Sprintf("%d workers: the recorded job's", tr.Workers), nil
	}
	return DefaultWorkers, fmt.Sprintf("%d workers: the trace does not record its worker count (the default; --workers sets it)", DefaultWorkers), nil
}

// Run prices every step of the trace (tr.Steps, or tr itself). It stops
// with ctx's error when ctx is cancelled.
func Run(ctx context.Context, tr *workload.Trace, o Options) (*Result, error) {
	name := tr.Model
	if tr.Source != nil && len(tr.Source.Files) > 0 {
		name = tr.Source.Files[0]
	}
	if name == "" {
		name = "(unnamed)"
	}
	w, wline, err := workers(tr, o)
	if err != nil {
		return nil, err
	}
	if w < 2 {
		return nil, usage.Errorf("%d workers; a collective needs at least 2", w)
	}
	if tr.BytesPerElement != 4 {
		return nil, fmt.Errorf("whatif: trace %s has %d-byte gradient elements; the FP32 baseline needs 4", name, tr.BytesPerElement)
	}
	if err := o.CXL.Validate(); err != nil {
		return nil, usage.Errorf("--cxl: %v", err)
	}
	if o.Memory == "" {
		o.Memory = DefaultMemory
	}
	cfg, err := timing.PresetConfig(o.Memory)
	if err != nil {
		return nil, usage.Errorf("--memory: %v", err)
	}
	p := &pricing{o: o, w: w, cfg: cfg, cals: map[replay.Mode]*replay.Calibrator{}}
	model := tr.Model
	if model == "" {
		model = name // a trace that names no model is titled by its file
	}
	res := &Result{Model: model, Workers: w, CXL: o.CXL.String(), Memory: o.Memory, Plan: o.Plan.Source, Source: tr.Source}
	if o.Astra != nil {
		m := o.Astra.Model
		p.net, p.astra, res.Astra = m, &m, true
		d := m.Network[0]
		l := collective.Link{Name: "astra-" + strings.ToLower(d.Topology.String()), Bandwidth: collective.AstraBpns(d.BandwidthGBps) * 1e9, Latency: d.LatencyNS * 1e-9}
		p.ab = collective.AlphaBeta{Alg: collective.Ring, N: w, Link: l}
	} else {
		if err := o.Net.Validate(); err != nil {
			return nil, usage.Errorf("--net: %v", err)
		}
		if o.Alg == collective.Hierarchical {
			return nil, usage.Errorf("the hierarchical algorithm needs an intra-node link; use ring, tree or halving-doubling")
		}
		p.net = collective.AlphaBeta{Alg: o.Alg, N: w, Link: o.Net}
	}
	res.Network = p.net.String()
	for g := range o.Plan.Modes {
		if groups := Groups(tr); !slices.Contains(groups, g) {
			return nil, usage.Errorf("the plan names group %q, which the trace does not have (its groups: %s)", g, strings.Join(groups, ", "))
		}
	}
	steps := stepsOf(tr)
	var ignoredEncode int64
	p.rate, res.EncodeKnown, ignoredEncode = encodeRate(steps)
	res.EncodeRate = p.rate
	priced := 0
	for _, s := range steps {
		row, err := p.step(ctx, s, res, &priced)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("whatif %s step %d: %w", name, s.Step, err)
		}
		res.Steps = append(res.Steps, row)
	}
	res.Assumptions = p.assumptions(wline, res.EncodeKnown, ignoredEncode)
	res.Assumptions = append(res.Assumptions, memoryLine(o.Memory))
	for _, s := range res.Steps {
		if s.ExposedS < 0 {
			res.Assumptions = append(res.Assumptions, "a negative datapath exposed cost: the low-bit replay finished before the identity replay on this memory's DRAM schedule; the controller path is charged no exposure then")
			break
		}
	}
	return res, nil
}

// step prices one step's collectives (see the package doc) and appends
// its group, operation and collective rows to res.
func (p *pricing) step(ctx context.Context, s *workload.Trace, res *Result, priced *int) (StepRow, error) {
	row := StepRow{Step: s.Step, ForwardS: ps2s(s.ForwardPS), BackwardS: ps2s(s.BackwardPS), OptimizerS: ps2s(s.OptimizerPS)}
	if err := p.exposure(s, &row); err != nil {
		return row, err
	}
	cxlp := collective.CXLPath{Link: p.o.CXL, Workers: p.w, Shared: p.o.Shared, Exposure: row.Exposure}
	per := map[string]*GroupRow{}
	var order []string
	ops := map[collective.Op]*OpRow{}
	var fp32End, nfEnd float64
	for i, b := range s.Buckets {
		if i%ctxCheckBuckets == 0 {
			if err := ctx.Err(); err != nil {
				return row, err
			}
		}
		or := ops[b.Op]
		if or == nil {
			or = &OpRow{Step: s.Step, Op: b.Op}
			ops[b.Op] = or
		}
		or.Count++
		or.Bytes += b.Bytes
		br := BucketRow{Step: s.Step, Index: b.Index, Op: b.Op, ReadyS: ps2s(b.ReadyPS), Bytes: b.Bytes}
		call := collective.Call{Op: b.Op, Bytes: float64(b.Bytes), RecordedS: ps2s(b.RecordedPS)}
		e, err := p.net.Time(call)
		if errors.Is(err, collective.ErrUnsupported) {
			or.Unpriced++
			or.UnpricedBytes += b.Bytes
			or.Why = strings.TrimPrefix(err.Error(), collective.ErrUnsupported.Error()+": ")
			row.Unpriced++
			br.Unpriced = true
			p.keep(res, br)
			continue
		}
		if err != nil {
			return row, fmt.Errorf("collective %d (%v of %d bytes): %w", b.Index, b.Op, b.Bytes, err)
		}
		if err := p.astraTerms(call, &row); err != nil {
			return row, err
		}
		br.FP32S = e.Seconds
		if b.Op.Aggregates() {
			if err := p.gradient(b, &br, cxlp, per, &order); err != nil {
				return row, err
			}
			row.FP32Bytes += b.Bytes
			row.AdmittedBytes += br.AdmittedBytes
		} else {
			br.FabricS = br.FP32S
			row.OtherBytes += b.Bytes
		}
		ready := br.ReadyS
		br.FP32StartS, br.FabricStartS = math.Max(fp32End, ready), math.Max(nfEnd, ready)
		fp32End, nfEnd = br.FP32StartS+br.FP32S, br.FabricStartS+br.FabricS
		or.FP32S += br.FP32S
		or.FabricS += br.FabricS
		row.FP32S += br.FP32S
		row.FabricS += br.FabricS
		row.EncodeS += br.EncodeS
		p.keep(res, br)
	}
	for _, g := range order {
		res.Groups = append(res.Groups, *per[g])
	}
	for op := range collective.NumOps {
		if r := ops[op]; r != nil {
			res.Ops = append(res.Ops, *r)
		}
	}
	row.FP32CommEndS, row.FabricCommEndS = fp32End, nfEnd
	row.FP32StepS = Project(row.ForwardS, row.BackwardS, row.OptimizerS, fp32End)
	row.FabricStepS = Project(row.ForwardS, row.BackwardS, row.OptimizerS, nfEnd)
	if row.FabricStepS > 0 {
		row.SpeedUp = row.FP32StepS / row.FabricStepS
	}
	return row, nil
}

// keep appends a collective's row while there is room, else counts it.
func (p *pricing) keep(res *Result, br BucketRow) {
	if len(res.Buckets) < MaxBucketRows {
		res.Buckets = append(res.Buckets, br)
		return
	}
	res.BucketRowsOmitted++
}

// astraTerms adds a collective's ASTRA-sim cycles and its alpha-beta ring
// time on the same link to the step (ASTRA-sim mode only).
func (p *pricing) astraTerms(call collective.Call, row *StepRow) error {
	if p.astra == nil {
		return nil
	}
	c, err := p.astra.Cycles(call)
	if err != nil {
		return err
	}
	row.AstraCycles += c.Cycles
	if call.Op == collective.Broadcast {
		row.AlphaBetaS += float64(c.Cycles) * 1e-9 // replayed, not modelled, in both
		return nil
	}
	ab, err := p.ab.Time(call)
	if err != nil {
		return err
	}
	row.AlphaBetaS += ab.Seconds
	return nil
}

// gradient prices an all-reduce or reduce-scatter on the NEURON-Fabric
// path: its FP32 groups on the network, its admitted groups on the
// controller, and adds its group rows.
func (p *pricing) gradient(b workload.Bucket, br *BucketRow, cxlp collective.CXLPath, per map[string]*GroupRow, order *[]string) error {
	var fpBytes, lowTime float64
	for _, g := range shares(b) {
		m := p.o.Plan.Mode(g.Name)
		ga := per[g.Name]
		if ga == nil {
			ga = &GroupRow{Step: br.Step, Group: g.Name, Mode: m.String()}
			per[g.Name] = ga
			*order = append(*order, g.Name)
		}
		ga.Elements += g.Elements
		ga.FP32Bytes += 4 * g.Elements
		ge, err := p.net.Time(collective.Call{Op: b.Op, Bytes: float64(4 * g.Elements)})
		if err != nil {
			return err
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
		ce, err := cxlp.TimeOp(b.Op, g.Elements, bits, true)
		if err != nil {
			return err
		}
		payload := lowbit.PaddedBytes(int64(math.Ceil(float64(g.Elements) * bits / 8)))
		ga.AdmittedBytes += payload
		br.AdmittedBytes += payload
		enc := p.rate * float64(g.Elements)
		ga.FabricS += ce.Seconds
		ga.EncodeS += enc
		br.EncodeS += enc
		lowTime += ce.Seconds + enc
	}
	// A mixed collective's FP32 groups reduce on the network while its
	// low-bit groups encode and cross the controller (the hook does both
	// at once): the collective takes the longer of the two.
	var fpTime float64
	if fpBytes > 0 {
		fe, err := p.net.Time(collective.Call{Op: b.Op, Bytes: fpBytes})
		if err != nil {
			return err
		}
		fpTime = fe.Seconds
	}
	br.FabricS = math.Max(fpTime, lowTime)
	return nil
}

// exposure replays the step's low-bit parts through the timing model at
// their ready times: the datapath's exposed cost and the exposure.
func (p *pricing) exposure(s *workload.Trace, row *StepRow) error {
	var low []timing.Bucket
	for _, b := range s.Buckets {
		if !b.Op.Aggregates() {
			continue
		}
		var n int64
		for _, g := range shares(b) {
			if p.o.Plan.Mode(g.Name) != lowbit.FP32 {
				n += g.Elements
			}
		}
		if n > 0 {
			low = append(low, timing.Bucket{Ready: sim.Time(b.ReadyPS), Lines: replay.Lines(4 * n)})
		}
	}
	if len(low) == 0 {
		return nil
	}
	back := sim.Time(s.BackwardPS)
	var runs [2]replay.Run
	for i, m := range []replay.Mode{replay.Identity, replay.LowBit} {
		c := p.cals[m]
		if c == nil {
			var err error
			if c, err = replay.NewCalibrator(p.cfg, m); err != nil {
				return err
			}
			p.cals[m] = c
		}
		r, err := replay.FastForward(c, low, back)
		if err != nil {
			return err
		}
		runs[i] = r
	}
	inc := replay.Compare(runs[0], runs[1], low, sim.Time(s.ForwardPS), back, p.cfg.PipelineLatency())
	row.ExposedS = ps2s(int64(inc.Exposed))
	row.Exposure = math.Max(0, inc.BusyIncrementPct/100)
	return nil
}

// Project is the projected step time: forward, then backward overlapped
// with the collectives' communication (which ends commEnd after the start
// of backward), then the optimizer: fwd + max(bwd, commEnd) + opt.
func Project(fwd, bwd, opt, commEnd float64) float64 { return fwd + math.Max(bwd, commEnd) + opt }

func ps2s(ps int64) float64 { return float64(ps) * 1e-12 }

func (p *pricing) assumptions(wline string, encodeKnown bool, ignoredEncode int64) []string {
	o := p.o
	a := []string{
		wline,
		fmt.Sprintf("FP32: every collective on the network, each operation by its own formula: %v (collective.Model); only all-reduce and reduce-scatter carry the gradients NEURON-Fabric can aggregate, the others take the network on both paths", p.net),
		fmt.Sprintf("NEURON-Fabric: a gradient collective's admitted groups cross the controller path on %s (collective.CXLPath: written, and read back whole for an all-reduce or as this worker's 1/W shard for a reduce-scatter, 64-byte lines; the bits lowbit stores: G-Binary and G-Ternary, whose positional gate the controller derives, 1 bit an element); its FP32 groups still take the network, at the same time; the collective takes the longer", o.CXL),
		fmt.Sprintf("the controller path is charged the datapath's busy-time increment measured by replaying the step's low-bit parts through the timing model (%s memory, fast-forward), G-Binary against identity", o.Memory),
		"collectives are communicated one at a time in launch order, each from when it is ready (from the start of backward) or the previous one is done; step = forward + max(backward, end of communication) + optimizer",
		collective.UnitsNote,
	}
	if o.Astra != nil {
		a = append(a, o.Astra.Assumptions()...)
		a = append(a, fmt.Sprintf("beside ASTRA-sim's cycles, the alpha-beta ring on the same link (%v) prices the same collectives (a broadcast as ASTRA-sim replays it)", p.ab))
	}
	if encodeKnown {
		a = append(a, fmt.Sprintf("encoding: the recorded encode time per low-bit element (%.3g ns) times each collective's admitted elements, on its critical path; the recorded software vote (the collective backend's) is not charged: on this path the controller votes", p.rate*1e9))
	} else {
		a = append(a, "encoding: the trace recorded no encode cost of a low-bit group (an FP32 run, a profile, a Chakra or profiler trace): not charged")
	}
	if ignoredEncode > 0 {
		a = append(a, fmt.Sprintf("encoding: %d FP32-only bucket(s) recorded an encode_us; no low-bit element to charge it to, so it is not used", ignoredEncode))
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

// memoryLine says which memory the replay ran on.
func memoryLine(preset string) string {
	if preset == timing.PresetIdeal {
		return "memory: the paper's ideal model (fixed-latency memory, one gate), as asked; the default is the " + DefaultMemory + " device preset (--memory " + DefaultMemory + ")"
	}
	d, err := cxldev.Lookup(preset)
	if err != nil {
		return "memory: " + preset
	}
	line := fmt.Sprintf("memory: the %s device preset (%s: %s)", preset, d.Class, d.Description)
	if d.IdleNS > 0 {
		line += fmt.Sprintf(", checked against a published idle read of %.1f ns (%s)", d.IdleNS, d.IdleSource)
	}
	if preset == DefaultMemory {
		line += "; the default: the paper's ideal model with --memory ideal"
	}
	return line
}
