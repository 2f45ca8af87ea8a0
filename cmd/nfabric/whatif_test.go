package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// TestWhatifInputs: usage mistakes exit 2 naming the flag, bad files exit
// 1 naming the file, and no output is written on failure.
func TestWhatifInputs(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"buckets":[{"bytes":3,"ready_us":0}]}`), 0o644)
	good := filepath.Join(dir, "t.json")
	os.WriteFile(good, []byte(`{"buckets":[{"bytes":4000,"ready_us":1,"groups":[{"name":"backbone","elements":1000,"mode":"fp32"}]}]}`), 0o644)
	html := filepath.Join(dir, "w.html")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"whatif"}, 2, "--trace"},
		{[]string{"whatif", "--trace", good, "--model", "resnet18"}, 2, "one of"},
		{[]string{"whatif", "--trace", good, "--workers", "1"}, 2, "--workers"},
		{[]string{"whatif", "--trace", good, "--memory", "hbm"}, 2, "--memory"},
		{[]string{"whatif", "--trace", good, "--net", "bogus"}, 2, "--net"},
		{[]string{"whatif", "--trace", good, "--plan", "x=fp16"}, 2, "--plan"},
		{[]string{"whatif", "--model", "bogus"}, 2, "--model"},
		{[]string{"whatif", "--trace", bad, "--html", html}, 1, "bad.json"},
		{[]string{"whatif", "--trace", good, "--plan", "head=fp32", "--html", html}, 2, `group "head", which the trace does not have (its groups: backbone)`},
		{[]string{"whatif", "--trace", good, "--plan", "recorded"}, 2, "no diagnostics"},
		{[]string{"whatif", "--trace", good, "--plan", "x=fp16"}, 2, "(the trace's groups: backbone)"},
		{[]string{"whatif", "--trace", good, "--plan", "g-binary", "--ladder-rungs", "int8:0.9"}, 2, "--ladder-rungs sets the ladder of --plan recorded"},
		{[]string{"whatif", "--model", "resnet18-cifar10", "--ladder-rungs", "int8:0.9"}, 2, "--ladder-rungs"},
		{[]string{"whatif", "--trace", good, "--plan", "recorded", "--ladder-rungs", "int8:0.9,fp32:0.5"}, 2, "--ladder-rungs"},
		{[]string{"whatif", "--trace", good, "--ladder-rungs", "int8"}, 2, "--ladder-rungs"},
		{[]string{"whatif", "--trace", good, "--html", dir}, 2, "--html"},
		{[]string{"whatif", "--trace", good, "--trace-out", dir}, 2, "--trace-out"},
		{[]string{"whatif", "--trace", good, "--out", good}, 2, "--out"},
		{[]string{"whatif", "--trace", good, "--trace-out", "-", "--json"}, 2, "--trace-out - and --json"},
		{[]string{"collective", "--out", good}, 2, "--out"},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("nfabric %s: exit %d, stderr %q; want %d naming %s", strings.Join(c.args, " "), code, stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(html); err == nil {
		t.Errorf("a failed whatif wrote %s", html)
	}
	// '-' writes the page to stdout, and the text goes to stderr.
	code, out, stderr := nfabric(t, "whatif", "--trace", good, "--html", "-")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(stderr, "What-if per step") {
		t.Errorf("--html -: exit %d, stdout %.40q, stderr %.200q", code, out, stderr)
	}
}

// TestWhatifChakra: a Chakra ET through the command: two compute nodes of
// 100 and 50 us, an ALL_REDUCE of 4 MB after the first; the bucket is
// ready at 100 us and the FP32 ring time of 4 MB on ib between 2 workers
// is 2 alpha + S/B = 10 us + 160 us.
func TestWhatifChakra(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	for _, m := range []proto.Message{
		&chakrav1.GlobalMetadata{Version: "0.0.4"},
		&chakrav1.Node{Id: 1, Type: chakrav1.NodeType_COMP_NODE, DurationMicros: 100},
		&chakrav1.Node{Id: 2, Type: chakrav1.NodeType_COMP_NODE, DurationMicros: 50, DataDeps: []uint64{1}},
		&chakrav1.Node{Id: 3, Type: chakrav1.NodeType_COMM_COLL_NODE, DataDeps: []uint64{1}, Attr: []*chakrav1.AttributeProto{
			{Name: "comm_type", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: 0}},
			{Name: "comm_size", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: 4_000_000}}}},
	} {
		raw, _ := proto.Marshal(m)
		b = append(protowire.AppendVarint(b, uint64(len(raw))), raw...)
	}
	et := filepath.Join(dir, "job.et")
	os.WriteFile(et, b, 0o644)
	code, out, stderr := nfabric(t, "whatif", "--trace", et, "--workers", "2", "--net", "ib", "--plan", "fp32", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Data struct {
			Buckets []struct {
				ReadyS float64 `json:"ready_s"`
				FP32S  float64 `json:"fp32_s"`
			} `json:"buckets"`
			Steps []struct {
				BackwardS float64 `json:"backward_s"`
				FP32StepS float64 `json:"fp32_step_s"`
			} `json:"steps"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	bk, st := res.Data.Buckets[0], res.Data.Steps[0]
	want := 10e-6 + 4e6/25e9
	if len(res.Data.Buckets) != 1 || !closeTo(bk.ReadyS, 100e-6) || !closeTo(bk.FP32S, want) || !closeTo(st.BackwardS, 150e-6) ||
		!closeTo(st.FP32StepS, 100e-6+want) {
		t.Fatalf("%+v", res.Data)
	}
}

func closeTo(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestWhatifRecordedRungs: --plan recorded on a version 2 trace admits
// through --ladder-rungs: backbone's INT8 cosine 0.97 passes int8 >= 0.95
// after failing G-Binary (0.3 < 0.75), head passes G-Binary; with the
// default (the paper's two rungs) backbone stays on FP32.
func TestWhatifRecordedRungs(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "v2.json")
	os.WriteFile(tr, []byte(`{"version":2,"diagnostics":{"backbone":{"cos_binary":0.3,"cos_ternary":0.2,"cosines":{"int8":0.97}},`+
		`"head":{"cos_binary":0.9,"cos_ternary":0.8}},"buckets":[{"bytes":4000,"ready_us":1,"groups":[`+
		`{"name":"backbone","elements":900,"mode":"fp32"},{"name":"head","elements":100,"mode":"fp32"}]}]}`), 0o644)
	code, out, stderr := nfabric(t, "whatif", "--trace", tr, "--plan", "recorded", "--ladder-rungs", "g-binary:0.75,int8:0.95")
	want := "Plan: control plane ladder (g-binary >= 0.75, int8 >= 0.95) on recorded diagnostics: " +
		"backbone: int8 (ladder: G-Binary cosine 0.300 < 0.750, INT8 cosine 0.970 >= 0.950); head: g-binary (ladder: G-Binary cosine 0.900 >= 0.750)."
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d %s; output lacks %q:\n%s", code, stderr, want, out)
	}
	code, out, stderr = nfabric(t, "whatif", "--trace", tr, "--plan", "recorded")
	want = "Plan: control plane ladder (binary >= 0.75, ternary >= 0.5) on recorded diagnostics: backbone: fp32 ("
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("default ladder: exit %d %s; output lacks %q:\n%s", code, stderr, want, out)
	}
}

// TestWhatifAstraRTTemplate: ASTRA-sim's rt_template workload (8 files,
// one 1 MiB ALL_REDUCE node each, as its gen_chakra_traces.py writes them)
// with its network and system configs: the FP32 all-reduce is 117,780
// cycles from whatif, as ASTRA-sim prints; the workers come from the
// files; the page and the Perfetto trace are written.
func TestWhatifAstraRTTemplate(t *testing.T) {
	dir := t.TempDir()
	net, sys := rtTemplateFiles(t, dir)
	prefix := filepath.Join(dir, "chakra_trace")
	for r := range 8 {
		var b []byte
		for _, m := range []proto.Message{
			&chakrav1.GlobalMetadata{Version: "0.0.4"},
			&chakrav1.Node{Id: 1, Name: "All-Reduce", Type: chakrav1.NodeType_COMM_COLL_NODE, Attr: []*chakrav1.AttributeProto{
				{Name: "is_cpu_op", Value: &chakrav1.AttributeProto_BoolVal{BoolVal: false}},
				{Name: "comm_type", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: 0}},
				{Name: "comm_size", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: 1 << 20}}}},
		} {
			raw, _ := proto.Marshal(m)
			b = append(protowire.AppendVarint(b, uint64(len(raw))), raw...)
		}
		os.WriteFile(fmt.Sprintf("%s.%d.et", prefix, r), b, 0o644)
	}
	html, perf := filepath.Join(dir, "w.html"), filepath.Join(dir, "w.trace.json")
	code, out, stderr := nfabric(t, "whatif", "--trace", prefix, "--astra-network", net, "--astra-system", sys, "--json", "--html", html, "--trace-out", perf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Data struct {
			Workers int `json:"workers"`
			Steps   []struct {
				AstraCycles int64   `json:"astra_cycles"`
				FP32S       float64 `json:"fp32_collectives_s"`
			} `json:"steps"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Data.Workers != 8 || len(res.Data.Steps) != 1 || res.Data.Steps[0].AstraCycles != 117780 || !closeTo(res.Data.Steps[0].FP32S, 117780e-9) {
		t.Fatalf("%+v; want 8 workers and 117780 cycles", res.Data)
	}
	page, _ := os.ReadFile(html)
	p := string(page)
	if strings.Count(p, "Plan: default:") != 1 || strings.Contains(p, "differs from the paper</span>") || !strings.Contains(p, "whatif-timeline") {
		t.Errorf("page: summary %d times, paper legend %v, timeline %v", strings.Count(p, "Plan: default:"), strings.Contains(p, "differs from the paper</span>"), strings.Contains(p, "whatif-timeline"))
	}
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	data, _ := os.ReadFile(perf)
	if err := json.Unmarshal(data, &tr); err != nil || len(tr.TraceEvents) == 0 {
		t.Errorf("perfetto trace: %v, %d events", err, len(tr.TraceEvents))
	}
	// --workers against the rank files, and a network of other NPUs.
	if code, _, stderr := nfabric(t, "whatif", "--trace", prefix, "--workers", "4"); code != 2 || !strings.Contains(stderr, "8 rank files") {
		t.Errorf("--workers 4 against 8 rank files: exit %d %s", code, stderr)
	}
}
