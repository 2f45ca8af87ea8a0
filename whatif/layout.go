package whatif

import (
	"fmt"
	"io"

	"github.com/neuronfabric/nfabric/report"
)

// maxTimelineSteps bounds the steps the timeline figure draws.
const maxTimelineSteps = 4

// Layout renders r as tables (per step, per group and step, per
// collective operation), the trace's provenance and the timeline figure,
// for the terminal, JSON and the HTML page.
func (r *Result) Layout() (*report.Result, error) {
	sec := report.FormatSeconds
	steps := report.Table{Name: "whatif-steps", Title: "What-if per step: " + r.Model,
		Columns: []string{"step", "forward", "backward", "optimizer", "gradient bytes FP32", "admitted bytes", "other collectives' bytes",
			"collectives FP32", "NEURON-Fabric comm + encoding", "datapath exposed", "encoding", "step FP32", "step NEURON-Fabric", "speed-up"},
		Notes: r.Assumptions}
	for _, s := range r.Steps {
		steps.AddRow(s.Step, sec(s.ForwardS), sec(s.BackwardS), sec(s.OptimizerS), s.FP32Bytes, s.AdmittedBytes, s.OtherBytes,
			sec(s.FP32S), sec(s.FabricS), sec(s.ExposedS), sec(s.EncodeS), sec(s.FP32StepS), sec(s.FabricStepS),
			fmt.Sprintf("%.3fx", s.SpeedUp))
	}
	tables := []report.Table{steps}
	if r.Astra {
		astra := report.Table{Name: "whatif-astra", Title: "The FP32 collectives per step in ASTRA-sim's cycles, beside the alpha-beta ring on the same link",
			Columns: []string{"step", "ASTRA-sim cycles (1 cycle = 1 ns)", "ASTRA-sim time", "alpha-beta ring, same link", "alpha-beta / ASTRA-sim"}}
		for _, s := range r.Steps {
			ratio := "-"
			if s.AstraCycles > 0 {
				ratio = fmt.Sprintf("%.3f", s.AlphaBetaS/(float64(s.AstraCycles)*1e-9))
			}
			astra.AddRow(s.Step, s.AstraCycles, sec(float64(s.AstraCycles)*1e-9), sec(s.AlphaBetaS), ratio)
		}
		tables = append(tables, astra)
	}
	groups := report.Table{Name: "whatif-groups", Title: "What-if per gradient group and step (all-reduce and reduce-scatter)",
		Columns: []string{"step", "group", "mode", "elements", "FP32 bytes", "admitted bytes", "collective FP32", "NEURON-Fabric path (no encoding)", "encoding"}}
	for _, g := range r.Groups {
		groups.AddRow(g.Step, g.Group, g.Mode, g.Elements, g.FP32Bytes, g.AdmittedBytes, sec(g.FP32S), sec(g.FabricS), sec(g.EncodeS))
	}
	tables = append(tables, groups)
	ops := report.Table{Name: "whatif-collectives", Title: "Collectives per operation and step",
		Columns: []string{"step", "operation", "count", "bytes", "FP32 (network)", "NEURON-Fabric", "path", "not priced"}}
	for _, o := range r.Ops {
		path := "network on both paths"
		if o.Op.Aggregates() {
			path = "admitted groups on the controller"
		}
		unpriced := ""
		if o.Unpriced > 0 {
			unpriced = fmt.Sprintf("%d (%d bytes): %s", o.Unpriced, o.UnpricedBytes, o.Why)
		}
		ops.AddRow(o.Step, o.Op.String(), o.Count, o.Bytes, sec(o.FP32S), sec(o.FabricS), path, unpriced)
	}
	tables = append(tables, ops)
	fig, err := r.Timeline()
	if err != nil {
		return nil, err
	}
	summary := []string{fmt.Sprintf("%d workers; network %s; controller %s; memory %s.", r.Workers, r.Network, r.CXL, r.Memory), "Plan: " + r.Plan + "."}
	summary = append(summary, r.Source.Lines()...)
	if n := len(r.Steps); n > 0 {
		s := r.Steps[n-1]
		summary = append(summary, fmt.Sprintf("Step %d: %s FP32, %s with NEURON-Fabric (%.3fx).", s.Step, sec(s.FP32StepS), sec(s.FabricStepS), s.SpeedUp))
	}
	if r.BucketRowsOmitted > 0 {
		summary = append(summary, fmt.Sprintf("Per-collective rows kept for the first %d collectives (the timeline and --trace-out draw them); %d more are in every total without a row.", len(r.Buckets), r.BucketRowsOmitted))
	}
	return &report.Result{Block: "whatif", Title: "What NEURON-Fabric would change for " + r.Model, Summary: summary,
		Tables: tables, Figures: []report.Figure{fig}, Data: r}, nil
}

// Timeline classes, in legend order.
const (
	clsForward = iota
	clsBackward
	clsOptimizer
	clsFP32Comm
	clsFabricLowBit
	clsFabricFP32
	clsOther
)

var timelineClasses = []string{"forward", "backward", "optimizer", "FP32 gradient collective (network)",
	"NEURON-Fabric: admitted groups on the controller", "NEURON-Fabric: FP32 groups on the network", "other collectives (network, both paths)"}

// span is one bar of the timeline, in seconds from the start of its step.
type span struct {
	lane, class int
	start, end  float64
	name        string
	bucket      int
	bytes       int64
}

// spans lays out the first steps (the kept collective rows) as bars:
// per step, the FP32 path's compute and communication and the
// NEURON-Fabric path's; lanes returns their labels.
func (r *Result) spans(maxSteps int) (bars []span, lanes []string) {
	byStep := map[int][]BucketRow{}
	for _, b := range r.Buckets {
		byStep[b.Step] = append(byStep[b.Step], b)
	}
	for i, s := range r.Steps {
		if i >= maxSteps {
			break
		}
		base := len(lanes)
		p := fmt.Sprintf("step %d · ", s.Step)
		lanes = append(lanes, p+"FP32 · compute", p+"FP32 · collectives", p+"NEURON-Fabric · compute", p+"NEURON-Fabric · collectives")
		bwdStart := s.ForwardS
		for k, end := range []float64{s.FP32CommEndS, s.FabricCommEndS} {
			lane := base + 2*k
			bars = append(bars,
				span{lane, clsForward, 0, s.ForwardS, "forward", -1, 0},
				span{lane, clsBackward, bwdStart, bwdStart + s.BackwardS, "backward", -1, 0})
			opt := bwdStart + max(s.BackwardS, end)
			bars = append(bars, span{lane, clsOptimizer, opt, opt + s.OptimizerS, "optimizer", -1, 0})
		}
		for _, b := range byStep[s.Step] {
			if b.Unpriced {
				continue
			}
			fp, nf := clsOther, clsOther
			if b.Op.Aggregates() {
				fp, nf = clsFP32Comm, clsFabricFP32
				if b.LowBit {
					nf = clsFabricLowBit
				}
			}
			name := fmt.Sprintf("%v %d", b.Op, b.Index)
			bars = append(bars,
				span{base + 1, fp, bwdStart + b.FP32StartS, bwdStart + b.FP32StartS + b.FP32S, name, b.Index, b.Bytes},
				span{base + 3, nf, bwdStart + b.FabricStartS, bwdStart + b.FabricStartS + b.FabricS, name, b.Index, b.Bytes})
		}
	}
	return bars, lanes
}

// Timeline is the step figure: a Gantt chart of each drawn step's
// compute (forward, backward, optimizer where each path's projection puts
// it) and of every collective's communication on the FP32 path and on the
// NEURON-Fabric path, over time from the step's start.
func (r *Result) Timeline() (report.Figure, error) {
	bars, lanes := r.spans(maxTimelineSteps)
	hi := 0.0
	for _, b := range bars {
		hi = max(hi, b.end)
	}
	unit, size := report.TimeUnit(hi)
	title := "Step timeline: compute and every collective, FP32 against NEURON-Fabric"
	if len(r.Steps) > maxTimelineSteps {
		title += fmt.Sprintf(" (the first %d of %d steps)", maxTimelineSteps, len(r.Steps))
	}
	g := report.Gantt{Title: title, XLabel: "time from the start of the step (" + unit + ")", Lanes: lanes, Classes: timelineClasses}
	for _, b := range bars {
		g.Bars = append(g.Bars, report.GanttBar{Lane: b.lane, Class: b.class, Start: b.start / size, End: b.end / size})
	}
	return g.Figure("whatif-timeline")
}

// WriteTrace writes the timeline of every step with kept collective rows
// as Chrome/Perfetto trace-event JSON: one process per path (FP32,
// NEURON-Fabric), a compute and a communication thread in each, steps laid
// one after another as each path projects them.
func (r *Result) WriteTrace(w io.Writer) error {
	bars, lanes := r.spans(len(r.Steps))
	var evs []report.TraceEvent
	offset := [2]float64{} // each path's start of the current step
	stepOf := func(lane int) int { return lane / 4 }
	cur := -1
	for _, b := range bars {
		if st := stepOf(b.lane); st != cur {
			if cur >= 0 {
				s := r.Steps[cur]
				offset[0] += s.FP32StepS
				offset[1] += s.FabricStepS
			}
			cur = st
		}
		path := (b.lane % 4) / 2 // 0 FP32, 1 NEURON-Fabric
		thread := []string{"compute", "communication"}[b.lane%2]
		ev := report.TraceEvent{Process: []string{"FP32", "NEURON-Fabric"}[path], Thread: thread, Name: b.name,
			StartUS: (offset[path] + b.start) * 1e6, DurUS: (b.end - b.start) * 1e6,
			Args: map[string]any{"step": r.Steps[cur].Step, "class": timelineClasses[b.class]}}
		if b.bucket >= 0 {
			ev.Args["collective"], ev.Args["bytes"] = b.bucket, b.bytes
		}
		evs = append(evs, ev)
	}
	_ = lanes
	meta := map[string]any{"workers": r.Workers, "network": r.Network, "plan": r.Plan, "collective_rows_omitted": r.BucketRowsOmitted}
	return report.WriteTraceEvents(w, evs, meta)
}
