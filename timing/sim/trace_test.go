package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestTraceLimits: the window and the slice count are checked when the
// tracer is made (unchecked, --trace-until-ns 1e300 wrapped into a
// window that kept 0 slices, and --trace-max had no ceiling).
func TestTraceLimits(t *testing.T) {
	for _, c := range []struct {
		ns   float64
		want Time
		ok   bool
	}{
		{0, 0, true}, {5000, 5 * Microsecond, true}, {0.0004, 0, true}, {1.5e-3, 2, true},
		{1e300, 0, false}, {math.Inf(1), 0, false}, {math.NaN(), 0, false}, {-1, 0, false},
		{float64(Never) / 1000, 0, false},
	} {
		got, err := TimeOfNS(c.ns)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("TimeOfNS(%v) = %v, %v; want %v (ok %v)", c.ns, got, err, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		from, until Time
		max         int
		ok          bool
	}{
		{0, 1, 1, true}, {0, Never, MaxTraceSlices, true},
		{0, 1, MaxTraceSlices + 1, false}, {0, 1, 0, false}, {5, 5, 1, false}, {-1, 5, 1, false}, {6, 5, 1, false},
	} {
		tr, err := NewTracer(c.from, c.until, c.max)
		if (err == nil) != c.ok || (c.ok && (tr.From != c.from || tr.Until != c.until || tr.Max != c.max)) {
			t.Errorf("NewTracer(%v, %v, %d) = %+v, %v; want ok %v", c.from, c.until, c.max, tr, err, c.ok)
		}
	}
}

// traceTracks are track names of the shape the simulator uses.
var traceTracks = []string{"Host[0].LLC", "Device[0].Ctrl.ReqLink", "Device[0].Ctrl.DRAM.Ch[3].Queue",
	"Device[0].Ctrl.DRAM.Ch[31]", "Device[3].Ctrl.Pipe", "Device[0].Ctrl.RespLink", "Device[1].Stack"}

// FuzzTraceSize: for any window, limit and stream of slices, the tracer
// either refuses at construction or keeps at most Max slices, counts every
// other in-window slice as dropped, and writes valid JSON within
// TraceEventBytes a slice (plus the per-track and document overhead).
func FuzzTraceSize(f *testing.F) {
	f.Add(int64(0), int64(5000_000), 200000, uint64(1), uint16(500))
	f.Add(int64(0), int64(math.MaxInt64), 3, uint64(2), uint16(2000))
	f.Add(int64(100), int64(50), 10, uint64(3), uint16(10))
	f.Add(int64(0), int64(1e6), MaxTraceSlices+1, uint64(4), uint16(10))
	f.Fuzz(func(t *testing.T, from, until int64, max int, seed uint64, n uint16) {
		tr, err := NewTracer(Time(from), Time(until), max)
		if err != nil {
			if from >= 0 && until > from && max >= 1 && max <= MaxTraceSlices {
				t.Fatalf("NewTracer(%d, %d, %d) refused a valid tracer: %v", from, until, max, err)
			}
			return
		}
		r := rand.New(rand.NewPCG(seed, 1))
		inWindow := 0
		for range n {
			start := Time(r.Int64N(1 << 40))
			if r.IntN(4) == 0 {
				start = Time(from) + Time(r.Int64N(1<<20))
			}
			end := start + Time(r.Int64N(1<<30)) - 1<<20
			track := traceTracks[r.IntN(len(traceTracks))]
			if end > start && start >= Time(from) && start < Time(until) {
				inWindow++
			}
			tr.Slice(track, start, end)
		}
		if tr.Len() > max || tr.Len() != min(inWindow, max) || int64(inWindow-tr.Len()) != tr.Dropped {
			t.Fatalf("kept %d, dropped %d of %d in the window; max %d", tr.Len(), tr.Dropped, inWindow, max)
		}
		var b bytes.Buffer
		if err := tr.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc struct{ TraceEvents []json.RawMessage }
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("trace is not JSON: %v", err)
		}
		bound := 256 + tr.Len()*TraceEventBytes
		for _, name := range traceTracks {
			bound += 2*TraceEventBytes + 2*len(name)
		}
		if b.Len() > bound {
			t.Fatalf("%d slices wrote %d bytes, more than the bound %d", tr.Len(), b.Len(), bound)
		}
	})
}
