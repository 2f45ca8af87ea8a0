package experiments

import (
	"context"
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/workload"
)

func init() {
	RegisterReport("collective", "Collective cost and GPT-scale check (Sec. 5.1, Sec. 9, Fig. 7)", 30, runCollectiveBlock)
}

// Paper figures (comparison columns only).
const (
	paperFig7BinaryMS  = 2.77
	paperFig7TernaryMS = 4.38
	paperFig7FP32Range = "87.31–228.00"
)

var paperGPTScaleCycles = map[string]string{"bert-large": "0.78M", "gpt2-xl": "3.4M", "gpt3": "399M"}

// CollectiveOptions parameterises Fig. 7 and the GPT-scale check.
type CollectiveOptions struct {
	// Model is a built-in profile name or a YAML profile path (Fig. 7).
	Model string
	// Workers is W (default 8, the paper's virtual workers).
	Workers int
	// Links are user links that override or extend the presets.
	Links []collective.Link
	// Net is the link of the FP32 software collectives (default "ib");
	// Intra and PerNode configure the hierarchical row (default "nvlink", 4).
	Net, Intra string
	PerNode    int
	// CXL is the controller link (default "cxl": 128 GiB/s, 200 ns).
	CXL string
	// Shared makes the W workers share one controller port.
	Shared bool
	// Exposure is the exposed low-bit datapath fraction; a negative value
	// measures it with the timing model's full-LLC-miss anchor.
	Exposure float64
	// ExposureNote says where a given Exposure came from (default "given").
	ExposureNote string
	// Elements overrides the model's gradient elements (0 = the profile's).
	Elements int64
	// Window is how the GPT-scale check forms an All-Reduce window: "cxl"
	// (FP32 write+read through the controller, default) or an algorithm
	// name (ring, tree, ...) over Net.
	Window string
	// Models are the GPT-scale check's profiles (default bert-large,
	// gpt2-xl, gpt3).
	Models []string
}

func (o *CollectiveOptions) defaults() {
	if o.Model == "" {
		o.Model = "gpt2-xl"
	}
	if o.Workers == 0 {
		o.Workers = 8
	}
	if o.Net == "" {
		o.Net = "ib"
	}
	if o.Intra == "" {
		o.Intra = "nvlink"
	}
	if o.PerNode == 0 {
		o.PerNode = 4
	}
	if o.CXL == "" {
		o.CXL = "cxl"
	}
	if o.Window == "" {
		o.Window = "cxl"
	}
	if len(o.Models) == 0 {
		o.Models = []string{"bert-large", "gpt2-xl", "gpt3"}
	}
}

// MeasureExposure runs the timing model at the paper's full-LLC-miss anchor
// (timing.DefaultConfig: 8 streams x 2 MiB against an 8 MiB LLC, 128 GiB/s,
// 200 ns, five 2 GHz stages) and returns the G-Binary exposed fraction.
func MeasureExposure() (float64, error) {
	p, err := timing.RunPair(timing.DefaultConfig(), timing.Sweep{})
	if err != nil {
		return 0, fmt.Errorf("measure exposure: %w", err)
	}
	return p.OverheadPct / 100, nil
}

const exposureNote = "measured by the timing model at the full-LLC-miss anchor"

func (o *CollectiveOptions) exposure(cfg Config) (float64, string, error) {
	if o.Exposure >= 0 {
		if o.ExposureNote == "" {
			return o.Exposure, "given", nil
		}
		return o.Exposure, o.ExposureNote, nil
	}
	cfg.logf("measuring the full-LLC-miss exposure with the timing model")
	e, err := MeasureExposure()
	return e, exposureNote, err
}

func ms(s float64) string { return fmt.Sprintf("%.2f", s*1e3) }

// Fig7Row is one modelled path of Fig. 7.
type Fig7Row struct {
	Path     string  `json:"path"`
	Route    string  `json:"route"`
	Elements int64   `json:"elements"`
	Bits     float64 `json:"bits_per_element"`
	Traffic  float64 `json:"normalized_traffic"`
	Seconds  float64 `json:"seconds"`
	AlgBW    float64 `json:"algbw"`
	BusBW    float64 `json:"busbw"`
	Paper    string  `json:"paper_ms,omitempty"`
	Family   string  `json:"family"`
}

// Fig7 models one All-Reduce of a model's gradients on every path.
func Fig7(ctx context.Context, cfg Config, o CollectiveOptions) (*report.Result, error) {
	o.defaults()
	p, err := workload.LoadProfile(o.Model, 0)
	if err != nil {
		return nil, err
	}
	net, err := collective.LookupLink(o.Net, o.Links)
	if err != nil {
		return nil, fmt.Errorf("--net: %w", err)
	}
	intra, err := collective.LookupLink(o.Intra, o.Links)
	if err != nil {
		return nil, fmt.Errorf("--intra: %w", err)
	}
	cxl, err := collective.LookupLink(o.CXL, o.Links)
	if err != nil {
		return nil, fmt.Errorf("--cxl: %w", err)
	}
	if o.Workers < 1 {
		return nil, fmt.Errorf("workers %d must be >= 1", o.Workers)
	}
	e, eSrc, err := o.exposure(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	elems := p.Params()
	if o.Elements > 0 {
		elems = o.Elements
	}
	path := collective.CXLPath{Link: cxl, Workers: o.Workers, Shared: o.Shared, Exposure: e}
	var rows []Fig7Row
	add := func(r Fig7Row, est collective.Estimate) {
		r.Elements, r.Seconds, r.AlgBW, r.BusBW = elems, est.Seconds, est.AlgBW, est.BusBW
		r.Traffic = r.Bits / 32
		rows = append(rows, r)
	}
	S := float64(elems) * 4
	// FP32 references.
	est, err := path.Time(elems, 32, false)
	if err != nil {
		return nil, err
	}
	add(Fig7Row{Path: "FP32 CXL pooling (write + read, no aggregation)", Route: cxl.Name, Bits: 32, Family: "FP32 reference"}, est)
	for _, alg := range []collective.Algorithm{collective.Ring, collective.Tree, collective.HalvingDoubling} {
		est, err := collective.AllReduce{Alg: alg, N: o.Workers, Link: net}.Time(S)
		if err != nil {
			return nil, err
		}
		add(Fig7Row{Path: "FP32 NCCL/RDMA " + alg.String(), Route: fmt.Sprintf("%s, %d workers", net.Name, o.Workers), Bits: 32, Family: "FP32 reference"}, est)
	}
	if o.PerNode > 1 && o.Workers > o.PerNode && o.Workers%o.PerNode == 0 {
		est, err := collective.AllReduce{Alg: collective.Hierarchical, N: o.Workers, PerNode: o.PerNode, Intra: intra, Link: net}.Time(S)
		if err != nil {
			return nil, err
		}
		add(Fig7Row{Path: "FP32 hierarchical", Route: fmt.Sprintf("%d x %s + %d nodes x %s", o.PerNode, intra.Name, o.Workers/o.PerNode, net.Name), Bits: 32, Family: "FP32 reference"}, est)
	}
	ring, _ := collective.AllReduce{Alg: collective.Ring, N: o.Workers, Link: net}.Time(S)
	add(Fig7Row{Path: "SignOfMean (FP32 ring mean, then sign)", Route: net.Name, Bits: 32, Family: "software sign"}, ring)
	ag, err := collective.AllGather(o.Workers, net, math.Ceil(float64(elems)/8))
	if err != nil {
		return nil, err
	}
	add(Fig7Row{Path: "MajoritySignSGD (ring all-gather of signs)", Route: net.Name, Bits: 1, Family: "software sign"}, ag)
	// The controller paths.
	for _, c := range []struct {
		name  string
		bits  float64
		paper string
	}{
		{"G-Binary (CXL controller)", lowbit.BitsPerElement(lowbit.Binary, lowbit.Gate{}, lowbit.PaperAccounting), fmt.Sprint(paperFig7BinaryMS)},
		{"G-Ternary (CXL controller, paper's 1.58-bit accounting)", lowbit.BitsPerElement(lowbit.Ternary, lowbit.Gate{}, lowbit.PaperAccounting), fmt.Sprint(paperFig7TernaryMS)},
		{"G-Ternary (CXL controller, 2 bit-planes: sign + worker gate)", 2, ""},
	} {
		est, err := path.Time(elems, c.bits, true)
		if err != nil {
			return nil, err
		}
		add(Fig7Row{Path: c.name, Route: cxl.Name, Bits: c.bits, Paper: c.paper, Family: "NEURON-Fabric"}, est)
	}

	t := report.Table{Name: "fig7", Title: fmt.Sprintf("Fig. 7 analogue: one All-Reduce of %s's gradients (%d elements, %.2f GB FP32)", p.Name, elems, S/1e9),
		Columns: []string{"path", "route", "bits/elem", "normalized traffic", "measured ms", "paper ms", "algbw GB/s (FP32-equivalent)", "busbw GB/s"}}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		busbw := report.FormatFloat(r.BusBW / 1e9)
		if r.Route == cxl.Name {
			busbw = "" // no ring of links: busbw does not apply
		}
		t.AddRow(r.Path, r.Route, r.Bits, r.Traffic, ms(r.Seconds), r.Paper, r.AlgBW/1e9, busbw)
		if r.Family == "FP32 reference" {
			lo, hi = math.Min(lo, r.Seconds), math.Max(hi, r.Seconds)
		}
	}
	t.AddRow("FP32 references (range)", "", 32, 1.0, ms(lo)+"–"+ms(hi), paperFig7FP32Range, "", "")

	// The paper's payload: the same formulas on 1.5e9 elements.
	implied := int64(1_500_000_000)
	fp, _ := path.Time(implied, 32, false)
	gb, _ := path.Time(implied, 1, true)
	gt, _ := path.Time(implied, lowbit.PaperTernaryBits, true)
	shareNote := "each worker has its own CXL port at the link bandwidth"
	if o.Shared {
		shareNote = fmt.Sprintf("the %d workers share one controller port (time x %d)", o.Workers, o.Workers)
	}
	t.Notes = []string{
		fmt.Sprintf("CXL rows: t = 2 (alpha + payload/B) (1 + e): each worker writes its packed payload (rounded up to 64-byte lines) and reads the aggregate back over %s; %s; e = %.3f%% exposed datapath (%s) on the low-bit rows only, 0 on the FP32 bypass row.", cxl, shareNote, 100*e, eSrc),
		fmt.Sprintf("Software rows: alpha-beta models on %s with %d workers (ring 2(n-1) alpha + 2(n-1)/n S/B; double binary tree 2 ceil(log2 n) alpha + 2 S/B; halving-doubling 2 log2 n alpha + 2(n-1)/n S/B; hierarchical intra reduce-scatter + inter ring + intra all-gather on %s); busbw = algbw x 2(n-1)/n (NCCL convention). MajoritySignSGD gathers every worker's 1-bit signs: (n-1) alpha + (n-1) S_sign/B.", net, o.Workers, intra),
		"Normalized traffic counts gradient payload bits per element / 32 (the paper's accounting: G-Ternary 1.58 bits); the 2-plane G-Ternary row is what a per-worker gate costs when stored, while the paper's positional 2-of-3 gate needs no gate bits at all.",
	}
	if p.Name == "gpt2-xl" {
		t.Notes = append(t.Notes,
			fmt.Sprintf("What reproduces the paper: 87.31 ms is exactly 1.5e9 x 4 B written and read at 128 GiB/s (2 x 6e9 B / 2^37 B/s = %s ms here); the same formula at 1 bit and 1.58 bits gives %s / %s ms with our e, and 2.77 / 4.38 ms with e = 1.67%% — so the paper's rows appear to use a 1.5B-element payload (GPT-2 XL's nominal size; the exact count is %d) and its full-LLC-miss exposure. We do not tune: our rows use the profile's exact count and our measured e.", ms(fp.Seconds), ms(gb.Seconds), ms(gt.Seconds), p.Params()),
			"228.00 ms, the top of the paper's FP32 range, implies 26.3 GB/s for 6 GB (46 GB/s with the 8-worker ring factor 1.75); no preset here reproduces it exactly, and the paper does not state its network. Our range depends on --net.")
	}
	t.Notes = append(t.Notes,
		"These are modelled communication times of one All-Reduce, not training-step speedups (as in the paper).")

	res := &report.Result{Block: "collective", Title: "Fig. 7: modelled All-Reduce time, " + p.Name, Tables: []report.Table{t}}
	fig, err := fig7Plot(p.Name, rows)
	if err != nil {
		return nil, err
	}
	res.Figures = append(res.Figures, fig)
	res.Data = map[string]any{"model": p.Name, "elements": elems, "exposure": e, "rows": rows}
	return res, nil
}

func fig7Plot(model string, rows []Fig7Row) (report.Figure, error) {
	lp := report.LinePlot{Title: "Fig. 7: " + model + " All-Reduce time vs normalized traffic", XLabel: "normalized gradient traffic (x FP32)", YLabel: "modelled time (ms)", LogX: true, LogY: true}
	var fams []string
	byFam := map[string]*report.Series{}
	for _, r := range rows {
		s, ok := byFam[r.Family]
		if !ok {
			s = &report.Series{Name: r.Family}
			byFam[r.Family] = s
			fams = append(fams, r.Family)
		}
		s.X = append(s.X, r.Traffic)
		s.Y = append(s.Y, r.Seconds*1e3)
	}
	for _, f := range fams {
		lp.Series = append(lp.Series, *byFam[f])
	}
	return lp.Figure("fig7-" + model)
}

// GPTScaleRow is one model of the GPT-scale sanity check.
type GPTScaleRow struct {
	Model    string  `json:"model"`
	Params   int64   `json:"params"`
	WindowS  float64 `json:"window_s"`
	Exposure float64 `json:"exposure"`
	Cycles   float64 `json:"exposed_cycles"`
}

// GPTScale multiplies each model's All-Reduce window by the exposure, in
// controller cycles.
func GPTScale(ctx context.Context, cfg Config, o CollectiveOptions) (*report.Result, error) {
	o.defaults()
	e, eSrc, err := o.exposure(cfg)
	if err != nil {
		return nil, err
	}
	clockHz := timing.DefaultConfig().Controller.ClockGHz * 1e9
	var winDesc string
	window := func(elems int64) (float64, error) {
		if o.Window == "cxl" {
			cxl, err := collective.LookupLink(o.CXL, o.Links)
			if err != nil {
				return 0, err
			}
			winDesc = fmt.Sprintf("FP32 write + read through the controller over %s (the path whose exposure the timing model measures)", cxl)
			est, err := collective.CXLPath{Link: cxl, Workers: o.Workers, Shared: o.Shared}.Time(elems, 32, false)
			return est.Seconds, err
		}
		alg, err := collective.ParseAlgorithm(o.Window)
		if err != nil {
			return 0, err
		}
		net, err := collective.LookupLink(o.Net, o.Links)
		if err != nil {
			return 0, err
		}
		intra, _ := collective.LookupLink(o.Intra, o.Links)
		winDesc = fmt.Sprintf("FP32 %s All-Reduce of %d workers over %s", alg, o.Workers, net)
		est, err := collective.AllReduce{Alg: alg, N: o.Workers, Link: net, Intra: intra, PerNode: o.PerNode}.Time(float64(elems) * 4)
		return est.Seconds, err
	}
	t := report.Table{Name: "gpt-scale", Title: "GPT-scale sanity check (Sec. 5.1): All-Reduce window x full-LLC-miss exposure",
		Columns: []string{"model", "params", "window ms", "exposure %", "measured exposed cycles", "paper exposed cycles"}}
	var rows []GPTScaleRow
	for _, m := range o.Models {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := workload.LoadProfile(m, 0)
		if err != nil {
			return nil, err
		}
		w, err := window(p.Params())
		if err != nil {
			return nil, err
		}
		r := GPTScaleRow{Model: p.Name, Params: p.Params(), WindowS: w, Exposure: e, Cycles: w * e * clockHz}
		rows = append(rows, r)
		t.AddRow(r.Model, r.Params, fmt.Sprintf("%.1f", w*1e3), 100*e, humanCount(r.Cycles), paperGPTScaleCycles[p.Name])
	}
	t.Notes = []string{
		fmt.Sprintf("Window: %s. Exposure e = %.3f%% (%s). Cycles at the %.0f GHz controller clock: window x e x f.", winDesc, 100*e, eSrc, clockHz/1e9),
		"The paper's windows come from Astra-Sim (topology not stated). Dividing its cycles by 1.67% x 2 GHz gives windows of about 23.4, 101.8 and 11,946 ms, i.e. about 58.6 GB/s of FP32 payload for the nominal 340M, 1.5B and 175B parameters alike; our default window moves FP32 at 64 GiB/s (write + read at 128 GiB/s), so our cycles differ by that rate ratio and by our exact parameter counts and measured e. Use --window ring --net ... to form the window from a network collective instead.",
	}
	return &report.Result{Block: "collective", Title: "GPT-scale sanity check", Tables: []report.Table{t}, Data: rows}, nil
}

// humanCount prints 1234567 as 1.23M.
func humanCount(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func runCollectiveBlock(ctx context.Context, cfg Config) (*report.Result, error) {
	e, err := MeasureExposure()
	if err != nil {
		return nil, err
	}
	o := CollectiveOptions{Exposure: e, ExposureNote: exposureNote}
	f7, err := Fig7(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	gs, err := GPTScale(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	res := &report.Result{Block: "collective", Title: "Collective cost and GPT-scale check (Sec. 5.1, Sec. 9, Fig. 7)",
		Summary: []string{fmt.Sprintf("Full-LLC-miss exposure measured by the timing model: %.3f%% (paper: 1.67%%).", 100*e)},
		Tables:  append(f7.Tables, gs.Tables...), Figures: f7.Figures,
		Data: map[string]any{"exposure": e, "fig7": f7.Data, "gpt_scale": gs.Data}}
	return res, nil
}
