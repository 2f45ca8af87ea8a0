package host

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

type hostCase struct {
	layout lowbit.Layout
	w, n   int
	mode   cxl.Mode
	gate   lowbit.Gate
	base   int
}

func (c hostCase) String() string {
	return fmt.Sprintf("%v/W=%d/n=%d/%v/%v/base=%d", c.layout, c.w, c.n, c.mode, c.gate, c.base)
}

func hostCases() []hostCase {
	ns := []int{1, 63, 64, 65, 511, 512, 1000}
	if testing.Short() {
		ns = []int{1, 65, 1000}
	}
	gates := []lowbit.Gate{{}, {Kind: lowbit.GatePattern, Period: 5}, {Kind: lowbit.GateMargin, Threshold: 2}, {Kind: lowbit.GateWorker}}
	var cs []hostCase
	for _, l := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		ws := []int{1, 3, 8}
		if l == lowbit.WorkerMajor {
			ws = []int{1, 2, 8, 13, 64}
		}
		for _, w := range ws {
			for _, n := range ns {
				cs = append(cs, hostCase{l, w, n, cxl.Aggregate(lowbit.Binary), lowbit.Gate{}, 7 * n})
				for _, g := range gates {
					cs = append(cs, hostCase{l, w, n, cxl.Aggregate(lowbit.Ternary), g, 3*n + w})
				}
			}
		}
	}
	return cs
}

// TestBucketAgainstReference drives every layout, worker count and gate
// through the controller and compares the decoded update with
// lowbit.RefAggregate on the FP32 gradients (an independent per-element
// loop), and the accounting with its closed form.
func TestBucketAgainstReference(t *testing.T) {
	const tau = 0.5
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range hostCases() {
		t.Run(c.String(), func(t *testing.T) {
			dev, err := Open(Config{Workers: c.w, Layout: c.layout})
			if err != nil {
				t.Fatal(err)
			}
			// A bucket before, so the region under test does not start at 0.
			if _, err := dev.Map(BucketConfig{Name: "pad", Elements: 100, Mode: cxl.FP32Bypass}); err != nil {
				t.Fatal(err)
			}
			before := dev.Stats().Host
			b, err := dev.Map(BucketConfig{Name: "b", Elements: c.n, Element0: c.base, Mode: c.mode, Gate: &c.gate})
			if err != nil {
				t.Fatal(err)
			}
			g := lowbit.EdgeGradients(r, c.w, c.n)
			if err := EncodeWorkers([]*Bucket{b}, c.w, func(k, _ int) []float32 { return g[k] },
				func(int, int, []float32) float32 { return tau }); err != nil {
				t.Fatal(err)
			}
			if err := b.Write(); err != nil {
				t.Fatal(err)
			}
			mode, err := b.Read()
			if err != nil || mode != c.mode {
				t.Fatalf("Read: mode %v, err %v", mode, err)
			}
			spec := lowbit.Spec{Workers: c.w, Layout: c.layout, Format: c.mode.Format(), Gate: c.gate}
			want := lowbit.RefAggregate(g, spec, tau, c.base)
			got := make([]int8, c.n)
			if err := b.Values(got); err != nil {
				t.Fatal(err)
			}
			f := make([]float32, c.n)
			if err := b.Decode(f); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] || f[i] != float32(want[i]) {
					t.Fatalf("element %d: got %d (%v), reference %d", i, got[i], f[i], want[i])
				}
			}
			if c.layout == lowbit.ElementMajor && c.mode == cxl.Aggregate(lowbit.Binary) {
				cnt := make([]uint8, c.n)
				if err := b.Counts(cnt); err != nil {
					t.Fatal(err)
				}
				for i, v := range lowbit.RefCount(g) {
					if int(cnt[i]) != v {
						t.Fatalf("count %d: %d, reference %d", i, cnt[i], v)
					}
				}
			}
			checkAccounting(t, dev.Stats().Host, before, c)
		})
	}
}

// checkAccounting compares the bucket's share of the accounting with the
// closed form: lines = ceil(n / elements per line) per slab; slabs = W
// worker-major, 1 element-major, doubled with gate bits; one aggregate
// line read per line element-major, two worker-major.
func checkAccounting(t *testing.T, a, before Accounting, c hostCase) {
	t.Helper()
	epl := 64
	if c.layout == lowbit.WorkerMajor {
		epl = 512
	}
	lines := int64((c.n + epl - 1) / epl)
	slabs, resp := int64(1), int64(1)
	if c.layout == lowbit.WorkerMajor {
		slabs, resp = int64(c.w), 2
	}
	if c.mode == cxl.Aggregate(lowbit.Ternary) && c.gate.Kind == lowbit.GateWorker {
		slabs *= 2
	}
	want := Accounting{
		Encoded:      int64(c.w * c.n),
		FP32Bytes:    int64(4 * c.w * c.n),
		WriteLines:   slabs * lines,
		PayloadBytes: 64 * slabs * lines,
		ReadLines:    resp * lines,
		Transactions: slabs*lines + resp*lines,
		Aggregates:   1,
	}
	got := Accounting{
		Encoded: a.Encoded - before.Encoded, FP32Bytes: a.FP32Bytes - before.FP32Bytes,
		WriteLines: a.WriteLines - before.WriteLines, PayloadBytes: a.PayloadBytes - before.PayloadBytes,
		ReadLines: a.ReadLines - before.ReadLines, Transactions: a.Transactions - before.Transactions,
		Aggregates: a.Aggregates - before.Aggregates, Rejected: a.Rejected - before.Rejected,
	}
	if got != want {
		t.Errorf("accounting %+v, closed form %+v", got, want)
	}
}

// TestPayloadAgainstReference checks the software path (Encode, Vote,
// Counts) against the reference loops, and the packet bytes against the
// definition b[k, i] = 1{g[k][i] > 0}.
func TestPayloadAgainstReference(t *testing.T) {
	const tau = 0.3
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range hostCases() {
		spec := lowbit.Spec{Workers: c.w, Layout: c.layout, Format: c.mode.Format(), Gate: c.gate}
		g := lowbit.EdgeGradients(r, c.w, c.n)
		p, err := Encode(spec, c.base, g, tau)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if err := p.Check(); err != nil {
			t.Errorf("%v: Check: %v", c, err)
		}
		if got, want := int64(len(p.Signs)+len(p.Gates)), DataBytes(spec, c.n); got != want {
			t.Errorf("%v: %d payload bytes, DataBytes %d", c, got, want)
		}
		u, err := p.Vote(spec)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for i, v := range lowbit.RefAggregate(g, spec, tau, c.base) {
			if u[i] != v {
				t.Fatalf("%v: element %d: vote %d, reference %d", c, i, u[i], v)
			}
		}
		for i, v := range lowbit.RefCount(g) {
			if cnt := p.Counts()[i]; int(cnt) != v {
				t.Fatalf("%v: count %d: %d, reference %d", c, i, cnt, v)
			}
		}
		for k := range g {
			for i, x := range g[k] {
				var bit byte
				if c.layout == lowbit.ElementMajor {
					bit = p.Signs[i] >> k & 1
				} else {
					bit = p.SignSlab(k)[i/8] >> (i % 8) & 1
				}
				if (bit == 1) != (x > 0) {
					t.Fatalf("%v: worker %d element %d = %v encodes as %d", c, k, i, x, bit)
				}
			}
		}
	}
}

// TestNonFinitePerBucket: a NaN or Inf rejects only the bucket holding it,
// with an error naming bucket, worker and element; other buckets go on.
func TestNonFinitePerBucket(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, l := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
			dev, err := Open(Config{Workers: 4, Layout: l})
			if err != nil {
				t.Fatal(err)
			}
			var bs []*Bucket
			for i, name := range []string{"ok", "broken"} {
				b, err := dev.Map(BucketConfig{Name: name, Elements: 700, Element0: 700 * i, Mode: cxl.Aggregate(lowbit.Binary)})
				if err != nil {
					t.Fatal(err)
				}
				bs = append(bs, b)
			}
			g := lowbit.EdgeGradients(rand.New(rand.NewPCG(5, 6)), 4, 700)
			g[2] = append([]float32(nil), g[2]...)
			g[2][321] = bad
			err = EncodeWorkers(bs[1:], 4, func(k, _ int) []float32 { return g[k] }, nil)
			var nf *NonFiniteError
			var lf *lowbit.NonFiniteError
			if !errors.As(err, &nf) || nf.Bucket != "broken" || nf.Worker != 2 || nf.Err.Index != 321 || !errors.As(err, &lf) {
				t.Fatalf("%v %v: error %v", l, bad, err)
			}
			if a := dev.Stats().Host; a.Rejected != 1 {
				t.Errorf("%v: %d rejected, want 1", l, a.Rejected)
			}
			// The good bucket still aggregates: the caller keeps only the
			// broken one on FP32.
			g[2][321] = 1
			if err := EncodeWorkers(bs[:1], 4, func(k, _ int) []float32 { return g[k] }, nil); err != nil {
				t.Fatal(err)
			}
			if err := bs[0].Write(); err != nil {
				t.Fatal(err)
			}
			if _, err := bs[0].Read(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLatchedRead: Read follows the latch the control plane writes, and
// refuses a latch that does not aggregate.
func TestLatchedRead(t *testing.T) {
	for _, l := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		dev, err := Open(Config{Workers: 5, Layout: l, Gate: lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 3}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := dev.Map(BucketConfig{Name: "head", Elements: 300, Mode: cxl.FP32Bypass})
		if err != nil {
			t.Fatal(err)
		}
		g := lowbit.EdgeGradients(rand.New(rand.NewPCG(7, 8)), 5, 300)
		for k := range g {
			if err := b.EncodeWorker(k, g[k], 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Write(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Read(); err == nil {
			t.Errorf("%v: Read under FP32 bypass succeeded", l)
		}
		if err := b.Values(make([]int8, 300)); err == nil {
			t.Errorf("%v: Values without an aggregate succeeded", l)
		}
		for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Ternary), cxl.Aggregate(lowbit.Binary)} {
			if err := dev.ModeWriter().SetMode(b.ID(), m, 1); err != nil {
				t.Fatal(err)
			}
			if got, err := b.Read(); err != nil || got != m {
				t.Fatalf("%v: Read: mode %v err %v, want %v", l, got, err, m)
			}
			u := make([]int8, 300)
			if err := b.Values(u); err != nil {
				t.Fatal(err)
			}
			spec := lowbit.Spec{Workers: 5, Layout: l, Format: m.Format(), Gate: dev.Config().Gate}
			for i, v := range lowbit.RefAggregate(g, spec, 0, 0) {
				if u[i] != v {
					t.Fatalf("%v %v: element %d: %d, reference %d", l, m, i, u[i], v)
				}
			}
		}
	}
}

// TestRegions: buckets map one after another, each sized by the closed
// form, and bad configurations are errors naming the input.
func TestRegions(t *testing.T) {
	dev, err := Open(Config{Workers: 3, Layout: lowbit.WorkerMajor})
	if err != nil {
		t.Fatal(err)
	}
	end := uint64(0)
	for i, n := range []int{1, 512, 513, 5000} {
		b, err := dev.Map(BucketConfig{Name: fmt.Sprint(i), Elements: n})
		if err != nil {
			t.Fatal(err)
		}
		r := b.Region()
		lines := uint64((n + 511) / 512)
		if r.Base != end || r.Size != 3*lines*64 || r.End() != end+5*lines*64 || b.Lines() != int(lines) {
			t.Errorf("bucket %d: base %d size %d end %d, want base %d size %d", n, r.Base, r.Size, r.End(), end, 3*lines*64)
		}
		end = r.End()
	}
	for _, c := range []Config{{Workers: 0}, {Workers: 9, Layout: lowbit.ElementMajor}, {Workers: 2, Capacity: 100}, {Workers: 2, Gate: lowbit.Gate{Kind: lowbit.GateMargin}}} {
		if _, err := Open(c); err == nil {
			t.Errorf("Open(%+v) succeeded", c)
		}
	}
	if _, err := dev.Map(BucketConfig{Name: "empty"}); err == nil {
		t.Error("Map of an empty bucket succeeded")
	}
	small, err := Open(Config{Workers: 1, Capacity: 128})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Map(BucketConfig{Name: "big", Elements: 200}); err == nil {
		t.Error("Map past the capacity succeeded")
	}
}

// TestRawLines: the raw line API a remote client uses writes and reads
// what the bucket API does.
func TestRawLines(t *testing.T) {
	dev, err := Open(Config{Workers: 2, Layout: lowbit.ElementMajor})
	if err != nil {
		t.Fatal(err)
	}
	b, err := dev.Map(BucketConfig{Name: "raw", Elements: 128, Mode: cxl.Aggregate(lowbit.Binary)})
	if err != nil {
		t.Fatal(err)
	}
	r := b.Region()
	data := make([]byte, 128)
	for i := range data {
		data[i] = byte(i % 4) // worker 0 bit 0, worker 1 bit 1
	}
	if err := dev.WriteLines([]uint64{r.SignAddr(0, 0), r.SignAddr(0, 1)}, data); err != nil {
		t.Fatal(err)
	}
	resps, err := dev.ReadLines([]uint64{r.ViewAddr(0, 0), r.ViewAddr(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for l, resp := range resps {
		for i, c := range resp.Data {
			want := byte(i%4&1 + i%4>>1)
			if c != want || resp.Mode != cxl.Aggregate(lowbit.Binary) || !resp.Transformed {
				t.Fatalf("line %d byte %d: count %d mode %v, want %d", l, i, c, resp.Mode, want)
			}
		}
	}
	if err := dev.WriteLines([]uint64{r.SignAddr(0, 0)}, data); err == nil {
		t.Error("WriteLines with the wrong amount of data succeeded")
	}
	if _, err := dev.ReadLines([]uint64{1}); err == nil {
		t.Error("an unaligned read succeeded")
	}
	if got, err := dev.Bucket(b.ID()); err != nil || got != b {
		t.Fatalf("Bucket(%d): %v %v", b.ID(), got, err)
	}
	if err := dev.Unmap(b.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Bucket(b.ID()); err == nil {
		t.Error("Bucket of an unmapped region succeeded")
	}
	if err := b.Write(); err == nil {
		t.Error("Write into an unmapped bucket succeeded")
	}
	if err := dev.Unmap(b.ID()); err == nil {
		t.Error("a second Unmap succeeded")
	}
	st := dev.Stats()
	if st.Host.Transactions != 5 || st.Controller.Transactions != 5 {
		t.Errorf("transactions: host %d, controller %d, want 5", st.Host.Transactions, st.Controller.Transactions)
	}
}
