package workload

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// stepsJSON is a two-step recording as nfabric.torch writes it.
const stepsJSON = `{
  "model": "net", "bytes_per_element": 4, "workers": 2, "policy": "backbone=g-binary,head=fp32",
  "steps": [
    {"step": 2, "forward_us": 100, "backward_us": 250, "optimizer_us": 30,
     "diagnostics": {"backbone": {"cos_binary": 0.7, "cos_ternary": 0.55}},
     "buckets": [
       {"bytes": 40, "ready_us": 120.5, "elements": 10, "encode_us": 3, "vote_us": 2,
        "groups": [{"name": "head", "elements": 4, "mode": "fp32"}, {"name": "backbone", "elements": 6, "mode": "g-binary"}]},
       {"bytes": 400, "ready_us": 240, "groups": [{"name": "backbone", "elements": 100, "mode": "g-binary"}]}
     ]},
    {"step": 5, "forward_us": 90, "backward_us": 260,
     "buckets": [{"bytes": 440, "ready_us": 250}]}
  ]
}`

// TestTraceSteps reads the multi-step form against the values written in
// stepsJSON by hand.
func TestTraceSteps(t *testing.T) {
	tr, err := ParseTraceJSON([]byte(stepsJSON), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Steps) != 2 || tr.Step != 2 || tr.Steps[1].Step != 5 {
		t.Fatalf("steps: %d, first %d", len(tr.Steps), tr.Step)
	}
	if tr.Workers != 2 || tr.Steps[1].Workers != 2 || tr.Steps[1].Policy != "backbone=g-binary,head=fp32" || tr.Steps[1].Model != "net" {
		t.Fatalf("top-level fields not shared: %+v", tr.Steps[1])
	}
	if tr.ForwardPS != 100e6 || tr.BackwardPS != 250e6 || tr.OptimizerPS != 30e6 || tr.Steps[1].OptimizerPS != 0 {
		t.Fatalf("times: %d %d %d", tr.ForwardPS, tr.BackwardPS, tr.OptimizerPS)
	}
	b := tr.Buckets[0]
	if b.ReadyPS != 120_500_000 || b.EncodePS != 3e6 || b.VotePS != 2e6 || len(b.Groups) != 2 ||
		b.Groups[1] != (GroupShare{Name: "backbone", Elements: 6, Mode: lowbit.Binary}) || b.Groups[0].Mode != lowbit.FP32 {
		t.Fatalf("bucket 0: %+v", b)
	}
	if d := tr.Diagnostics["backbone"]; d.CosBinary != 0.7 || d.CosTernary != 0.55 {
		t.Fatalf("diagnostics %+v", d)
	}
	if tr.Steps[1].Bytes() != 440 || tr.Bytes() != 440 {
		t.Fatalf("bytes %d %d", tr.Bytes(), tr.Steps[1].Bytes())
	}
	var buf bytes.Buffer
	if err := tr.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := ParseTraceJSON(buf.Bytes(), "again.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	sameTrace(t, tr, again)
}

// diag is a one-step trace of the given version whose group b carries the
// cosines object c.
func diag(version int, c string) string {
	return fmt.Sprintf(`{"version":%d,"diagnostics":{"b":{"cos_binary":0.5,"cos_ternary":0.4,"cosines":%s}},"buckets":[{"bytes":4,"ready_us":0}]}`, version, c)
}

// TestTraceVersions: a version 1 trace (stepsJSON, as nfabric.torch wrote
// it before version 2, and the same with "version": 1) reads as before and
// is written back without "version" or "cosines", as the old writer wrote
// it (the writer's byte-identity is checked by the what-if's golden
// comparison in the notes); a version 2 trace's per-format cosines read as written by
// hand, NaN where not measured, and survive a round trip.
func TestTraceVersions(t *testing.T) {
	old, err := ParseTraceJSON([]byte(stepsJSON), "v1.json")
	if err != nil {
		t.Fatal(err)
	}
	v1, err := ParseTraceJSON([]byte(strings.Replace(stepsJSON, "{", `{"version": 1,`, 1)), "v1b.json")
	if err != nil {
		t.Fatal(err)
	}
	sameTrace(t, old, v1)
	d := old.Diagnostics["backbone"]
	if d.Cosines != nil {
		t.Fatalf("version 1 diagnostics carry cosines %v", d.Cosines)
	}
	c := d.Cos()
	if c[lowbit.Binary] != 0.7 || c[lowbit.Ternary] != 0.55 || !math.IsNaN(c[lowbit.Int8]) || !math.IsNaN(c[lowbit.BFP8]) || !math.IsNaN(c[lowbit.FP32]) {
		t.Fatalf("Cos() %v", c)
	}
	var buf bytes.Buffer
	if err := old.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "version") || strings.Contains(buf.String(), "cosines") {
		t.Fatalf("a paper-only trace written as version 2:\n%s", buf.String())
	}

	tr, err := ParseTraceJSON([]byte(diag(2, `{"int8":0.99,"bfp8":-0.25}`)), "v2.json")
	if err != nil {
		t.Fatal(err)
	}
	d = tr.Diagnostics["b"]
	c = d.Cos()
	if c[lowbit.Binary] != 0.5 || c[lowbit.Ternary] != 0.4 || c[lowbit.Int8] != 0.99 || c[lowbit.BFP8] != -0.25 || !math.IsNaN(c[lowbit.FP32]) {
		t.Fatalf("Cos() %v", c)
	}
	buf.Reset()
	if err := tr.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"version": 2`) || !strings.Contains(buf.String(), `"int8": 0.99`) {
		t.Fatalf("version 2 trace written as\n%s", buf.String())
	}
	again, err := ParseTraceJSON(buf.Bytes(), "again.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	sameTrace(t, tr, again)
	if e, err := ParseTraceJSON([]byte(diag(2, `{}`)), "e.json"); err != nil || e.Diagnostics["b"].Cosines != nil {
		t.Fatalf("empty cosines: %v %v", e, err)
	}
}

// TestTraceStepsErrors: every malformed extension names the file and the
// field at fault.
func TestTraceStepsErrors(t *testing.T) {
	one := func(b string) string { return `{"buckets":[` + b + `]}` }
	for _, c := range []struct{ name, in, want string }{
		{"groups sum", one(`{"bytes":8,"ready_us":0,"groups":[{"name":"a","elements":1,"mode":"fp32"}]}`), "sum to 1, the bucket holds 2"},
		{"group mode", one(`{"bytes":8,"ready_us":0,"groups":[{"name":"a","elements":2,"mode":"fp16"}]}`), "groups[0] (a): mode"},
		{"group twice", one(`{"bytes":8,"ready_us":0,"groups":[{"name":"a","elements":1,"mode":"fp32"},{"name":"a","elements":1,"mode":"fp32"}]}`), "twice"},
		{"group empty", one(`{"bytes":8,"ready_us":0,"groups":[]}`), "groups is empty"},
		{"group no name", one(`{"bytes":8,"ready_us":0,"groups":[{"elements":2,"mode":"fp32"}]}`), "empty name"},
		{"encode NaN-like", one(`{"bytes":8,"ready_us":0,"encode_us":-1}`), "encode_us"},
		{"cosine", `{"diagnostics":{"b":{"cos_binary":2,"cos_ternary":0}},"buckets":[{"bytes":4,"ready_us":0}]}`, "outside [-1, 1]"},
		{"cosine missing", `{"diagnostics":{"b":{"cos_binary":0.5}},"buckets":[{"bytes":4,"ready_us":0}]}`, "want cos_binary and cos_ternary"},
		{"workers", `{"workers":0,"buckets":[{"bytes":4,"ready_us":0}]}`, "workers 0"},
		{"both forms", `{"buckets":[{"bytes":4,"ready_us":0}],"steps":[{"buckets":[{"bytes":4,"ready_us":0}]}]}`, "keeps step"},
		{"empty steps", `{"steps":[]}`, "steps is empty"},
		{"step order", `{"steps":[{"step":3,"buckets":[{"bytes":4,"ready_us":0}]},{"step":3,"buckets":[{"bytes":4,"ready_us":0}]}]}`, "steps[1]: step 3 does not follow step 3"},
		{"step bucket", `{"steps":[{"buckets":[{"bytes":3,"ready_us":0}]}]}`, "steps[0]: buckets[0]"},
		{"negative step", `{"steps":[{"step":-1,"buckets":[{"bytes":4,"ready_us":0}]}]}`, "step -1"},
		{"version 0", `{"version":0,"buckets":[{"bytes":4,"ready_us":0}]}`, "version 0: want 1 or 2"},
		{"version 3", `{"version":3,"buckets":[{"bytes":4,"ready_us":0}]}`, "version 3: want 1 or 2"},
		{"version type", `{"version":"2","buckets":[{"bytes":4,"ready_us":0}]}`, "field version"},
		{"cosines in v1", diag(1, `{"int8":0.9}`), `diagnostics["b"].cosines: per-format cosines need "version": 2`},
		{"cosines no version", `{"steps":[{"diagnostics":{"b":{"cos_binary":0,"cos_ternary":0,"cosines":{"int8":0.9}}},"buckets":[{"bytes":4,"ready_us":0}]}]}`, `steps[0]: diagnostics["b"].cosines: per-format cosines need`},
		{"cosines unknown", diag(2, `{"fp9":0.9}`), `diagnostics["b"].cosines["fp9"]: unknown format (want a format's name: int8, bfp8)`},
		{"cosines alias", diag(2, `{"INT8":0.9}`), `diagnostics["b"].cosines["INT8"]: unknown format`},
		{"cosines paper", diag(2, `{"g-binary":0.9}`), `diagnostics["b"].cosines["g-binary"]: g-binary is not a format beyond the paper's two`},
		{"cosines fp32", diag(2, `{"fp32":1}`), `cosines["fp32"]: fp32 is not`},
		{"cosines range", diag(2, `{"bfp8":1.5}`), `diagnostics["b"].cosines["bfp8"]: cosine 1.5 outside [-1, 1]`},
		{"cosines type", diag(2, `{"bfp8":"x"}`), `diagnostics.cosines`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTraceJSON([]byte(c.in), "bad.json")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.json") {
				t.Fatalf("err %v, want %q naming bad.json", err, c.want)
			}
		})
	}
}
