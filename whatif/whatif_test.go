package whatif

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/workload"
)

// handTrace: two buckets of one step. Bucket 0 (ready 1 ms): 1000 head
// elements (FP32 recorded) and 249,000 backbone (G-Binary, encode 2.49 ms
// recorded = 10 ns an element); bucket 1 (ready 3 ms): 750,000 backbone.
// Forward 2 ms, backward 4 ms, optimizer 1 ms.
func handTrace() *workload.Trace {
	return &workload.Trace{Model: "hand", BytesPerElement: 4, ForwardPS: 2e9, BackwardPS: 4e9, OptimizerPS: 1e9,
		Buckets: []workload.Bucket{
			{Index: 0, Elements: 250_000, Bytes: 1_000_000, ReadyPS: 1e9, EncodePS: 2_490_000_000,
				Groups: []workload.GroupShare{{Name: "head", Elements: 1000, Mode: lowbit.FP32}, {Name: "backbone", Elements: 249_000, Mode: lowbit.Binary}}},
			{Index: 1, Elements: 750_000, Bytes: 3_000_000, ReadyPS: 3e9,
				Groups: []workload.GroupShare{{Name: "backbone", Elements: 750_000, Mode: lowbit.Binary}}},
		}}
}

// ring is the closed form 2(n-1) alpha + 2(n-1)/n S/B.
func ring(n int, l collective.Link, s float64) float64 {
	return 2*float64(n-1)*l.Latency + 2*float64(n-1)/float64(n)*s/l.Bandwidth
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-15 }

func TestRunByHand(t *testing.T) {
	net := collective.Link{Name: "slow", Bandwidth: 1e9, Latency: 10e-6}
	cxl := collective.Link{Name: "c", Bandwidth: 64e9, Latency: 1e-6}
	plan, err := ParsePlan("backbone=g-binary,head=fp32")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), handTrace(), Options{Workers: 4, Net: net, CXL: cxl, Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 1 || len(r.Buckets) != 2 {
		t.Fatalf("%d steps, %d buckets", len(r.Steps), len(r.Buckets))
	}
	s := r.Steps[0]
	e := s.Exposure
	if !(e >= 0 && e < 1) {
		t.Fatalf("exposure %v", e)
	}
	// Bucket 0: FP32 ring of 1 MB; the NF path takes max(head's ring of
	// 4000 B, backbone's CXL path + encode). Backbone payload: 249000 bits
	// = 31125 B -> 487 lines = 31168 B.
	fp0 := ring(4, net, 1e6)
	cx0 := 2 * (cxl.Latency + 31168/cxl.Bandwidth) * (1 + e)
	enc0 := 10e-9 * 249_000
	nf0 := math.Max(ring(4, net, 4000), cx0+enc0)
	// Bucket 1: 750000 bits = 93750 B -> 1465 lines = 93760 B.
	fp1 := ring(4, net, 3e6)
	nf1 := 2*(cxl.Latency+93760/cxl.Bandwidth)*(1+e) + 10e-9*750_000
	b0, b1 := r.Buckets[0], r.Buckets[1]
	if !near(b0.FP32S, fp0) || !near(b1.FP32S, fp1) || !near(b0.FabricS, nf0) || !near(b1.FabricS, nf1) {
		t.Fatalf("buckets: fp32 %v %v want %v %v; nf %v %v want %v %v", b0.FP32S, b1.FP32S, fp0, fp1, b0.FabricS, b1.FabricS, nf0, nf1)
	}
	if b0.AdmittedBytes != 4000+31168 || s.AdmittedBytes != 4000+31168+93760 || s.FP32Bytes != 4_000_000 {
		t.Fatalf("bytes %d %d %d", b0.AdmittedBytes, s.AdmittedBytes, s.FP32Bytes)
	}
	// Serial schedule from the ready times.
	fpEnd := math.Max(math.Max(1e-3, 0)+fp0, 3e-3) + fp1
	nfEnd := math.Max(1e-3+nf0, 3e-3) + nf1
	if !near(s.FP32CommEndS, fpEnd) || !near(s.FabricCommEndS, nfEnd) {
		t.Fatalf("comm end %v %v, want %v %v", s.FP32CommEndS, s.FabricCommEndS, fpEnd, nfEnd)
	}
	wantFP := 2e-3 + math.Max(4e-3, fpEnd) + 1e-3
	wantNF := 2e-3 + math.Max(4e-3, nfEnd) + 1e-3
	if !near(s.FP32StepS, wantFP) || !near(s.FabricStepS, wantNF) || !near(s.SpeedUp, wantFP/wantNF) {
		t.Fatalf("steps %v %v (%v), want %v %v", s.FP32StepS, s.FabricStepS, s.SpeedUp, wantFP, wantNF)
	}
	// Per group: head's FP32 ring of its share; backbone's two shares.
	var head, bb GroupRow
	for _, g := range r.Groups {
		switch g.Group {
		case "head":
			head = g
		case "backbone":
			bb = g
		}
	}
	if head.Mode != "fp32" || !near(head.FP32S, ring(4, net, 4000)) || head.AdmittedBytes != 4000 ||
		bb.Mode != "g-binary" || bb.Elements != 999_000 || !near(bb.FP32S, ring(4, net, 996_000)+ring(4, net, 3e6)) {
		t.Fatalf("groups: %+v %+v", head, bb)
	}
	if s.ExposedS < 0 {
		t.Fatalf("exposed %v", s.ExposedS)
	}
}

// TestAllFP32 is the identity case: an FP32 plan leaves the step as it is.
func TestAllFP32(t *testing.T) {
	net := collective.Presets["ib"]
	plan, _ := ParsePlan("fp32")
	r, err := Run(context.Background(), handTrace(), Options{Workers: 2, Net: net, CXL: collective.Presets["cxl"], Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Steps[0]
	if s.SpeedUp != 1 || s.FabricS != s.FP32S || s.AdmittedBytes != s.FP32Bytes || s.ExposedS != 0 || s.EncodeS != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestPlans(t *testing.T) {
	p, err := ParsePlan("backbone=g-ternary,*=g-binary")
	if err != nil || p.Mode("backbone") != lowbit.Ternary || p.Mode("other") != lowbit.Binary {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"", "fp16", "a=fp32,a=fp32", "=fp32", "a=x"} {
		if _, err := ParsePlan(bad); err == nil {
			t.Errorf("ParsePlan(%q) accepted", bad)
		}
	}
	// The default ladder (binary >= .75, ternary >= .5) on hand cosines.
	steps := []*workload.Trace{
		{Diagnostics: map[string]workload.Diagnostics{"a": {CosBinary: 0.1, CosTernary: 0.1}}},
		{Diagnostics: map[string]workload.Diagnostics{"a": {CosBinary: 0.8, CosTernary: 0.6}, "b": {CosBinary: 0.6, CosTernary: 0.55}, "c": {CosBinary: 0.2, CosTernary: 0.1}}},
	}
	pl, err := PlanFromDiagnostics(steps, control.DefaultLadder())
	if err != nil {
		t.Fatal(err)
	}
	if pl.Mode("a") != lowbit.Binary || pl.Mode("b") != lowbit.Ternary || pl.Mode("c") != lowbit.FP32 || pl.Mode("d") != lowbit.FP32 {
		t.Fatalf("%+v", pl)
	}
	if _, err := PlanFromDiagnostics([]*workload.Trace{{}}, control.DefaultLadder()); err == nil || !strings.Contains(err.Error(), "no diagnostics") {
		t.Fatalf("err %v", err)
	}
}

// TestPlanFromDiagnosticsLadder: the planner admits through control.Ladder
// on per-format cosines (trace version 2), written by hand against the
// ladder g-binary >= 0.75, g-ternary >= 0.5, int8 >= 0.95, bfp8 >= 0.95:
// a passes G-Binary; b fails both sign rungs and passes INT8; c fails INT8
// and passes BFP8; d fails everything; e's diagnostics carry no INT8/BFP8
// cosines (a version 1 trace), so those rungs are "not measured" and it
// stays on FP32, as the plane would keep it.
func TestPlanFromDiagnosticsLadder(t *testing.T) {
	r, err := control.ParseLadder("g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95")
	if err != nil {
		t.Fatal(err)
	}
	cos := func(b, t, i8, bf float64) workload.Diagnostics {
		return workload.Diagnostics{CosBinary: b, CosTernary: t, Cosines: map[lowbit.Format]float64{lowbit.Int8: i8, lowbit.BFP8: bf}}
	}
	steps := []*workload.Trace{{Diagnostics: map[string]workload.Diagnostics{
		"a": cos(0.8, 0.6, 0.99, 0.99), "b": cos(0.3, 0.2, 0.97, 0.99), "c": cos(0.3, 0.2, 0.9, 0.96),
		"d": cos(0.3, 0.2, 0.9, 0.9), "e": {CosBinary: 0.3, CosTernary: 0.2}}}}
	pl, err := PlanFromDiagnostics(steps, r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]lowbit.Format{"a": lowbit.Binary, "b": lowbit.Int8, "c": lowbit.BFP8, "d": lowbit.FP32, "e": lowbit.FP32}
	for g, f := range want {
		if pl.Mode(g) != f {
			t.Errorf("group %s: %v, want %v", g, pl.Mode(g), f)
		}
	}
	for _, frag := range []string{
		"control plane ladder (g-binary >= 0.75, g-ternary >= 0.5, int8 >= 0.95, bfp8 >= 0.95)",
		"b: int8 (ladder: G-Binary cosine 0.300 < 0.750, G-Ternary cosine 0.200 < 0.500, INT8 cosine 0.970 >= 0.950)",
		"c: bfp8 (ladder: G-Binary cosine 0.300 < 0.750, G-Ternary cosine 0.200 < 0.500, INT8 cosine 0.900 < 0.950, BFP8 cosine 0.960 >= 0.950)",
		"e: fp32 (ladder: cosines 0.300 (G-Binary) and 0.200 (G-Ternary) below 0.750 and 0.500, INT8 and BFP8 not measured, keep FP32)",
	} {
		if !strings.Contains(pl.Source, frag) {
			t.Errorf("source %q lacks %q", pl.Source, frag)
		}
	}
	// The paper's two rungs read the same diagnostics as before: the
	// 8-bit cosines play no part, and the source keeps its old wording.
	pp, err := PlanFromDiagnostics(steps, control.DefaultLadder())
	if err != nil {
		t.Fatal(err)
	}
	if pp.Mode("a") != lowbit.Binary || pp.Mode("b") != lowbit.FP32 || pp.Mode("c") != lowbit.FP32 ||
		!strings.HasPrefix(pp.Source, "control plane ladder (binary >= 0.75, ternary >= 0.5) on recorded diagnostics: a: g-binary (") {
		t.Fatalf("%+v", pp)
	}
	if _, err := PlanFromDiagnostics(steps, control.Ladder{{Format: lowbit.FP32, Min: 0.5}}); err == nil {
		t.Error("an FP32 rung accepted")
	}
}

// TestSumBits: every format crosses the controller at lowbit's stored
// bits (INT8 8, BFP8 8.125, G-Binary 1, and G-Ternary 1: its positional
// gate needs no gate plane): the admitted bytes of a 250,000-element
// bucket are its payload padded to 64-byte lines, by hand.
func TestSumBits(t *testing.T) {
	net := collective.Link{Name: "slow", Bandwidth: 1e9, Latency: 10e-6}
	cxl := collective.Link{Name: "c", Bandwidth: 64e9, Latency: 1e-6}
	for _, c := range []struct {
		plan string
		want int64
	}{
		// head 1000 elements FP32 (4000 B); backbone 249,000 elements:
		// int8 249,000 B -> 3891 lines = 249,024 B; bfp8 252,890.625 ->
		// 252,891 B -> 3952 lines = 252,928 B.
		{"backbone=int8,head=fp32", 4000 + 249_024},
		{"backbone=bfp8,head=fp32", 4000 + 252_928},
		// g-binary and g-ternary alike: 249,000 bits = 31,125 B -> 487
		// lines = 31,168 B.
		{"backbone=g-binary,head=fp32", 4000 + 31_168},
		{"backbone=g-ternary,head=fp32", 4000 + 31_168},
	} {
		plan, err := ParsePlan(c.plan)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), handTrace(), Options{Workers: 4, Net: net, CXL: cxl, Memory: "ideal", Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Buckets[0].AdmittedBytes; got != c.want {
			t.Errorf("%s: bucket 0 admits %d bytes, want %d", c.plan, got, c.want)
		}
		if !strings.Contains(strings.Join(r.Assumptions, "\n"), "INT8 and BFP8 groups (beyond the paper)") && strings.Contains(c.plan, "8") {
			t.Errorf("%s: assumptions do not state the summed formats' pricing: %q", c.plan, r.Assumptions)
		}
	}
	plan, _ := ParsePlan("backbone=g-binary,head=fp32")
	r, err := Run(context.Background(), handTrace(), Options{Workers: 4, Net: net, CXL: cxl, Memory: "ideal", Plan: plan})
	if err != nil || strings.Contains(strings.Join(r.Assumptions, "\n"), "INT8") {
		t.Errorf("a paper plan's assumptions name INT8: %v %q", err, r.Assumptions)
	}
}

func TestRunErrors(t *testing.T) {
	net, cxl := collective.Presets["ib"], collective.Presets["cxl"]
	plan, _ := ParsePlan("nohead=fp32")
	for name, o := range map[string]Options{
		"workers": {Workers: 1, Net: net, CXL: cxl, Memory: "ideal"},
		"memory":  {Workers: 2, Net: net, CXL: cxl, Memory: "hbm"},
		"group":   {Workers: 2, Net: net, CXL: cxl, Memory: "ideal", Plan: plan},
		"net":     {Workers: 2, CXL: cxl, Memory: "ideal"},
	} {
		if _, err := Run(context.Background(), handTrace(), o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
