package host

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// refSumChain is the oracle of an integer-sum bucket: lowbit's Ref twins
// from the FP32 gradients (the scale agreed by a plain loop) to the
// sums, exponents and decoded mean.
func refSumChain(f lowbit.Format, g [][]float32) (sums []int16, exps []int8, mean []float32) {
	n, w := len(g[0]), len(g)
	if f == lowbit.Int8 {
		var m float32
		for _, gk := range g {
			for _, v := range gk {
				m = max(m, max(v, -v))
			}
		}
		scale := float32(0)
		if m > 0 {
			scale = m / 127
		}
		codes := make([][]int8, w)
		for k := range g {
			codes[k] = lowbit.RefEncodeInt8(g[k], scale)
		}
		sums = lowbit.RefSumInt8(codes)
		return sums, nil, lowbit.RefDecodeInt8(sums, scale, w)
	}
	mant, ex := make([][]int8, w), make([][]int8, w)
	for k := range g {
		mant[k], ex[k] = lowbit.RefEncodeBFP8(g[k])
	}
	sums, exps = lowbit.RefSumBFP8(mant, ex, n)
	return sums, exps, lowbit.RefDecodeBFP8(sums, exps, w)
}

// TestSumBucketsAgainstReference maps Int8 and BFP8 buckets on a device
// of either layout, encodes W workers' gradients (EncodeWorkers runs the
// scale agreement), writes, reads the controller's view and decodes, and
// compares sums, exponents and mean with the Ref chain and with the
// payload's software reduction.
func TestSumBucketsAgainstReference(t *testing.T) {
	for _, f := range []lowbit.Format{lowbit.Int8, lowbit.BFP8} {
		for _, lay := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
			for _, w := range []int{1, 3, 8} {
				for _, n := range []int{1, 63, 64, 65, 4097} {
					t.Run(fmt.Sprintf("%v/%v/W=%d/n=%d", f, lay, w, n), func(t *testing.T) {
						testSumBucket(t, f, lay, w, n)
					})
				}
			}
		}
	}
}

func testSumBucket(t *testing.T, f lowbit.Format, lay lowbit.Layout, w, n int) {
	d, err := Open(Config{Workers: w, Layout: lay})
	if err != nil {
		t.Fatal(err)
	}
	m := cxl.Aggregate(f)
	// A sign-plane bucket first, so the sum bucket is not at address 0.
	if _, err := d.Map(BucketConfig{Name: "signs", Elements: 100, Mode: cxl.Aggregate(lowbit.Binary)}); err != nil {
		t.Fatal(err)
	}
	b, err := d.Map(BucketConfig{Name: "sum", Elements: n, Mode: m, Format: f})
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Region(); r.Sum != f || r.Layout != lowbit.WorkerMajor || r.Elements() < n {
		t.Fatalf("region %+v", r)
	}
	rng := rand.New(rand.NewPCG(uint64(w), uint64(n)))
	g := lowbit.EdgeGradients(rng, w, n)
	g[0][n/2] = 3.5 // a clear maximum
	before := d.Stats().Host
	if err := EncodeWorkers([]*Bucket{b}, w, func(k, _ int) []float32 { return g[k] }, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(); err != nil {
		t.Fatal(err)
	}
	got, err := b.Read()
	if err != nil || got != m {
		t.Fatalf("read: %v %v", got, err)
	}
	wantSums, wantExps, wantMean := refSumChain(f, g)
	sums := make([]int16, n)
	mean := make([]float32, n)
	if err := b.Sums(sums); err != nil {
		t.Fatal(err)
	}
	if err := b.Decode(mean); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sums, wantSums) || !slices.Equal(mean, wantMean) {
		t.Fatalf("controller sums or mean differ from the Ref chain")
	}
	if f == lowbit.BFP8 {
		exps := make([]int8, lowbit.BFPBlocks(n))
		if err := b.Exponents(exps); err != nil || !slices.Equal(exps, wantExps) {
			t.Fatalf("exponents %v (%v), want %v", exps, err, wantExps)
		}
	}
	// The software reduction of the same payload agrees.
	ps, pe, err := b.Payload().Sum()
	if err != nil || !slices.Equal(ps, wantSums) || !slices.Equal(pe, wantExps) {
		t.Fatalf("payload Sum differs (%v)", err)
	}
	if pm, err := b.Payload().Mean(); err != nil || !slices.Equal(pm, wantMean) {
		t.Fatalf("payload Mean differs (%v)", err)
	}
	if err := b.Payload().Check(); err != nil {
		t.Fatal(err)
	}
	// Accounting: payload lines W x (code + exponent lines), and Int8's
	// scale agreement, 4 bytes per worker.
	a := d.Stats().Host
	r := b.Region()
	lines := int64(w * (r.PayloadLines() + r.ExpLines()))
	wantScale := int64(0)
	if f == lowbit.Int8 {
		wantScale = 4 * int64(w)
	}
	if a.WriteLines-before.WriteLines != lines || a.ScaleBytes-before.ScaleBytes != wantScale || a.Encoded-before.Encoded != int64(w*n) {
		t.Errorf("accounting %+v, before %+v: want %d lines, %d scale bytes", a, before, lines, wantScale)
	}
	if err := b.Values(make([]int8, n)); err == nil {
		t.Error("Values of a sum bucket succeeded")
	}
}

// TestSumBucketErrors: the ways an integer-sum bucket refuses.
func TestSumBucketErrors(t *testing.T) {
	d, err := Open(Config{Workers: 4, Layout: lowbit.WorkerMajor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Map(BucketConfig{Name: "x", Elements: 10, Format: lowbit.Binary}); err == nil {
		t.Error("a Binary Format bucket mapped")
	}
	b, err := d.Map(BucketConfig{Name: "i8", Elements: 10, Mode: cxl.Aggregate(lowbit.Binary), Format: lowbit.Int8})
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float32, 10)
	if err := b.EncodeWorker(0, g, 0); err == nil {
		t.Error("int8 encode before the scale agreement succeeded")
	}
	for _, bad := range []float32{-1, float32(math.Inf(1)), float32(math.NaN())} {
		if err := b.AgreeScale(bad); err == nil {
			t.Errorf("AgreeScale(%v) succeeded", bad)
		}
	}
	g[3] = float32(math.NaN())
	var nf *NonFiniteError
	if err := EncodeWorkers([]*Bucket{b}, 4, func(k, _ int) []float32 { return g }, nil); !errors.As(err, &nf) || nf.Err.Index != 3 {
		t.Errorf("NaN in the scale agreement: %v", err)
	}
	g[3] = 0
	if err := EncodeWorkers([]*Bucket{b}, 4, func(k, _ int) []float32 { return g }, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(); err != nil {
		t.Fatal(err)
	}
	// Mapped in G-Binary: the view of an Int8 region is not mapped there.
	if _, err := b.Read(); !errors.Is(err, cxl.ErrUnmappedView) {
		t.Errorf("read of an int8 bucket in g-binary: %v, want ErrUnmappedView", err)
	}
	if err := b.Sums(make([]int16, 10)); err == nil {
		t.Error("Sums without a read succeeded")
	}
}

// TestSumPayloadCheck: Check rejects what no encoder writes.
func TestSumPayloadCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     lowbit.Format
		spoil func(p *Payload)
	}{
		{"int8 code -128", lowbit.Int8, func(p *Payload) { p.Codes[5] = 0x80 }},
		{"int8 padding", lowbit.Int8, func(p *Payload) { p.Codes[70] = 1 }},
		{"int8 negative scale", lowbit.Int8, func(p *Payload) { p.Scale = -1 }},
		{"bfp8 exponent -128", lowbit.BFP8, func(p *Payload) { p.Exps[0] = 0x80 }},
		{"bfp8 exponent padding", lowbit.BFP8, func(p *Payload) { p.Exps[2] = 1 }},
		{"bfp8 scale", lowbit.BFP8, func(p *Payload) { p.Scale = 1 }},
	} {
		s := lowbit.Spec{Workers: 2, Layout: lowbit.WorkerMajor, Format: tc.f}
		g := [][]float32{make([]float32, 66), make([]float32, 66)}
		g[1][7] = -2
		p, err := Encode(s, 0, g, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Fatalf("%s: clean payload: %v", tc.name, err)
		}
		tc.spoil(p)
		if err := p.Check(); err == nil {
			t.Errorf("%s: Check passed", tc.name)
		}
	}
	if _, err := NewPayload(lowbit.Spec{Workers: 2, Layout: lowbit.ElementMajor, Format: lowbit.Int8}, 4, 0); err == nil {
		t.Error("element-major int8 payload made")
	}
}
