package whatif

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/usage"
)

// TestPrepare: a request wrong in itself is a usage error naming its
// flag; a good one yields the trace, the links and the resolved plan.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.json")
	os.WriteFile(tr, []byte(`{"workers":4,"buckets":[{"bytes":4000,"ready_us":0}]}`), 0o644)
	good := Request{Trace: tr, Net: "ib", CXL: "cxl", Algorithm: "ring", Memory: "ideal", Ladder: "g-binary:0.75"}
	trace, o, err := Prepare(good)
	if err != nil || len(trace.Buckets) != 1 || o.Net.Name != "ib" || o.CXL.Name != "cxl" || o.Plan.Mode(AllGroups).String() != "g-binary" {
		t.Fatalf("good request: %v %+v", err, o)
	}
	for _, c := range []struct {
		edit func(*Request)
		want string
	}{
		{func(q *Request) { q.Model = "resnet18-cifar10" }, "one of --trace"},
		{func(q *Request) { q.Workers = 1 }, "--workers 1"},
		{func(q *Request) { q.Net = "bogus" }, "--net"},
		{func(q *Request) { q.CXL = "bogus" }, "--cxl"},
		{func(q *Request) { q.Algorithm = "bogus" }, "--algorithm"},
		{func(q *Request) { q.Ladder = "int8" }, "--ladder-rungs"},
		{func(q *Request) { q.LadderGiven = true }, "--ladder-rungs sets the ladder of --plan recorded"},
		{func(q *Request) { q.Plan = "head=fp32" }, "its groups: all"},
		{func(q *Request) { q.AstraNetwork = tr }, "--astra"},
	} {
		q := good
		c.edit(&q)
		if _, _, err := Prepare(q); !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want a usage error with %q", q, err, c.want)
		}
	}
}

// TestDefaultMemory: without --memory the replay runs on the
// silicon-calibrated ASIC expander preset and the assumptions say so;
// --memory ideal is the paper's model, said as asked.
func TestDefaultMemory(t *testing.T) {
	if d, err := cxldev.Lookup(DefaultMemory); err != nil || d.Class != "asic" {
		t.Fatalf("DefaultMemory %q: %v, class %q; want an ASIC device preset", DefaultMemory, err, d.Class)
	}
	tr := parse(t, `{"buckets":[{"bytes":4000,"ready_us":0,"groups":[{"name":"all","elements":1000,"mode":"fp32"}]}]}`)
	plan, _ := ParsePlan("g-binary")
	for _, c := range []struct{ memory, want string }{
		{"", "memory: the asic-pcie5-x8 device preset (asic: "},
		{"ideal", "memory: the paper's ideal model"},
	} {
		r, err := Run(context.Background(), tr, Options{Workers: 2, Net: slow, CXL: fast, Memory: c.memory, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		want := c.memory
		if want == "" {
			want = DefaultMemory
		}
		if r.Memory != want || !strings.Contains(strings.Join(r.Assumptions, "\n"), c.want) {
			t.Errorf("memory %q: result's %q, assumptions %q; want %q", c.memory, r.Memory, r.Assumptions, c.want)
		}
	}
}
