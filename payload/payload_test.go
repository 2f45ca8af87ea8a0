package payload

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

func grads(r *rand.Rand, w, n int) [][]float32 {
	g := make([][]float32, w)
	for k := range g {
		g[k] = make([]float32, n)
		for i := range g[k] {
			g[k][i] = float32(r.NormFloat64())
		}
	}
	return g
}

func roundTrip(t *testing.T, f *File) *File {
	t.Helper()
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != f.FileBytes() {
		t.Fatalf("wrote %d bytes, FileBytes says %d", buf.Len(), f.FileBytes())
	}
	got, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestEncodeReadVote(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	gates := []lowbit.Gate{lowbit.PaperGate, {Kind: lowbit.GateWorker}, {Kind: lowbit.GateMargin, Threshold: 2}}
	for _, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		for _, w := range []int{1, 3, 8, 13, 64} {
			if layout == lowbit.ElementMajor && w > 8 {
				continue
			}
			for _, gate := range gates {
				n := 1 + r.IntN(700)
				spec := lowbit.Spec{Workers: w, Layout: layout, Format: lowbit.Ternary, Gate: gate}
				g := grads(r, w, n)
				base := int64(r.IntN(100))
				f, err := Encode(Header{Spec: spec, Base: base}, g, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				got := roundTrip(t, f)
				if got.Header != f.Header {
					t.Fatalf("header %+v read back as %+v", f.Header, got.Header)
				}
				u, err := got.Vote(spec)
				if err != nil {
					t.Fatal(err)
				}
				want := lowbit.RefAggregate(g, spec, 0.5, int(base))
				for i := range want {
					if u[i] != want[i] {
						t.Fatalf("%v w=%d %v elem %d: %d, want %d", layout, w, gate, i, u[i], want[i])
					}
				}
				c := got.Counts()
				for i, wc := range lowbit.RefCount(g) {
					if int(c[i]) != wc {
						t.Fatalf("%v w=%d count %d: %d, want %d", layout, w, i, c[i], wc)
					}
				}
			}
		}
	}
}

// TestCountsByHand is the issue's check: counts of random 8-worker packets
// equal a by-hand popcount of each byte.
func TestCountsByHand(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n := 4096 + 17
	f := &File{Header: Header{Spec: lowbit.Spec{Workers: 8, Layout: lowbit.ElementMajor, Format: lowbit.Binary}, Elements: int64(n)}}
	f.Signs = make([]byte, f.SectionBytes())
	for i := range n {
		f.Signs[i] = byte(r.Uint32())
	}
	got := roundTrip(t, f).Counts()
	for i := range n {
		if int(got[i]) != bits.OnesCount8(f.Signs[i]) {
			t.Fatalf("byte %d %08b: count %d", i, f.Signs[i], got[i])
		}
	}
}

func TestReadRejects(t *testing.T) {
	spec := lowbit.Spec{Workers: 4, Layout: lowbit.WorkerMajor, Format: lowbit.Binary}
	f, err := Encode(Header{Spec: spec}, grads(rand.New(rand.NewPCG(3, 3)), 4, 100), 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	f.WriteTo(&buf)
	good := buf.Bytes()
	mutate := func(fn func(b []byte) []byte) []byte {
		return fn(append([]byte(nil), good...))
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"truncated header", good[:40], "shorter than"},
		{"truncated data", good[:len(good)-1], "header describes"},
		{"extra data", append(append([]byte(nil), good...), 0), "header describes"},
		{"bad magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"bad crc", mutate(func(b []byte) []byte { b[16]++; return b }), "checksum"},
		{"padding bit", mutate(func(b []byte) []byte { b[HeaderBytes+12] |= 0x80; return b }), "past element"},
		{"padding byte", mutate(func(b []byte) []byte { b[HeaderBytes+20] = 1; return b }), "padding"},
	}
	for _, c := range cases {
		_, err := Read(bytes.NewReader(c.data), int64(len(c.data)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestEncodeRejectsNonFinite(t *testing.T) {
	g := [][]float32{{1, 2}, {3, float32(math.NaN())}}
	for _, l := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		_, err := Encode(Header{Spec: lowbit.Spec{Workers: 2, Layout: l, Format: lowbit.Binary}}, g, 0)
		if err == nil || !strings.Contains(err.Error(), "worker 1") || !strings.Contains(err.Error(), "element 1") {
			t.Errorf("%v: error %v, want one naming worker 1 element 1", l, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, spec := range []lowbit.Spec{
		{Workers: 8, Layout: lowbit.ElementMajor, Format: lowbit.Binary},
		{Workers: 3, Layout: lowbit.WorkerMajor, Format: lowbit.Ternary, Gate: lowbit.Gate{Kind: lowbit.GateWorker}},
		{Workers: 5, Layout: lowbit.ElementMajor, Format: lowbit.Ternary, Gate: lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 3}},
		{Workers: 3, Layout: lowbit.WorkerMajor, Format: lowbit.Int8},
		{Workers: 2, Layout: lowbit.WorkerMajor, Format: lowbit.BFP8},
	} {
		p, err := Encode(Header{Spec: spec, Base: 7}, grads(r, spec.Workers, 70), 0.3)
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		p.WriteTo(&buf)
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		// A file that reads must write back to the same bytes and
		// aggregate without error under its own spec.
		var buf bytes.Buffer
		if _, err := p.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatal("read/write is not the identity")
		}
		p.Counts()
		if p.Spec.Format.Sum() {
			if _, err := p.Payload().Mean(); err != nil {
				t.Fatal(err)
			}
		} else if _, err := p.Vote(p.Spec); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSumFiles: Int8 and BFP8 files round-trip as version 2 with the
// agreed scale, and their software aggregate is the Ref chain's.
func TestSumFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, f := range []lowbit.Format{lowbit.Int8, lowbit.BFP8} {
		for _, n := range []int{0, 1, 64, 65, 4097} {
			w := 3
			spec := lowbit.Spec{Workers: w, Layout: lowbit.WorkerMajor, Format: f}
			g := grads(r, w, n)
			file, err := Encode(Header{Spec: spec, Base: 9}, g, 0)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			file.WriteTo(&buf)
			if v := buf.Bytes()[4]; v != 2 {
				t.Errorf("%v: version %d, want 2", f, v)
			}
			got := roundTrip(t, file)
			if got.Header != file.Header || !bytes.Equal(got.Codes, file.Codes) || !bytes.Equal(got.Exps, file.Exps) {
				t.Fatalf("%v n=%d: read back differs", f, n)
			}
			if n == 0 {
				continue
			}
			// The oracle: Ref encode of every worker, Ref sum, Ref decode.
			codes, exps := make([][]int8, w), make([][]int8, w)
			var m float32
			for k := range g {
				for _, v := range g[k] {
					m = max(m, float32(math.Abs(float64(v))))
				}
			}
			for k := range g {
				if f == lowbit.Int8 {
					codes[k] = lowbit.RefEncodeInt8(g[k], m/127)
				} else {
					codes[k], exps[k] = lowbit.RefEncodeBFP8(g[k])
				}
			}
			var want []float32
			if f == lowbit.Int8 {
				if got.Scale != m/127 {
					t.Fatalf("scale %v, want %v", got.Scale, m/127)
				}
				want = lowbit.RefDecodeInt8(lowbit.RefSumInt8(codes), m/127, w)
			} else {
				s, e := lowbit.RefSumBFP8(codes, exps, n)
				want = lowbit.RefDecodeBFP8(s, e, w)
			}
			mean, err := got.Payload().Mean()
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if mean[i] != want[i] {
					t.Fatalf("%v n=%d element %d: mean %v, want %v", f, n, i, mean[i], want[i])
				}
			}
		}
	}
}

// TestVersionedHeader: the paper's formats stay version 1 with the bytes
// they always had; unknown formats and version/format mismatches are
// errors naming the problem.
func TestVersionedHeader(t *testing.T) {
	h := Header{Spec: lowbit.Spec{Workers: 2, Layout: lowbit.WorkerMajor, Format: lowbit.Binary}, Elements: 5, Base: 1}
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 as documented: "NFPL", 1, layout 1, format 1, W = 2,
	// n = 5, base 1, CRC of bytes 0-31, the rest zero.
	want := make([]byte, 64)
	copy(want, "NFPL")
	want[4], want[6], want[7], want[10], want[16], want[24] = 1, 1, 1, 2, 5, 1
	c := crc32IEEE(want[:32])
	want[32], want[33], want[34], want[35] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	if !bytes.Equal(b, want) {
		t.Fatalf("version 1 header\n%x\nwant\n%x", b, want)
	}
	i8 := Header{Spec: lowbit.Spec{Workers: 2, Layout: lowbit.WorkerMajor, Format: lowbit.Int8}, Elements: 5, Scale: 0.25}
	good, err := i8.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	reseal := func(b []byte, v int) []byte {
		c := crc32IEEE(b[:32])
		if v >= 2 {
			c = crc32Update(c, b[36:40])
		}
		b[32], b[33], b[34], b[35] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
		return b
	}
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"unknown format", func(b []byte) []byte { b[7] = 9; return reseal(b, 2) }, "unknown format 9"},
		{"fp32 format", func(b []byte) []byte { b[7] = 0; return reseal(b, 2) }, "unknown format 0"},
		{"int8 as version 1", func(b []byte) []byte { b[4] = 1; clear(b[36:40]); return reseal(b, 1) }, "version 2"},
		{"binary as version 2", func(b []byte) []byte { b[7] = 1; clear(b[36:40]); return reseal(b, 2) }, "version 1"},
		{"version 3", func(b []byte) []byte { b[4] = 3; return reseal(b, 2) }, "unsupported version"},
		{"NaN scale", func(b []byte) []byte { b[36], b[37], b[38], b[39] = 0, 0, 0xc0, 0x7f; return reseal(b, 2) }, "scale"},
		{"negative scale", func(b []byte) []byte { b[39] |= 0x80; return reseal(b, 2) }, "scale"},
		{"bfp8 with a scale", func(b []byte) []byte { b[7] = 4; return reseal(b, 2) }, "no scale"},
		// 3e38 decodes a full code to Inf; -0 no agreement produces.
		{"scale 3e38", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[36:], math.Float32bits(3e38))
			return reseal(b, 2)
		}, "scale (header bytes 36-39): int8 scale 3e+38 exceeds"},
		{"scale above the largest agreement", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[36:], math.Float32bits(math.Nextafter32(lowbit.MaxInt8Scale, math.MaxFloat32)))
			return reseal(b, 2)
		}, "exceeds"},
		{"scale -0", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[36:], 1<<31); return reseal(b, 2) }, "scale (header bytes 36-39): int8 scale -0 is not a number >= +0"},
		{"scale +Inf", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[36:], 0x7f800000); return reseal(b, 2) }, "exceeds"},
		{"scale not in the crc", func(b []byte) []byte { b[36]++; return b }, "checksum"},
		{"element-major int8", func(b []byte) []byte { b[6] = 0; return reseal(b, 2) }, "worker-major"},
	} {
		var got Header
		err := got.UnmarshalBinary(tc.edit(append([]byte(nil), good...)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func ExampleEncode() {
	g := [][]float32{
		{0.5, -1, 2, 0},
		{0.1, -2, -3, 0},
		{0.2, 4, 1, 0},
	}
	spec := lowbit.Spec{Workers: 3, Layout: lowbit.ElementMajor, Format: lowbit.Binary}
	f, _ := Encode(Header{Spec: spec}, g, 0)
	u, _ := f.Vote(spec)
	fmt.Println(f.Signs[:4], f.Counts(), u)
	// Output: [7 4 5 0] [3 1 2 0] [1 -1 1 -1]
}

func crc32IEEE(b []byte) uint32             { return crc32.ChecksumIEEE(b) }
func crc32Update(c uint32, b []byte) uint32 { return crc32.Update(c, crc32.IEEETable, b) }

// TestScaleDecodesFinite: a scale no agreement produces is refused, and
// every scale that is accepted decodes finite means: at MaxInt8Scale
// (max |g| = MaxFloat32 on every worker) the mean is MaxFloat32, where it
// read +Inf before; a zero scale with a non-zero code is refused.
func TestScaleDecodesFinite(t *testing.T) {
	for _, w := range []int{1, 2, lowbit.MaxSumWorkers} {
		g := make([][]float32, w)
		for k := range g {
			g[k] = []float32{math.MaxFloat32, -math.MaxFloat32, 1, 0}
		}
		f, err := Encode(Header{Spec: lowbit.Spec{Workers: w, Layout: lowbit.WorkerMajor, Format: lowbit.Int8}}, g, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Scale != lowbit.MaxInt8Scale {
			t.Fatalf("W=%d: scale %v, want %v", w, f.Scale, lowbit.MaxInt8Scale)
		}
		var buf bytes.Buffer
		f.WriteTo(&buf)
		back, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		mean, err := back.Payload().Mean()
		if err != nil {
			t.Fatal(err)
		}
		if mean[0] != math.MaxFloat32 || mean[1] != -math.MaxFloat32 || mean[3] != 0 {
			t.Errorf("W=%d: means %v, want [MaxFloat32, -MaxFloat32, ~0, 0]", w, mean)
		}
	}
	g := [][]float32{{0, 0}, {0, 0}}
	f, err := Encode(Header{Spec: lowbit.Spec{Workers: 2, Layout: lowbit.WorkerMajor, Format: lowbit.Int8}}, g, 0)
	if err != nil || f.Scale != 0 {
		t.Fatalf("all-zero gradients: scale %v, %v", f.Scale, err)
	}
	f.Codes[1] = 5 // a code the encoder never writes under scale 0
	var buf bytes.Buffer
	f.WriteTo(&buf)
	if _, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err == nil || !strings.Contains(err.Error(), "under a scale of 0") {
		t.Errorf("non-zero code under scale 0: %v", err)
	}
}
