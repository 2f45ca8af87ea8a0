package experiments

import (
	"fmt"

	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/train"
)

// TrainRunResult lays out one training run (`nfabric train run`): per-epoch
// accuracy, the gradient payload per worker and step, the cosine
// diagnostics when recorded, and the final accuracy and per-step costs.
func TrainRunResult(r *train.Result, d DataInfo, seed uint64) *report.Result {
	res := &report.Result{Block: "train-run", Title: fmt.Sprintf("%s on %s (%s, seed %d)", r.Label, d.Name, r.Model, seed), Data: r}
	if s := d.standIn("run"); s != "" {
		res.Skipped, res.Status = append(res.Skipped, s), report.StatusPartial
	}
	ep := report.Table{Name: "epochs", Title: "Per-epoch accuracy", Columns: []string{"epoch", "train loss", "train acc. (%)", "val. loss", "val. acc. (%)"}}
	for _, e := range r.Epochs {
		ep.AddRow(e.Epoch, e.TrainLoss, 100*e.TrainAcc, e.ValLoss, 100*e.ValAcc)
	}
	if r.ResumedFrom > 0 {
		ep.Notes = append(ep.Notes, fmt.Sprintf("Resumed after epoch %d.", r.ResumedFrom))
	}
	tr := report.Table{Name: "traffic", Title: "Gradient payload per worker and step", Columns: []string{"group", "elements", "format", "paper bits", "stored bits", "FP32 bits"}}
	for i, g := range r.Traffic.Paper.Groups {
		tr.AddRow(g.Name, g.Elements, g.Format, g.Bits, r.Traffic.Stored.Groups[i].Bits, g.FP32Bits)
	}
	tr.AddRow("total", r.Params, "ratio "+train.FormatRatio(r.Traffic.Paper.Ratio), r.Traffic.Paper.Bits, r.Traffic.Stored.Bits, r.Traffic.Paper.FP32Bits)
	res.Tables = append(res.Tables, ep, tr)
	if len(r.Diags) > 0 {
		dt := report.Table{Name: "cosine", Title: "Low-bit/FP32 cosine alignment", Columns: []string{"epoch", "steps", "aggregate", "global", "backbone", "head"}}
		for _, d := range r.Diags {
			dt.AddRow(d.Epoch, d.Steps, "G-Binary", d.Binary.Global, d.Binary.Groups[nn.Backbone], d.Binary.Groups[nn.Head])
			dt.AddRow(d.Epoch, d.Steps, "G-Ternary (2-of-3)", d.Ternary.Global, d.Ternary.Groups[nn.Backbone], d.Ternary.Groups[nn.Head])
		}
		res.Tables = append(res.Tables, dt)
	}
	t := r.Timing
	if t.Steps > 0 {
		ms := func(d float64) float64 { return d / 1e6 / float64(t.Steps) }
		res.Summary = append(res.Summary, fmt.Sprintf("final validation accuracy %.2f%%; per step: compute %.1f ms, aggregation %.1f ms, optimizer %.1f ms; %d controller transactions per step",
			100*r.Final, ms(float64(t.Compute)), ms(float64(t.Aggregate)), ms(float64(t.Optimizer)), t.ControllerTransactions/t.Steps))
	} else {
		res.Summary = append(res.Summary, fmt.Sprintf("final validation accuracy %.2f%% (nothing left to train)", 100*r.Final))
	}
	return res
}
