package workload

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
)

// FuzzParseTraceJSON checks the decoder never panics, and that whatever it
// accepts survives a write/read round trip unchanged.
func FuzzParseTraceJSON(f *testing.F) {
	f.Add([]byte(`{"model":"m","forward_us":1,"backward_us":9,"buckets":[{"bytes":33554432,"ready_us":1.5},{"bytes":8,"ready_us":9,"elements":2}]}`))
	f.Add([]byte(`{"buckets":[{"bytes":4,"ready_us":0}]}`))
	f.Add([]byte(`{"bytes_per_element":2,"buckets":[{"bytes":6,"ready_us":1e3}]}`))
	f.Add([]byte(`{"buckets":[{"bytes":4,"ready_us":-1}]}`))
	f.Add([]byte(stepsJSON))
	f.Add([]byte(`{"optimizer_us":2,"step":1,"workers":3,"diagnostics":{"h":{"cos_binary":0.1,"cos_ternary":-1}},"buckets":[{"bytes":8,"ready_us":0,"groups":[{"name":"h","elements":2,"mode":"g-ternary"}],"vote_us":1}]}`))
	f.Add([]byte(`{"version":2,"steps":[{"step":1,"diagnostics":{"h":{"cos_binary":0.1,"cos_ternary":-1,"cosines":{"int8":0.99,"bfp8":-0.5}}},"buckets":[{"bytes":8,"ready_us":0}]},{"step":2,"diagnostics":{"h":{"cos_binary":0.1,"cos_ternary":0,"cosines":{}}},"buckets":[{"bytes":4,"ready_us":1}]}]}`))
	f.Add([]byte(`{"diagnostics":{"h":{"cos_binary":0.1,"cos_ternary":0,"cosines":{"int8":1}}},"buckets":[{"bytes":4,"ready_us":0}]}`))
	f.Add([]byte(`{"version":3,"buckets":[{"bytes":4,"ready_us":0}]}`))
	f.Add([]byte(`{"buckets":[{"bytes":4096,"ready_us":0},{"bytes":4096,"ready_us":1,"collective":"reduce-scatter","duration_us":2.5},{"bytes":0,"ready_us":2,"collective":"barrier"},{"bytes":7,"ready_us":3,"collective":"ALL_GATHER"}]}`))
	f.Add([]byte(`{"buckets":[{"bytes":4,"ready_us":0}],"buckets":[{"bytes":4,"ready_us":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTraceJSON(data, "f.json")
		if err != nil {
			if !strings.Contains(err.Error(), "f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkTrace(t, tr)
		var b bytes.Buffer
		if err := tr.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		again, err := ParseTraceJSON(b.Bytes(), "again.json")
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, b.Bytes())
		}
		sameTrace(t, tr, again)
	})
}

// FuzzParseTraceCSV is FuzzParseTraceJSON for the CSV form.
func FuzzParseTraceCSV(f *testing.F) {
	f.Add("bytes,ready_us\n33554432,1.5\n8,9\n")
	f.Add("# c\nready_us, bytes ,elements\n1,4,1\n")
	f.Add("bytes,ready_us\n4,\"1\"\n")
	f.Add("bytes,ready_us,collective,duration_us\n8,0,all-gather,1\n0,1,barrier,\n")
	f.Fuzz(func(t *testing.T, text string) {
		tr, err := ParseTraceCSV(strings.NewReader(text), "f.csv")
		if err != nil {
			if !strings.Contains(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkTrace(t, tr)
		var b bytes.Buffer
		if err := tr.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		again, err := ParseTraceCSV(&b, "again.csv")
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		sameTrace(t, tr, again)
	})
}

// FuzzParseProfileYAML checks the profile decoder never panics and that an
// accepted profile validates and sums consistently.
func FuzzParseProfileYAML(f *testing.F) {
	f.Add([]byte(goodYAML))
	f.Add([]byte("name: x\nlayers: [{name: a, tensors: [{name: w, shape: [2, 3]}], fwd_flops: 0}]\n"))
	f.Add([]byte("name: x\nseq_len: 128\nlayers: [{name: a, group: head, tensors: [{name: w, shape: []}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfileYAML(data, "f.yaml")
		if err != nil {
			if !strings.Contains(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted profile does not validate: %v", err)
		}
		var sum int64
		for _, v := range p.GroupParams() {
			sum += v
		}
		if sum != p.Params() || sum <= 0 {
			t.Fatalf("group sum %d, params %d", sum, p.Params())
		}
	})
}

func checkTrace(t *testing.T, tr *Trace) {
	t.Helper()
	for i, s := range tr.Steps {
		if i > 0 && s.Step <= tr.Steps[i-1].Step {
			t.Fatalf("steps out of order: %d after %d", s.Step, tr.Steps[i-1].Step)
		}
		if len(s.Steps) != 0 {
			t.Fatal("a step holds steps")
		}
		checkStep(t, s)
	}
	checkStep(t, tr)
}

func checkStep(t *testing.T, tr *Trace) {
	t.Helper()
	for _, b := range tr.Buckets {
		var sum int64
		for _, g := range b.Groups {
			sum += g.Elements
		}
		if b.Groups != nil && sum != b.Elements {
			t.Fatalf("bucket %d: groups sum to %d of %d elements", b.Index, sum, b.Elements)
		}
	}
	if len(tr.Buckets) == 0 {
		t.Fatal("accepted an empty trace")
	}
	prev := int64(0)
	for i, b := range tr.Buckets {
		okSize := b.Bytes > 0 && b.Elements*int64(tr.BytesPerElement) == b.Bytes
		if !b.Op.Aggregates() {
			okSize = b.Elements == 0 && (b.Bytes > 0) != (b.Op == collective.Barrier)
		}
		if !okSize || b.ReadyPS < prev || b.Index != i || b.RecordedPS < 0 {
			t.Fatalf("bucket %d invalid: %+v", i, b)
		}
		prev = b.ReadyPS
	}
	if tr.BackwardPS < prev {
		t.Fatalf("backward %d before last ready %d", tr.BackwardPS, prev)
	}
}

func sameTrace(t *testing.T, a, b *Trace) {
	t.Helper()
	if len(a.Steps) != len(b.Steps) {
		t.Fatalf("%d vs %d steps", len(a.Steps), len(b.Steps))
	}
	for i := range a.Steps {
		if len(a.Steps) > 1 {
			sameStep(t, a.Steps[i], b.Steps[i])
		}
	}
	sameStep(t, a, b)
}

func sameStep(t *testing.T, a, b *Trace) {
	t.Helper()
	if a.Step != b.Step || a.Workers != b.Workers || a.Policy != b.Policy || len(a.Diagnostics) != len(b.Diagnostics) {
		t.Fatalf("step fields differ: %+v vs %+v", a, b)
	}
	for g, d := range a.Diagnostics {
		e := b.Diagnostics[g]
		if e.CosBinary != d.CosBinary || e.CosTernary != d.CosTernary || !maps.Equal(e.Cosines, d.Cosines) {
			t.Fatalf("diagnostics %s: %+v vs %+v", g, d, b.Diagnostics[g])
		}
	}
	if len(a.Buckets) != len(b.Buckets) {
		t.Fatalf("%d vs %d buckets", len(a.Buckets), len(b.Buckets))
	}
	for i := range a.Buckets {
		x, y := a.Buckets[i], b.Buckets[i]
		// Picoseconds above 2^53 may move by a rounding step through the
		// microsecond float.
		if x.Bytes != y.Bytes || x.Elements != y.Elements || x.Op != y.Op || diff(x.RecordedPS, y.RecordedPS) > x.RecordedPS>>50+1 || diff(x.ReadyPS, y.ReadyPS) > x.ReadyPS>>50+1 ||
			diff(x.EncodePS, y.EncodePS) > x.EncodePS>>50+1 || diff(x.VotePS, y.VotePS) > x.VotePS>>50+1 || len(x.Groups) != len(y.Groups) {
			t.Fatalf("bucket %d: %+v vs %+v", i, x, y)
		}
		for k := range x.Groups {
			if x.Groups[k] != y.Groups[k] {
				t.Fatalf("bucket %d group %d: %+v vs %+v", i, k, x.Groups[k], y.Groups[k])
			}
		}
	}
}

func diff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}
