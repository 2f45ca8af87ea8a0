package whatif

import (
	"fmt"

	"github.com/neuronfabric/nfabric/report"
)

// Layout renders r as tables (per step, per group and step) and the step
// timeline figure, for the terminal, JSON and the HTML report.
func (r *Result) Layout() (*report.Result, error) {
	sec := report.FormatSeconds
	steps := report.Table{Name: "whatif-steps", Title: "What-if per step: " + r.Model,
		Columns: []string{"step", "forward", "backward", "optimizer", "FP32 bytes", "admitted bytes", "All-Reduce FP32",
			"NEURON-Fabric comm + encoding", "datapath exposed", "encoding", "step FP32", "step NEURON-Fabric", "speed-up"},
		Notes: r.Assumptions}
	for _, s := range r.Steps {
		steps.AddRow(s.Step, sec(s.ForwardS), sec(s.BackwardS), sec(s.OptimizerS), s.FP32Bytes, s.AdmittedBytes,
			sec(s.FP32S), sec(s.FabricS), sec(s.ExposedS), sec(s.EncodeS), sec(s.FP32StepS), sec(s.FabricStepS),
			fmt.Sprintf("%.3fx", s.SpeedUp))
	}
	groups := report.Table{Name: "whatif-groups", Title: "What-if per group and step",
		Columns: []string{"step", "group", "mode", "elements", "FP32 bytes", "admitted bytes", "All-Reduce FP32", "NEURON-Fabric path (no encoding)", "encoding"}}
	for _, g := range r.Groups {
		groups.AddRow(g.Step, g.Group, g.Mode, g.Elements, g.FP32Bytes, g.AdmittedBytes, sec(g.FP32S), sec(g.FabricS), sec(g.EncodeS))
	}
	fig, err := r.timeline()
	if err != nil {
		return nil, err
	}
	summary := []string{
		fmt.Sprintf("%d workers; network %s (%s); controller %s; memory %s.", r.Workers, r.Net, r.Algorithm, r.CXL, r.Memory),
		"Plan: " + r.Plan + ".",
	}
	if n := len(r.Steps); n > 0 {
		s := r.Steps[n-1]
		summary = append(summary, fmt.Sprintf("Step %d: %s FP32, %s with NEURON-Fabric (%.3fx).", s.Step, sec(s.FP32StepS), sec(s.FabricStepS), s.SpeedUp))
	}
	return &report.Result{Block: "whatif", Title: "What NEURON-Fabric would change for " + r.Model, Summary: summary,
		Tables: []report.Table{steps, groups}, Figures: []report.Figure{fig}, Data: r}, nil
}

// timeline is the step figure: per step, the compute, the FP32
// communication and the low-bit path's communication, each as the time it
// occupies from the start of the step.
func (r *Result) timeline() (report.Figure, error) {
	bp := report.BarPlot{Title: "Step timeline: compute, FP32 communication, NEURON-Fabric communication", XLabel: "seconds",
		Groups: []string{"compute (forward + backward + optimizer)", "FP32 communication (busy)", "NEURON-Fabric communication (busy)",
			"projected step, FP32", "projected step, NEURON-Fabric"}}
	for _, s := range r.Steps {
		p := fmt.Sprintf("step %d ", s.Step)
		for _, b := range []struct {
			label string
			v     float64
			g     int
		}{
			{"compute", s.ForwardS + s.BackwardS + s.OptimizerS, 0},
			{"FP32 comm", s.FP32S, 1},
			{"NF comm", s.FabricS, 2},
			{"step FP32", s.FP32StepS, 3},
			{"step NF", s.FabricStepS, 4},
		} {
			bp.Bars = append(bp.Bars, report.Bar{Label: p + b.label, Value: b.v, Text: report.FormatSeconds(b.v), Group: b.g})
		}
	}
	return bp.Figure("whatif-timeline")
}
