package workload

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
)

// TestTraceGroupSumCannotWrap (a hostile probe's case): a bucket of
// 2^50 bytes (2^48 elements) with 65,537 groups of 2^48 elements each
// would sum to 2^64 + 2^48, which wraps to the bucket's count in int64;
// the running sum is refused as soon as it passes the bucket.
func TestTraceGroupSumCannotWrap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"buckets":[{"bytes":1125899906842624,"ready_us":0,"groups":[`)
	for i := range 65537 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"g%d","elements":281474976710656,"mode":"g-binary"}`, i)
	}
	b.WriteString(`]}]}`)
	_, err := ParseTraceJSON([]byte(b.String()), "wrap.json")
	if err == nil || !strings.Contains(err.Error(), "pass the bucket's 281474976710656 at groups[1]") {
		t.Fatalf("err %v; want the groups refused at groups[1]", err)
	}
}

// TestTraceDuplicateKeys (a hostile probe's case): a key given twice is an error
// naming the key and where, not "the last one wins".
func TestTraceDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"buckets":[{"bytes":4,"ready_us":0}],"buckets":[{"bytes":8,"ready_us":0}]}`, `dup.json:1:39: key "buckets" given twice`},
		{`{"diagnostics":{"h":{"cos_binary":0.1,"cos_ternary":0},"h":{"cos_binary":0.9,"cos_ternary":0}},"buckets":[{"bytes":4,"ready_us":0}]}`, `key "h" given twice`},
		{`{"buckets":[{"bytes":4,"bytes":8,"ready_us":0}]}`, `key "bytes" given twice`},
	} {
		_, err := ParseTraceJSON([]byte(c.in), "dup.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTraceJSON(%s) = %v; want %q", c.in, err, c.want)
		}
	}
}

// TestTraceCollectives: buckets of every operation read from JSON and
// CSV, written back and read again; only all-reduce and reduce-scatter
// carry elements and groups; a barrier moves no bytes.
func TestTraceCollectives(t *testing.T) {
	js := `{"buckets":[
  {"bytes":4096,"ready_us":0},
  {"bytes":4096,"ready_us":1,"collective":"reduce-scatter","duration_us":2.5,"groups":[{"name":"all","elements":1024,"mode":"fp32"}]},
  {"bytes":1001,"ready_us":2,"collective":"ALL_GATHER"},
  {"bytes":0,"ready_us":3,"collective":"barrier"},
  {"bytes":16,"ready_us":3,"collective":"broadcast"}]}`
	tr, err := ParseTraceJSON([]byte(js), "ops.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		op       collective.Op
		elements int64
	}{{collective.AllReduce, 1024}, {collective.ReduceScatter, 1024}, {collective.AllGather, 0}, {collective.Barrier, 0}, {collective.Broadcast, 0}}
	for i, w := range want {
		if b := tr.Buckets[i]; b.Op != w.op || b.Elements != w.elements {
			t.Errorf("bucket %d: %v of %d elements; want %v of %d", i, b.Op, b.Elements, w.op, w.elements)
		}
	}
	if tr.Buckets[1].RecordedPS != 2_500_000 {
		t.Errorf("recorded %d ps; want 2.5 us", tr.Buckets[1].RecordedPS)
	}
	for _, f := range []struct {
		name  string
		write func(*Trace, *bytes.Buffer) error
		read  func([]byte) (*Trace, error)
	}{
		{"json", func(t *Trace, b *bytes.Buffer) error { return t.WriteJSON(b) }, func(d []byte) (*Trace, error) { return ParseTraceJSON(d, "again.json") }},
		{"csv", func(t *Trace, b *bytes.Buffer) error { return t.WriteCSV(b) }, func(d []byte) (*Trace, error) { return ParseTraceCSV(bytes.NewReader(d), "again.csv") }},
	} {
		var b bytes.Buffer
		if err := f.write(tr, &b); err != nil {
			t.Fatal(err)
		}
		again, err := f.read(b.Bytes())
		if err != nil {
			t.Fatalf("%s: %v\n%s", f.name, err, b.Bytes())
		}
		for i := range tr.Buckets {
			a, g := tr.Buckets[i], again.Buckets[i]
			if a.Op != g.Op || a.Bytes != g.Bytes || a.RecordedPS != g.RecordedPS || a.ReadyPS != g.ReadyPS {
				t.Errorf("%s bucket %d: %+v again as %+v", f.name, i, a, g)
			}
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"buckets":[{"bytes":6,"ready_us":0,"collective":"all-reduce"}]}`, "not a multiple of the element size 4"},
		{`{"buckets":[{"bytes":4,"ready_us":0,"collective":"barrier"}]}`, "a barrier moves no bytes"},
		{`{"buckets":[{"bytes":0,"ready_us":0,"collective":"broadcast"}]}`, "bytes 0 must be in 1.."},
		{`{"buckets":[{"bytes":8,"ready_us":0,"collective":"gossip"}]}`, `collective: unknown collective "gossip"`},
		{`{"buckets":[{"bytes":8,"ready_us":0,"collective":"all-gather","groups":[{"name":"a","elements":2,"mode":"fp32"}]}]}`, "only all-reduce and reduce-scatter buckets hold gradient groups"},
	} {
		if _, err := ParseTraceJSON([]byte(c.in), "bad.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTraceJSON(%s) = %v; want %q", c.in, err, c.want)
		}
	}
	if _, err := ParseTraceCSV(strings.NewReader("bytes,ready_us,collective\n8,0,all-to-all\n8,1,telepathy\n"), "c.csv"); err == nil || !strings.Contains(err.Error(), "c.csv:3: collective") {
		t.Errorf("CSV with an unknown collective: %v", err)
	}
}

// TestParseAllocationBound: parsing a JSON trace of a million buckets
// allocates a bounded number of bytes a bucket (runtime.MemStats.TotalAlloc,
// deterministic): the Bucket arena sized once, not grown bucket by bucket,
// and keeps about 120 bytes a bucket live.
func TestParseAllocationBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 31 MB trace (-short)")
	}
	const n = 1_000_000
	var b strings.Builder
	b.WriteString(`{"buckets":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"bytes":4096,"ready_us":%d}`, i/100)
	}
	b.WriteString(`]}`)
	data := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr, err := ParseTraceJSON(data, "big.json")
	runtime.ReadMemStats(&after)
	if err != nil || len(tr.Buckets) != n {
		t.Fatal(err)
	}
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated a bucket", per)
	if per > 400 {
		t.Errorf("%.0f bytes allocated a bucket; the bound is 400", per)
	}
}
