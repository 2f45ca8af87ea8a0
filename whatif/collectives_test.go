package whatif

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/neuronfabric/nfabric/workload"
)

func parse(t *testing.T, js string) *workload.Trace {
	t.Helper()
	tr, err := workload.ParseTraceJSON([]byte(js), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

var (
	slow = collective.Link{Name: "slow", Bandwidth: 1e9, Latency: 10e-6}
	fast = collective.Link{Name: "c", Bandwidth: 64e9, Latency: 1e-6}
)

// TestEveryOperation: each collective is priced by its own formula (the
// closed forms, n = 4 ranks on 1 GB/s and 10 us: ring all-reduce 6 alpha
// + 1.5 S/B; reduce-scatter 3 alpha + 0.75 S/B; all-gather 3 alpha + 3
// S/B; all-to-all 3 alpha + 0.75 S/B; broadcast 3 alpha + S/B), the
// reduce-scatter's admitted elements take the controller (written whole,
// read back as a 1/4 shard), and the others take the network on both
// paths, listed per operation.
func TestEveryOperation(t *testing.T) {
	tr := parse(t, `{"buckets":[
 {"bytes":4000000,"ready_us":0},
 {"bytes":4000000,"ready_us":0,"collective":"reduce-scatter"},
 {"bytes":1000000,"ready_us":0,"collective":"all-gather"},
 {"bytes":2000000,"ready_us":0,"collective":"all-to-all"},
 {"bytes":500000,"ready_us":0,"collective":"broadcast"}]}`)
	plan, _ := ParsePlan("g-binary")
	r, err := Run(context.Background(), tr, Options{Workers: 4, Net: slow, CXL: fast, Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	a := 10e-6
	want := []float64{6*a + 1.5*4e6/1e9, 3*a + 0.75*4e6/1e9, 3*a + 3*1e6/1e9, 3*a + 0.75*2e6/1e9, 3*a + 5e5/1e9}
	for i, w := range want {
		if b := r.Buckets[i]; !near(b.FP32S, w) {
			t.Errorf("bucket %d (%v): %v s; by hand %v", i, b.Op, b.FP32S, w)
		}
	}
	e := r.Steps[0].Exposure
	// Reduce-scatter of 10^6 elements at 1 bit: 125,000 B written (1954
	// lines = 125,056 B), 250,000 elements read back: 31,250 B (489 lines
	// = 31,296 B).
	rs := r.Buckets[1]
	if w := (2*fast.Latency + (125056+31296)/fast.Bandwidth) * (1 + e); !near(rs.FabricS, w) || !rs.LowBit {
		t.Errorf("reduce-scatter on the controller %v s; by hand %v", rs.FabricS, w)
	}
	for _, i := range []int{2, 3, 4} {
		if b := r.Buckets[i]; b.FabricS != b.FP32S || b.LowBit {
			t.Errorf("bucket %d (%v) took the controller: %+v", i, b.Op, b)
		}
	}
	if s := r.Steps[0]; s.FP32Bytes != 8_000_000 || s.OtherBytes != 3_500_000 {
		t.Errorf("gradient bytes %d, other %d; want 8e6 and 3.5e6", s.FP32Bytes, s.OtherBytes)
	}
	if len(r.Ops) != 5 {
		t.Errorf("%d operation rows; want 5", len(r.Ops))
	}
}

// TestAstraUnpriced: under ASTRA-sim's mode a BARRIER (which ASTRA-sim
// stops on) is listed as unpriced with why, never dropped; the
// all-reduce is priced in its cycles.
func TestAstraUnpriced(t *testing.T) {
	m, _ := collective.NewAstra(collective.RTTemplateSystem, []collective.AstraDim{collective.RTTemplateNetwork})
	tr := parse(t, `{"buckets":[{"bytes":1048576,"ready_us":0},{"bytes":0,"ready_us":1,"collective":"barrier"}]}`)
	plan, _ := ParsePlan("fp32")
	r, err := Run(context.Background(), tr, Options{Astra: &collective.AstraConfig{Model: m, NetworkFile: "n.yml", SystemFile: "s.json"}, CXL: fast, Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Steps[0]
	if s.AstraCycles != collective.RTTemplateCycles || s.Unpriced != 1 || r.Workers != 8 {
		t.Errorf("cycles %d, unpriced %d, workers %d", s.AstraCycles, s.Unpriced, r.Workers)
	}
	found := false
	for _, o := range r.Ops {
		found = found || (o.Op == collective.Barrier && o.Unpriced == 1 && strings.Contains(o.Why, "Unsupported collective comm type"))
	}
	res, _ := r.Layout()
	if !found || !strings.Contains(res.Text(), "Unsupported collective comm type") {
		t.Errorf("the barrier is not listed as unpriced: %+v", r.Ops)
	}
}

// TestEncodeSumCannotWrap (a hostile probe's case): ten buckets with
// an encode_us of 10^12 each sum to 10^19 ps, past int64; the rate is
// summed in float64, so encoding is positive and the speed-up below 1.
func TestEncodeSumCannotWrap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"buckets":[`)
	for i := range 10 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"bytes":4000,"ready_us":%d,"encode_us":1e12,"groups":[{"name":"a","elements":1000,"mode":"g-binary"}]}`, i)
	}
	b.WriteString(`]}`)
	plan, _ := ParsePlan("g-binary")
	r, err := Run(context.Background(), parse(t, b.String()), Options{Workers: 2, Net: slow, CXL: fast, Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Steps[0]
	if !(r.EncodeRate > 0) || !(s.EncodeS > 0) || !(s.SpeedUp < 1) || math.IsInf(s.FabricStepS, 0) {
		t.Errorf("rate %v, encoding %v s, speed-up %v", r.EncodeRate, s.EncodeS, s.SpeedUp)
	}
	// 10 x 10^6 s over 10,000 elements = 1000 s an element.
	if !near(r.EncodeRate, 1000) {
		t.Errorf("rate %v s an element; want 1000", r.EncodeRate)
	}
}

// TestErrorsNameTheFile (a hostile probe's case): an error about a trace names its
// file, not its (empty) model.
func TestErrorsNameTheFile(t *testing.T) {
	tr := parse(t, `{"bytes_per_element":2,"buckets":[{"bytes":4,"ready_us":0}]}`)
	_, err := Run(context.Background(), tr, Options{Workers: 2, Net: slow, CXL: fast, Memory: "ideal", Plan: Plan{Source: "x"}})
	if err == nil || !strings.Contains(err.Error(), "trace t.json has 2-byte gradient elements") {
		t.Errorf("err %v; want it to name t.json", err)
	}
	// A trace that names no model (a CSV trace) is titled by its file.
	plan, _ := ParsePlan("fp32")
	r, err := Run(context.Background(), parse(t, `{"buckets":[{"bytes":4,"ready_us":0}]}`), Options{Workers: 2, Net: slow, CXL: fast, Memory: "ideal", Plan: plan})
	if err != nil || r.Model != "t.json" {
		t.Errorf("model %q, %v; want t.json", r.Model, err)
	}
	if res, _ := r.Layout(); !strings.HasSuffix(res.Title, "for t.json") {
		t.Errorf("title %q", res.Title)
	}
}

// TestWorkers (a hostile probe's case): a trace's recorded worker count is used
// when none is asked; another one asked is used and said; rank files fix
// the count.
func TestWorkers(t *testing.T) {
	tr := parse(t, `{"workers":4,"buckets":[{"bytes":4000,"ready_us":0}]}`)
	plan, _ := ParsePlan("fp32")
	o := Options{Net: slow, CXL: fast, Memory: "ideal", Plan: plan}
	r, err := Run(context.Background(), tr, o)
	if err != nil || r.Workers != 4 || !strings.Contains(r.Assumptions[0], "4 workers: the recorded job's") {
		t.Fatalf("recorded workers: %v %d %q", err, r.Workers, r.Assumptions[0])
	}
	o.Workers = 16
	r, err = Run(context.Background(), tr, o)
	if err != nil || r.Workers != 16 || !strings.Contains(r.Assumptions[0], "the trace recorded a job of 4") {
		t.Fatalf("asked workers: %v %d %q", err, r.Workers, r.Assumptions[0])
	}
	tr.Ranks, tr.Workers = 8, 8
	if _, err := Run(context.Background(), tr, o); !usage.Is(err) || !strings.Contains(err.Error(), "8 rank files") {
		t.Fatalf("workers against rank files: %v", err)
	}
	bare := parse(t, `{"buckets":[{"bytes":4000,"ready_us":0}]}`)
	o.Workers = 0
	if r, err := Run(context.Background(), bare, o); err != nil || r.Workers != DefaultWorkers || !strings.Contains(r.Assumptions[0], "does not record") {
		t.Fatalf("default workers: %v %+v", err, r)
	}
}

// TestDefaultPlan: a trace whose only group is "all" is admitted on
// G-Binary; the layer-aware default keeps a head on FP32; a recorded
// policy is the default when the trace carries one; ResolvePlan's errors
// list the trace's groups and a ladder given without --plan recorded is a
// usage error (a hostile probe's case).
func TestDefaultPlan(t *testing.T) {
	all := parse(t, `{"buckets":[{"bytes":4000,"ready_us":0}]}`)
	p, err := ResolvePlan("", control.DefaultLadder(), false, all)
	if err != nil || p.Mode(AllGroups).String() != "g-binary" {
		t.Fatalf("all: %v %+v", err, p)
	}
	heads := parse(t, `{"buckets":[{"bytes":8,"ready_us":0,"groups":[{"name":"backbone","elements":1,"mode":"fp32"},{"name":"head","elements":1,"mode":"fp32"}]}]}`)
	p, _ = ResolvePlan("", control.DefaultLadder(), false, heads)
	if p.Mode("head").String() != "fp32" || p.Mode("backbone").String() != "g-binary" {
		t.Errorf("layer-aware default %+v", p)
	}
	rec := parse(t, `{"policy":"backbone=g-ternary,head=fp32","buckets":[{"bytes":8,"ready_us":0,"groups":[{"name":"backbone","elements":1,"mode":"g-ternary"},{"name":"head","elements":1,"mode":"fp32"}]}]}`)
	p, _ = ResolvePlan("", control.DefaultLadder(), false, rec)
	if p.Mode("backbone").String() != "g-ternary" || !strings.Contains(p.Source, "recorded job's policy") {
		t.Errorf("recorded default %+v", p)
	}
	for _, c := range []struct {
		spec  string
		given bool
		want  string
	}{
		{"head=fp32", false, `group "head", which the trace does not have (its groups: all)`},
		{"x=fp9", false, "(the trace's groups: all)"},
		{"recorded", false, "(the trace's groups: all)"},
		{"g-binary", true, "--ladder-rungs sets the ladder of --plan recorded"},
		{"", true, "--ladder-rungs"},
	} {
		_, err := ResolvePlan(c.spec, control.DefaultLadder(), c.given, all)
		if !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ResolvePlan(%q, given %v) = %v; want a usage error with %q", c.spec, c.given, err, c.want)
		}
	}
}

// TestBucketRowsBounded: per-collective rows stop at MaxBucketRows and
// the rest are counted, while every total still includes them.
func TestBucketRowsBounded(t *testing.T) {
	n := MaxBucketRows + 5
	tr := &workload.Trace{BytesPerElement: 4}
	for i := range n {
		if err := tr.AddCollective(collective.AllReduce, 4, int64(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	plan, _ := ParsePlan("fp32")
	r, err := Run(context.Background(), tr, Options{Workers: 2, Net: slow, CXL: fast, Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Buckets) != MaxBucketRows || r.BucketRowsOmitted != 5 || r.Steps[0].FP32Bytes != int64(4*n) {
		t.Errorf("%d rows, %d omitted, %d bytes", len(r.Buckets), r.BucketRowsOmitted, r.Steps[0].FP32Bytes)
	}
}

// TestRunCancelled: a cancelled context stops the run with its error.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	plan, _ := ParsePlan("fp32")
	if _, err := Run(ctx, handTrace(), Options{Workers: 2, Net: slow, CXL: fast, Memory: "ideal", Plan: plan}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v; want context.Canceled", err)
	}
}

// TestTimelineAndTrace: the figure is a Gantt chart whose legend lies
// below the plot (never over the bars), and the Perfetto trace holds one
// slice per collective and path with the times the tables give.
func TestTimelineAndTrace(t *testing.T) {
	plan, _ := ParsePlan("backbone=g-binary,head=fp32")
	r, err := Run(context.Background(), handTrace(), Options{Workers: 4, Net: slow, CXL: fast, Memory: "ideal", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	fig, err := r.Timeline()
	if err != nil {
		t.Fatal(err)
	}
	svg := string(fig.SVG)
	for _, w := range []string{"step 0 · FP32 · collectives", "step 0 · NEURON-Fabric · compute", "NEURON-Fabric: admitted groups on the controller", "forward", "optimizer"} {
		if !strings.Contains(svg, w) {
			t.Errorf("timeline lacks %q", w)
		}
	}
	var buf bytes.Buffer
	if err := r.WriteTrace(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Ts   float64        `json:"ts"`
			Dur  float64        `json:"dur"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	got := map[string]float64{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" && e.Args["collective"] != nil {
			got[fmt.Sprintf("%d/%v", e.Pid, e.Args["collective"])] = e.Dur * 1e-6
		}
	}
	for _, b := range r.Buckets {
		if !near(got[fmt.Sprintf("1/%d", b.Index)], b.FP32S) || !near(got[fmt.Sprintf("2/%d", b.Index)], b.FabricS) {
			t.Errorf("collective %d: trace %v/%v s; tables %v/%v", b.Index, got[fmt.Sprintf("1/%d", b.Index)], got[fmt.Sprintf("2/%d", b.Index)], b.FP32S, b.FabricS)
		}
	}
}
