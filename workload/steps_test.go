package workload

import (
	"bytes"
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
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTraceJSON([]byte(c.in), "bad.json")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.json") {
				t.Fatalf("err %v, want %q naming bad.json", err, c.want)
			}
		})
	}
}
