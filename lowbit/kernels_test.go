package lowbit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"
)

// kernelSets returns every kernel set this machine can run: the portable
// one and the architecture ones (none under -tags noasm).
func kernelSets() []kernelSet { return append([]kernelSet{genericKernels}, archKernels...) }

// useKernels makes ks the kernel set of the exported API until the test ends.
func useKernels(t testing.TB, ks kernelSet) {
	old := kernels
	kernels = ks
	t.Cleanup(func() { kernels = old })
}

// forEachKernelSet runs f as a subtest once per kernel set.
func forEachKernelSet(t *testing.T, f func(t *testing.T)) {
	for _, ks := range kernelSets() {
		t.Run(ks.name, func(t *testing.T) {
			useKernels(t, ks)
			f(t)
		})
	}
}

// guarded returns a slice of n bytes at offset off of a larger buffer whose
// other bytes are a known guard pattern, and a check that the guard holds.
func guarded(n, off int) (s []byte, intact func() bool) {
	buf := make([]byte, n+off+40)
	for i := range buf {
		buf[i] = byte(0xA5 ^ i)
	}
	s = buf[off : off+n : off+n]
	return s, func() bool {
		for i := range buf {
			if (i < off || i >= off+n) && buf[i] != byte(0xA5^i) {
				return false
			}
		}
		return true
	}
}

// refBits is the plain bit-plane of pred over g.
func refBits(g []float32, pred func(float32) bool) []byte {
	out := make([]byte, PlaneBytes(len(g)))
	for i, v := range g {
		if pred(v) {
			out[i/8] |= 1 << (i % 8)
		}
	}
	return out
}

// refFirstNonFinite is the index of the first NaN or Inf, or -1.
func refFirstNonFinite(g []float32) int {
	for i, v := range g {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}

var testTaus = []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, 0.25, 1, 3e38}

// checkEncode runs EncodeSigns and EncodeGates on g and compares them with
// the per-element definitions, including which error comes back.
func checkEncode(t *testing.T, g []float32, off int, tau float32) {
	t.Helper()
	bad := refFirstNonFinite(g)
	for _, gates := range []bool{false, true} {
		dst, intact := guarded(PlaneBytes(len(g)), off)
		var err error
		var want []byte
		if gates {
			err = EncodeGates(dst, g, tau)
			want = refBits(g, func(v float32) bool { return v > tau || v < -tau })
		} else {
			err = EncodeSigns(dst, g)
			want = refBits(g, func(v float32) bool { return v > 0 })
		}
		if !intact() {
			t.Fatalf("gates=%v n=%d off=%d: wrote outside dst", gates, len(g), off)
		}
		if bad >= 0 {
			var nf *NonFiniteError
			if !errors.As(err, &nf) || nf.Index != bad {
				t.Fatalf("gates=%v n=%d: non-finite at %d: got %v", gates, len(g), bad, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("gates=%v n=%d: %v", gates, len(g), err)
		}
		if !slices.Equal(dst, want) {
			t.Fatalf("gates=%v tau=%v n=%d off=%d:\n got %x\nwant %x", gates, tau, len(g), off, dst, want)
		}
	}
}

func TestKernelsEncodeMatchReference(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		sizes := []int{1000, 1023, 1024, 1025, 4096 + 63, 1 << 14}
		for n := 0; n <= 300; n++ {
			sizes = append(sizes, n)
		}
		nonFinite := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
			math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001)}
		for _, n := range sizes {
			buf := EdgeGradients(r, 1, n+8)[0]
			off := r.IntN(8)
			g := buf[off : off+n]
			tau := testTaus[r.IntN(len(testTaus))]
			checkEncode(t, g, r.IntN(8), tau)
			if n > 0 {
				// One or two non-finite values: the first must be named.
				at := r.IntN(n)
				g[at] = nonFinite[r.IntN(len(nonFinite))]
				if r.IntN(2) == 0 {
					g[r.IntN(n)] = nonFinite[r.IntN(len(nonFinite))]
				}
				checkEncode(t, g, r.IntN(8), tau)
			}
		}
	})
}

// TestKernelsEncodeBoundaries pins the values around the sign and gate
// boundaries: ±0, the smallest subnormals, the largest finite values, and
// |g| == tau (not above it).
func TestKernelsEncodeBoundaries(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.25, -0.25, math.Float32frombits(0x007fffff), math.Float32frombits(0x807fffff)}
	forEachKernelSet(t, func(t *testing.T) {
		for _, n := range []int{len(special), 64, 128, 200} {
			g := make([]float32, n)
			for i := range g {
				g[i] = special[i%len(special)]
			}
			for _, tau := range testTaus {
				checkEncode(t, g, 0, tau)
			}
		}
	})
}

// refVotePacket is the reference of VotePacket for a spec.
func checkPacket(t *testing.T, signs, gates []byte, s Spec, base, off int) {
	t.Helper()
	n := len(signs)
	want := RefAggregatePacket(signs, gates, s, base)
	dst, intact := guarded(n, off)
	if err := VotePacket(int8sFromBytes(dst), signs, gates, s, base); err != nil {
		t.Fatalf("%+v: %v", s, err)
	}
	if !intact() {
		t.Fatalf("w=%d %v %v n=%d: wrote outside dst", s.Workers, s.Format, s.Gate, n)
	}
	for i, v := range int8sFromBytes(dst) {
		if v != want[i] {
			t.Fatalf("w=%d %v gate %v n=%d base=%d elem %d (%08b): got %d, want %d",
				s.Workers, s.Format, s.Gate, n, base, i, signs[i], v, want[i])
		}
	}
}

func int8sFromBytes(b []byte) []int8 {
	out := make([]int8, 0)
	if len(b) > 0 {
		out = unsafeInt8s(b)
	}
	return out
}

func TestKernelsPacketMatchReference(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		sizes := []int{255, 256, 257, 1000, 4096, 4096 + 96 + 31, 3*4096 + 5}
		for n := 0; n <= 130; n++ {
			sizes = append(sizes, n)
		}
		for w := 1; w <= MaxPacketWorkers; w++ {
			for _, s := range specsFor(ElementMajor, w) {
				for _, n := range sizes {
					if n > 300 && r.IntN(4) != 0 {
						continue
					}
					so, gof := r.IntN(32), r.IntN(32)
					sbuf, gbuf := make([]byte, n+so), make([]byte, n+gof)
					for i := range sbuf {
						sbuf[i] = byte(r.Uint32())
					}
					for i := range gbuf {
						gbuf[i] = byte(r.Uint32())
					}
					base := r.IntN(1 << 20)
					signs, gates := sbuf[so:], gbuf[gof:]
					keep := slices.Clone(signs)
					checkPacket(t, signs, gates, s, base, r.IntN(32))
					if !slices.Equal(keep, signs) {
						t.Fatal("VotePacket modified its input")
					}
					counts, intact := guarded(n, r.IntN(32))
					CountPacket(counts, signs, w)
					if !intact() {
						t.Fatalf("CountPacket w=%d n=%d wrote outside dst", w, n)
					}
					for i, c := range RefCountPacket(signs, w) {
						if int(counts[i]) != c {
							t.Fatalf("CountPacket w=%d n=%d elem %d (%08b): %d, want %d", w, n, i, signs[i], counts[i], c)
						}
					}
				}
			}
		}
	})
}

// refCountPlanes counts bit i over the planes, one bit at a time.
func refCountPlanes(planes [][]byte, n int) []uint16 {
	out := make([]uint16, n)
	for _, p := range planes {
		for i := range n {
			out[i] += uint16(p[i/8] >> (i % 8) & 1)
		}
	}
	return out
}

func checkPlanes(t *testing.T, r *rand.Rand, w, n int, s Spec) {
	t.Helper()
	nb := PlaneBytes(n)
	signs, gates := make([][]byte, w), make([][]byte, w)
	for k := range w {
		// Unaligned sub-slices with random bits past n.
		so, gof := r.IntN(32), r.IntN(32)
		sb, gb := make([]byte, nb+so), make([]byte, nb+gof)
		for i := range sb {
			sb[i] = byte(r.Uint32())
		}
		for i := range gb {
			gb[i] = byte(r.Uint32())
		}
		signs[k], gates[k] = sb[so:], gb[gof:]
	}
	base := r.IntN(1 << 20)
	keep := slices.Clone(signs[0])
	pos, posOK := guarded(nb, r.IntN(32))
	nz, nzOK := guarded(nb, r.IntN(32))
	if err := VotePlanes(pos, nz, signs, gates, n, s, base); err != nil {
		t.Fatalf("w=%d %+v: %v", w, s, err)
	}
	if !posOK() || !nzOK() {
		t.Fatalf("w=%d n=%d: VotePlanes wrote outside pos/nz", w, n)
	}
	if !slices.Equal(keep, signs[0]) {
		t.Fatal("VotePlanes modified its input")
	}
	if r := n % 8; r != 0 && (pos[nb-1]>>r != 0 || nz[nb-1]>>r != 0) {
		t.Fatalf("w=%d n=%d: stray bits past n", w, n)
	}
	got := make([]int8, n)
	UnpackPlanes(got, pos, nz, n)
	want := RefAggregatePlanes(signs, gates, n, s, base)
	for i := range got {
		if got[i] != want[i] || (pos[i/8]&^nz[i/8])>>(i%8)&1 != 0 {
			t.Fatalf("w=%d %v gate %v n=%d base=%d elem %d: got %d, want %d", w, s.Format, s.Gate, n, base, i, got[i], want[i])
		}
	}
	if s.Format == Binary {
		counts := make([]uint16, n+3)
		counts[n], counts[n+1], counts[n+2] = 7, 7, 7
		CountPlanes(counts, signs, n)
		if counts[n] != 7 {
			t.Fatalf("CountPlanes wrote past n")
		}
		if wantC := refCountPlanes(signs, n); !slices.Equal(counts[:n], wantC) {
			t.Fatalf("CountPlanes w=%d n=%d: got %v, want %v", w, n, counts[:n], wantC)
		}
	}
}

func TestKernelsPlanesMatchReference(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		for _, w := range []int{1, 2, 3, 5, 7, 8, 9, 16, 33} {
			specs := specsFor(WorkerMajor, w)
			for n := 0; n <= 600; n += 1 + r.IntN(5) {
				checkPlanes(t, r, w, n, specs[r.IntN(len(specs))])
			}
		}
		// W = 8 has its own kernels: every spec, every tail, and sizes
		// that cross the gate's chunk boundaries.
		for _, s := range specsFor(WorkerMajor, 8) {
			for n := 1; n <= 520; n++ {
				checkPlanes(t, r, 8, n, s)
			}
			for _, n := range []int{8 * planesChunk, 8*planesChunk + 1, 2*8*planesChunk + 8*37 + 5} {
				checkPlanes(t, r, 8, n, s)
			}
			if s.Format == Ternary && s.Gate.Kind == GatePattern {
				// Across the gate stream's chunks (one pass: the stream
				// of the first offset serves every chunk).
				c := gateChunk(s.Gate.period())
				for _, n := range []int{8*c - 3, 8 * c, 8*c + 8*32 + 1, 8*(3*c+40) + 7} {
					checkPlanes(t, r, 8, n, s)
				}
			}
		}
	})
}

// TestKernelsQuick checks properties with testing/quick: every kernel set
// equals the reference on arbitrary packets and floats.
func TestKernelsQuick(t *testing.T) {
	cfg := &quick.Config{MaxCount: 300}
	forEachKernelSet(t, func(t *testing.T) {
		count := func(src []byte, w uint8) []int {
			w = 1 + w%8
			dst := make([]byte, len(src))
			CountPacket(dst, src, int(w))
			out := make([]int, len(src))
			for i, c := range dst {
				out[i] = int(c)
			}
			return out
		}
		refCount := func(src []byte, w uint8) []int { return RefCountPacket(src, int(1+w%8)) }
		if err := quick.CheckEqual(count, refCount, cfg); err != nil {
			t.Error("CountPacket:", err)
		}
		vote := func(src []byte, w uint8, base uint16) []int8 {
			s := Spec{Workers: int(1 + w%8), Format: Ternary, Gate: PaperGate}
			dst := make([]int8, len(src))
			if err := VotePacket(dst, src, nil, s, int(base)); err != nil {
				t.Fatal(err)
			}
			return dst
		}
		refVote := func(src []byte, w uint8, base uint16) []int8 {
			return RefAggregatePacket(src, nil, Spec{Workers: int(1 + w%8), Format: Ternary, Gate: PaperGate}, int(base))
		}
		if err := quick.CheckEqual(vote, refVote, cfg); err != nil {
			t.Error("VotePacket:", err)
		}
		enc := func(g []float32) []byte {
			dst := make([]byte, PlaneBytes(len(g)))
			if err := EncodeSigns(dst, g); err != nil {
				return nil
			}
			return dst
		}
		refEnc := func(g []float32) []byte { return refBits(g, func(v float32) bool { return v > 0 }) }
		if err := quick.CheckEqual(enc, refEnc, cfg); err != nil {
			t.Error("EncodeSigns:", err)
		}
	})
}

// FuzzEncode is differential: EncodeSigns and EncodeGates of fuzzed
// floats against the per-element definitions, for every kernel set.
func FuzzEncode(f *testing.F) {
	f.Add(make([]byte, 4*70), uint32(0), uint8(0))
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0xff, 1, 0, 0, 0}, math.Float32bits(0.5), uint8(3))
	seed := make([]byte, 4*200)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed, math.Float32bits(1e-3), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, tauBits uint32, off uint8) {
		n := len(data) / 4
		g := make([]float32, n+int(off%8))[off%8:]
		for i := range n {
			g[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		}
		tau := math.Float32frombits(tauBits)
		if !(tau >= 0) || math.IsInf(float64(tau), 0) {
			tau = 0
		}
		for _, ks := range kernelSets() {
			t.Run(ks.name, func(t *testing.T) {
				useKernels(t, ks)
				checkEncode(t, g, int(off>>3), tau)
			})
		}
	})
}

// FuzzVote is differential: VotePacket, CountPacket and VotePlanes of
// fuzzed bytes against the reference loops, for every kernel set and spec.
func FuzzVote(f *testing.F) {
	f.Add(make([]byte, 300), uint8(8), uint8(0), uint32(0))
	f.Add([]byte{0x0f, 0xf0, 0x55, 0xff, 0, 0x1f, 0x07}, uint8(8), uint8(1), uint32(2))
	f.Add(make([]byte, 8*64+3), uint8(8), uint8(7), uint32(99))
	f.Fuzz(func(t *testing.T, data []byte, w, spec uint8, base uint32) {
		wp := 1 + int(w)%MaxPacketWorkers
		ps := specsFor(ElementMajor, wp)
		s := ps[int(spec)%len(ps)]
		half := len(data) / 2
		signs, gates := data[:half], data[half:2*half]
		wantCount := RefCountPacket(signs, wp)
		for _, ks := range kernelSets() {
			t.Run(ks.name, func(t *testing.T) {
				useKernels(t, ks)
				checkPacket(t, signs, gates, s, int(base%(1<<24)), int(spec>>4))
				c := make([]byte, len(signs))
				CountPacket(c, signs, wp)
				for i := range c {
					if int(c[i]) != wantCount[i] {
						t.Fatalf("CountPacket w=%d elem %d: %d, want %d", wp, i, c[i], wantCount[i])
					}
				}
				// The same bytes as W worker-major planes (8 when w allows).
				wk := 1 + int(w)%12
				nb := len(data) / (2 * wk)
				if nb == 0 {
					return
				}
				sp, gp := make([][]byte, wk), make([][]byte, wk)
				for k := range wk {
					sp[k] = data[k*nb : (k+1)*nb]
					gp[k] = data[(wk+k)*nb : (wk+k+1)*nb]
				}
				n := 8*nb - int(spec%8)
				specs := specsFor(WorkerMajor, wk)
				ws := specs[int(spec/8)%len(specs)]
				pos, nz := make([]byte, nb), make([]byte, nb)
				if err := VotePlanes(pos, nz, sp, gp, n, ws, int(base%(1<<24))); err != nil {
					t.Fatal(err)
				}
				got := make([]int8, n)
				UnpackPlanes(got, pos, nz, n)
				want := RefAggregatePlanes(sp, gp, n, ws, int(base%(1<<24)))
				if !slices.Equal(got, want) {
					t.Fatalf("VotePlanes w=%d %v %v n=%d:\n got %v\nwant %v", wk, ws.Format, ws.Gate, n, got, want)
				}
			})
		}
	})
}

func TestImplementation(t *testing.T) {
	name := Implementation()
	found := false
	for _, ks := range kernelSets() {
		found = found || ks.name == name
	}
	if !found {
		t.Errorf("Implementation() = %q, not one of the kernel sets", name)
	}
	t.Log("lowbit kernels:", name, fmt.Sprint(len(kernelSets())), "sets")
}
