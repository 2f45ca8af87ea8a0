package lowbit

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

var testGates = []Gate{PaperGate, {Kind: GatePattern, Period: 2}, {Kind: GatePattern, Period: 7}, {Kind: GatePattern, Period: 64},
	{Kind: GateWorker}, {Kind: GateMargin, Threshold: 1}, {Kind: GateMargin, Threshold: 2}, {Kind: GateMargin, Threshold: 3}, {Kind: GateMargin, Threshold: 6}}

func specsFor(l Layout, w int) []Spec {
	specs := []Spec{{Workers: w, Layout: l, Format: Binary}}
	for _, g := range testGates {
		specs = append(specs, Spec{Workers: w, Layout: l, Format: Ternary, Gate: g})
	}
	return specs
}

func TestEncodeSignsMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n++ {
		g := EdgeGradients(r, 1, n)[0]
		dst := make([]byte, PlaneBytes(n)+2)
		dst[len(dst)-1], dst[len(dst)-2] = 0xAA, 0x55 // guard band
		if err := EncodeSigns(dst, g); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for i, v := range g {
			want := v > 0
			if got := dst[i/8]>>(i%8)&1 == 1; got != want {
				t.Fatalf("n=%d elem %d (%v): bit %v, want %v", n, i, v, got, want)
			}
		}
		if r := n % 8; r != 0 && dst[n/8]>>r != 0 {
			t.Fatalf("n=%d: stray bits past the end: %08b", n, dst[n/8])
		}
		if dst[len(dst)-1] != 0xAA || dst[len(dst)-2] != 0x55 {
			t.Fatalf("n=%d: wrote past PlaneBytes", n)
		}
	}
}

func TestEncodeSignsRejectsNonFinite(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for _, n := range []int{1, 7, 8, 9, 100} {
			for at := 0; at < n; at += 3 {
				g := make([]float32, n)
				g[at] = bad
				if at+1 < n {
					g[at+1] = bad // the first one must be named
				}
				err := EncodeSigns(make([]byte, PlaneBytes(n)), g)
				var nf *NonFiniteError
				if !errors.As(err, &nf) || nf.Index != at {
					t.Fatalf("%v at %d of %d: got %v", bad, at, n, err)
				}
			}
		}
	}
	if err := EncodeSigns(make([]byte, 1), []float32{math.MaxFloat32, -math.MaxFloat32}); err != nil {
		t.Fatalf("largest finite values rejected: %v", err)
	}
}

func TestCountPacketExhaustive(t *testing.T) {
	src := make([]byte, 256)
	for i := range src {
		src[i] = byte(i)
	}
	for w := 1; w <= 8; w++ {
		for off := range 9 {
			dst := make([]byte, 256-off)
			CountPacket(dst, src[off:], w)
			want := RefCountPacket(src[off:], w)
			for i := range dst {
				if int(dst[i]) != want[i] {
					t.Fatalf("w=%d byte %#x: count %d, want %d", w, src[off+i], dst[i], want[i])
				}
			}
		}
	}
}

func TestVotePacketMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for w := 1; w <= 8; w++ {
		for _, s := range specsFor(ElementMajor, w) {
			for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 200} {
				base := r.IntN(1000)
				g := EdgeGradients(r, w, n)
				signs, gates := make([]byte, n), make([]byte, n)
				if err := PackPacket(signs, g); err != nil {
					t.Fatal(err)
				}
				tau := float32(0.5)
				if err := PackPacketGates(gates, g, tau); err != nil {
					t.Fatal(err)
				}
				got := make([]int8, n)
				if err := VotePacket(got, signs, gates, s, base); err != nil {
					t.Fatalf("%+v: %v", s, err)
				}
				fromFloats := RefAggregate(g, s, tau, base)
				fromBits := RefAggregatePacket(signs, gates, s, base)
				for i := range got {
					if got[i] != fromFloats[i] || got[i] != fromBits[i] {
						t.Fatalf("w=%d %v gate %v n=%d base=%d elem %d: got %d, ref(floats) %d, ref(bits) %d",
							w, s.Format, s.Gate, n, base, i, got[i], fromFloats[i], fromBits[i])
					}
				}
			}
		}
	}
}

func TestVotePlanesMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, w := range []int{1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 64, 100, 255, 256, 1024} {
		specs := specsFor(WorkerMajor, w)
		for _, n := range []int{1, 7, 63, 64, 65, 511, 512, 513, 1100} {
			if w >= 256 && n > 600 {
				continue
			}
			s := specs[r.IntN(len(specs))]
			if w <= 17 {
				s = specs[(n+w)%len(specs)]
			}
			base := r.IntN(1 << 20)
			g := EdgeGradients(r, w, n)
			tau := float32(0.7)
			signs, gates := make([][]byte, w), make([][]byte, w)
			for k := range w {
				signs[k] = make([]byte, PlaneBytes(n))
				gates[k] = make([]byte, PlaneBytes(n))
				if err := EncodeSigns(signs[k], g[k]); err != nil {
					t.Fatal(err)
				}
				if err := EncodeGates(gates[k], g[k], tau); err != nil {
					t.Fatal(err)
				}
			}
			pos, nz := make([]byte, PlaneBytes(n)), make([]byte, PlaneBytes(n))
			if err := VotePlanes(pos, nz, signs, gates, n, s, base); err != nil {
				t.Fatalf("w=%d %+v: %v", w, s, err)
			}
			got := make([]int8, n)
			UnpackPlanes(got, pos, nz, n)
			want := RefAggregate(g, s, tau, base)
			wantBits := RefAggregatePlanes(signs, gates, n, s, base)
			for i := range got {
				if got[i] != want[i] || got[i] != wantBits[i] {
					t.Fatalf("w=%d %v gate %v n=%d base=%d elem %d: got %d, want %d (bits %d)", w, s.Format, s.Gate, n, base, i, got[i], want[i], wantBits[i])
				}
			}
			if r := n % 8; r != 0 && (pos[len(pos)-1]>>r != 0 || nz[len(nz)-1]>>r != 0) {
				t.Fatalf("stray bits past n=%d", n)
			}
			counts := make([]uint16, n)
			CountPlanes(counts, signs, n)
			for i, c := range RefCount(g) {
				if int(counts[i]) != c {
					t.Fatalf("w=%d count elem %d = %d, want %d", w, i, counts[i], c)
				}
			}
		}
	}
}

// TestTieIsZero pins sgn(0) = 0: with W even, a 4-4 split returns 0 for
// G-Binary, never a silent +1 or -1.
func TestTieIsZero(t *testing.T) {
	s := Spec{Workers: 8, Layout: ElementMajor, Format: Binary}
	src := []byte{0x0F, 0xF0, 0x55, 0xFF, 0x00, 0x1F, 0x07}
	want := []int8{0, 0, 0, 1, -1, 1, -1}
	got := make([]int8, len(src))
	if err := VotePacket(got, src, nil, s, 0); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("VotePacket(%08b) = %d; want %d", src[i], got[i], want[i])
		}
	}
}

// TestPaperExample is the paper's Sec. 2 example: eight workers, six
// positive and two negative, give +1 under G-Binary; G-Ternary returns 0
// where the 2-of-3 gate is zero (element 2) and +1 elsewhere.
func TestPaperExample(t *testing.T) {
	src := []byte{0b00111111, 0b00111111, 0b00111111}
	bin := make([]int8, 3)
	ter := make([]int8, 3)
	if err := VotePacket(bin, src, nil, Spec{Workers: 8, Format: Binary}, 0); err != nil {
		t.Fatal(err)
	}
	if err := VotePacket(ter, src, nil, Spec{Workers: 8, Format: Ternary, Gate: PaperGate}, 0); err != nil {
		t.Fatal(err)
	}
	if bin[0] != 1 || bin[1] != 1 || bin[2] != 1 {
		t.Errorf("G-Binary = %v; want [1 1 1]", bin)
	}
	if ter[0] != 1 || ter[1] != 1 || ter[2] != 0 {
		t.Errorf("G-Ternary = %v; want [1 1 0]", ter)
	}
}

func TestPlanesPacketRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for w := 1; w <= 8; w++ {
		n := 1 + r.IntN(300)
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32()) & byte(1<<w-1)
		}
		planes := make([][]byte, w)
		for k := range planes {
			planes[k] = make([]byte, PlaneBytes(n))
		}
		PacketToPlanes(planes, src, n)
		back := make([]byte, n)
		PlanesToPacket(back, planes, n)
		for i := range src {
			if back[i] != src[i] {
				t.Fatalf("w=%d elem %d: %08b -> %08b", w, i, src[i], back[i])
			}
		}
	}
}

// TestPlanesToPacketMatchesDefinition: bit k of packet byte i is bit i
// of plane k, for every W, lengths around whole plane bytes, and planes
// with random bits past n (which must not show).
func TestPlanesToPacketMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for w := 0; w <= 8; w++ {
		for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 200 + r.IntN(300)} {
			planes := make([][]byte, w)
			for k := range planes {
				planes[k] = make([]byte, PlaneBytes(n)+r.IntN(3))
				for j := range planes[k] {
					planes[k][j] = byte(r.Uint32())
				}
			}
			dst := make([]byte, n+2)
			dst[n], dst[n+1] = 0xA5, 0x5A
			for i := range n {
				dst[i] = byte(r.Uint32()) // overwritten
			}
			PlanesToPacket(dst, planes, n)
			for i := range n {
				var want byte
				for k := range w {
					want |= (planes[k][i/8] >> (i % 8) & 1) << k
				}
				if dst[i] != want {
					t.Fatalf("w=%d n=%d elem %d: %08b, want %08b", w, n, i, dst[i], want)
				}
			}
			if dst[n] != 0xA5 || dst[n+1] != 0x5A {
				t.Fatalf("w=%d n=%d: wrote past n", w, n)
			}
		}
	}
}

// TestPaperTrafficColumn checks the Table 6 traffic column from ResNet-18
// with 100 classes: 11,168,832 backbone and 51,300 head parameters.
func TestPaperTrafficColumn(t *testing.T) {
	const backbone, head = 11_168_832, 512*100 + 100
	fp, bin, ter := FP32, Binary, Ternary
	cases := []struct {
		name   string
		bb, hd Format
		want   float64
	}{
		{"FP32 all", fp, fp, 1.0000},
		{"G-Binary all", bin, bin, 0.0313},
		{"G-Ternary all", ter, ter, 0.0494},
		{"G-Binary backbone + FP32 head", bin, fp, 0.0357},
		{"G-Ternary backbone + FP32 head", ter, fp, 0.0537},
		{"FP32 backbone + G-Binary head", fp, bin, 0.9956},
		{"FP32 backbone + G-Ternary head", fp, ter, 0.9957},
	}
	for _, c := range cases {
		tr := Account([]Group{{"backbone", backbone, c.bb, PaperGate}, {"head", head, c.hd, PaperGate}}, PaperAccounting)
		if got := math.Round(tr.Ratio*1e4) / 1e4; got != c.want {
			t.Errorf("%s: ratio %.6f rounds to %.4f; paper %.4f", c.name, tr.Ratio, got, c.want)
		}
	}
	if b := BitsPerElement(Ternary, Gate{Kind: GateWorker}, Base3Accounting); b != 1.6 {
		t.Errorf("base-3 ternary = %v bits; want 1.6", b)
	}
	if b := BitsPerElement(Ternary, Gate{Kind: GateWorker}, PlaneAccounting); b != 2 {
		t.Errorf("two-plane ternary = %v bits; want 2", b)
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, g := range testGates {
		p, err := ParseGate(g.String())
		if err != nil || p.String() != g.String() {
			t.Errorf("ParseGate(%q) = %v, %v", g.String(), p, err)
		}
	}
	for _, bad := range []string{"", "pattern:0", "paper:0", "pattern:-3", "pattern:1", "pattern:65", "margin", "margin:0", "margin:x", "worker:3", "zero"} {
		if _, err := ParseGate(bad); err == nil {
			t.Errorf("ParseGate(%q) accepted", bad)
		}
	}
	for _, f := range []Format{FP32, Binary, Ternary} {
		if p, err := ParseFormat(f.String()); err != nil || p != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, p, err)
		}
	}
	if _, err := ParseFormat("int4"); err == nil {
		t.Error("ParseFormat(int4) accepted")
	}
}

func TestSpecValidate(t *testing.T) {
	bad := []Spec{
		{Workers: 0, Layout: ElementMajor, Format: Binary},
		{Workers: 9, Layout: ElementMajor, Format: Binary},
		{Workers: 1025, Layout: WorkerMajor, Format: Binary},
		{Workers: 8, Layout: ElementMajor, Format: FP32},
		{Workers: 8, Layout: ElementMajor, Format: Ternary, Gate: Gate{Kind: GateMargin}},
		{Workers: 8, Layout: Layout(7), Format: Binary},
		{Workers: 8, Layout: ElementMajor, Format: Int8},
		{Workers: 0, Layout: WorkerMajor, Format: BFP8},
		{Workers: MaxWorkers + 1, Layout: WorkerMajor, Format: Int8},
		{Workers: MaxSumWorkers + 1, Layout: WorkerMajor, Format: BFP8}, // an int16 lane would saturate
		{Workers: 8, Layout: WorkerMajor, Format: BFP8, Gate: PaperGate},
		{Workers: 8, Layout: WorkerMajor, Format: Format(NumFormats)},
	}
	for _, s := range bad {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v validated", s)
		}
	}
	good := []Spec{
		{Workers: 1, Layout: ElementMajor, Format: Binary},
		{Workers: MaxWorkers, Layout: WorkerMajor, Format: Ternary, Gate: Gate{Kind: GateMargin, Threshold: 3}},
		{Workers: 1, Layout: WorkerMajor, Format: Int8},
		{Workers: MaxSumWorkers, Layout: WorkerMajor, Format: BFP8},
	}
	for _, s := range good {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestDecode(t *testing.T) {
	u := []int8{1, 0, -1}
	dst := make([]float32, 3)
	Decode(dst, u, 0.5)
	if dst[0] != 0.5 || dst[1] != 0 || dst[2] != -0.5 {
		t.Errorf("Decode = %v", dst)
	}
	pos, nz := []byte{0b001}, []byte{0b101}
	DecodePlanes(dst, pos, nz, 3, 2)
	if dst[0] != 2 || dst[1] != 0 || dst[2] != -2 {
		t.Errorf("DecodePlanes = %v", dst)
	}
}

// TestDecodeUnpackPlanesMatchDefinition checks DecodePlanes and
// UnpackPlanes on every length up to 200 and random planes against the
// per-element definition: u = +1 when nz and pos, -1 when only nz, 0
// otherwise, and the update is scale * u as float32 (so a zero update
// carries the scale's sign, and pos without nz is 0). Bytes past n in dst
// are not written.
func TestDecodeUnpackPlanesMatchDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 1))
	for n := range 200 {
		nb := PlaneBytes(n)
		pos, nz := make([]byte, nb), make([]byte, nb)
		for j := range nb {
			pos[j], nz[j] = byte(r.Uint32()), byte(r.Uint32())
		}
		for _, scale := range []float32{0.5, -0.25, 3e-5} {
			got := make([]float32, n+1)
			got[n] = 7
			DecodePlanes(got, pos, nz, n, scale)
			u := make([]int8, n+1)
			u[n] = 7
			UnpackPlanes(u, pos, nz, n)
			for i := range n {
				var want int8
				if nz[i/8]>>(i%8)&1 == 1 {
					want = -1
					if pos[i/8]>>(i%8)&1 == 1 {
						want = 1
					}
				}
				wf := scale * float32(want)
				if math.Float32bits(got[i]) != math.Float32bits(wf) || u[i] != want {
					t.Fatalf("n=%d scale=%v element %d: DecodePlanes %v UnpackPlanes %d, want %v and %d", n, scale, i, got[i], u[i], wf, want)
				}
			}
			if got[n] != 7 || u[n] != 7 {
				t.Fatalf("n=%d: wrote past n", n)
			}
		}
	}
}

func TestKernelsDoNotAllocate(t *testing.T) {
	n := 4096
	g := EdgeGradients(rand.New(rand.NewPCG(9, 9)), 8, n)
	plane := make([]byte, PlaneBytes(n))
	packet := make([]byte, n)
	_ = PackPacket(packet, g)
	out := make([]int8, n)
	counts := make([]byte, n)
	planes := make([][]byte, 8)
	for k := range planes {
		planes[k] = make([]byte, PlaneBytes(n))
		_ = EncodeSigns(planes[k], g[k])
	}
	pos, nz := make([]byte, PlaneBytes(n)), make([]byte, PlaneBytes(n))
	sb := Spec{Workers: 8, Layout: ElementMajor, Format: Ternary, Gate: PaperGate}
	sp := Spec{Workers: 8, Layout: WorkerMajor, Format: Ternary, Gate: PaperGate}
	for name, f := range map[string]func(){
		"EncodeSigns": func() { _ = EncodeSigns(plane, g[0]) },
		"CountPacket": func() { CountPacket(counts, packet, 8) },
		"VotePacket":  func() { _ = VotePacket(out, packet, nil, sb, 0) },
		"VotePlanes":  func() { _ = VotePlanes(pos, nz, planes, nil, n, sp, 0) },
	} {
		if a := testing.AllocsPerRun(10, f); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// TestVotePlanesFewWorkersManyChunks checks VotePlanes for every W up to
// 8 (the W=8 kernel with constant planes added on amd64, see padPlanes)
// on every kernel set, over several result chunks and a ragged tail,
// against the bit-level reference; ties (even W) and the pattern gate's
// zeros must come out as in the reference.
func TestVotePlanesFewWorkersManyChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	specs := []Spec{
		{Layout: WorkerMajor, Format: Binary},
		{Layout: WorkerMajor, Format: Ternary, Gate: PaperGate},
		{Layout: WorkerMajor, Format: Ternary, Gate: Gate{Kind: GatePattern, Period: 5}},
		// Period 63's gate chunk (6048 bytes) is the longest a kernel call
		// reads from the constant planes.
		{Layout: WorkerMajor, Format: Ternary, Gate: Gate{Kind: GatePattern, Period: 63}},
	}
	forEachKernelSet(t, func(t *testing.T) {
		for w := 1; w <= 8; w++ {
			for _, n := range []int{8 * 32, 8*32 + 5, 8*(2*planesChunk+96) + 3, 8 * 3 * planesChunk} {
				for si, s := range specs {
					s.Workers = w
					base := r.IntN(1 << 20)
					nb := PlaneBytes(n)
					signs := make([][]byte, w)
					for k := range signs {
						signs[k] = make([]byte, nb)
						for i := range signs[k] {
							signs[k][i] = byte(r.Uint32())
						}
						if m := n % 8; m != 0 {
							signs[k][nb-1] &= byte(1<<m - 1)
						}
					}
					pos, nz := make([]byte, nb), make([]byte, nb)
					for i := range pos { // stale bytes must not leak through
						pos[i], nz[i] = 0xa5, 0x5a
					}
					if err := VotePlanes(pos, nz, signs, nil, n, s, base); err != nil {
						t.Fatal(err)
					}
					got := make([]int8, n)
					UnpackPlanes(got, pos, nz, n)
					want := RefAggregatePlanes(signs, nil, n, s, base)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("w=%d spec %d n=%d base=%d elem %d: got %d, want %d", w, si, n, base, i, got[i], want[i])
						}
					}
					if m := n % 8; m != 0 && (pos[nb-1]>>m != 0 || nz[nb-1]>>m != 0) {
						t.Fatalf("w=%d spec %d n=%d: stray bits past n", w, si, n)
					}
				}
			}
		}
	})
}

// TestGateKeeps checks Gate.Keeps, the gate rule production code calls
// element by element, against its reference twin RefGateKeeps on every
// gate kind, periods 2 to 64 and margins around the threshold.
func TestGateKeeps(t *testing.T) {
	gates := []Gate{PaperGate, {}, {Kind: GateWorker}}
	for p := 2; p <= 64; p++ {
		gates = append(gates, Gate{Kind: GatePattern, Period: p})
	}
	for th := 1; th <= 9; th++ {
		gates = append(gates, Gate{Kind: GateMargin, Threshold: th})
	}
	for _, g := range gates {
		for i := range 200 {
			for a := -10; a <= 10; a++ {
				if got, want := g.Keeps(i, a), RefGateKeeps(g, i, a); got != want {
					t.Fatalf("%v.Keeps(%d, %d) = %v, RefGateKeeps %v", g, i, a, got, want)
				}
			}
		}
	}
	// The paper's gate by hand: two keep, the third returns zero.
	for i, want := range []bool{true, true, false, true, true, false} {
		if PaperGate.Keeps(i, 0) != want {
			t.Errorf("PaperGate.Keeps(%d) = %v", i, !want)
		}
	}
}
