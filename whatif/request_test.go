package whatif

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
