package lowbit

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randFixed returns w workers' gradients of n elements with magnitudes
// spread over many binades, so BFP8 blocks get different exponents, plus
// exact zeros and ties.
func randFixed(r *rand.Rand, w, n int) [][]float32 {
	g := make([][]float32, w)
	for k := range g {
		g[k] = make([]float32, n)
		for i := range g[k] {
			switch r.IntN(8) {
			case 0:
				g[k][i] = 0
			case 1:
				g[k][i] = float32(r.IntN(9)-4) * 0.5 // ties of x.5 at scale 1
			default:
				g[k][i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20))
			}
		}
	}
	return g
}

func TestFormatTable(t *testing.T) {
	for _, f := range Formats() {
		got, err := ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f, got, err)
		}
		if f.Vote() && f.Sum() {
			t.Errorf("%v is both voted and summed", f)
		}
	}
	if _, err := ParseFormat("fp8"); err == nil {
		t.Error("ParseFormat accepted an unknown format")
	}
	if Format(NumFormats).Valid() || !math.IsNaN(BitsPerElement(Format(NumFormats), PaperGate, PaperAccounting)) {
		t.Error("an out-of-table format is valid or has a bit cost")
	}
	for _, a := range []Accounting{PaperAccounting, PlaneAccounting, Base3Accounting} {
		if b := BitsPerElement(Int8, PaperGate, a); b != 8 {
			t.Errorf("int8 under %v: %v bits, want 8", a, b)
		}
		if b := BitsPerElement(BFP8, PaperGate, a); b != 8.125 {
			t.Errorf("bfp8 under %v: %v bits, want 8 + 8/64", a, b)
		}
	}
	if !Binary.Paper() || Int8.Paper() || !Int8.Sum() || !BFP8.Sum() || !Ternary.Vote() {
		t.Error("format traits wrong")
	}
}

// TestInt8Hand checks hand-computed codes: M = 2.54 gives s = 0.02.
func TestInt8Hand(t *testing.T) {
	g := []float32{2.54, -2.54, 0.01, 0.03, -0.01, 1.0, 0}
	s := Int8Scale(2.54)
	q := make([]int8, len(g))
	if err := EncodeInt8(q, g, s); err != nil {
		t.Fatal(err)
	}
	// 0.01/0.02 and 0.03/0.02 are ties in exact arithmetic; in float32
	// they round as float32 division says, so check only the unambiguous.
	want := map[int]int8{0: 127, 1: -127, 5: 50, 6: 0}
	for i, w := range want {
		if q[i] != w {
			t.Errorf("q[%d] = %d, want %d", i, q[i], w)
		}
	}
	sum := make([]int16, 3)
	SumInt8(sum, [][]int8{{127, -127, 5}, {127, -127, -6}, {1, 0, 0}})
	if !slices.Equal(sum, []int16{255, -254, -1}) {
		t.Errorf("SumInt8 = %v", sum)
	}
	mean := make([]float32, 1)
	DecodeInt8(mean, []int16{300}, 0.5, 3)
	if mean[0] != 50 {
		t.Errorf("DecodeInt8(300, 0.5, 3) = %v, want 50", mean[0])
	}
}

// TestInt8Saturation: 258 workers at +127 sum exactly; 259 saturate.
func TestInt8Saturation(t *testing.T) {
	for _, c := range []struct {
		w    int
		code int8
		want int16
	}{{258, 127, 32766}, {259, 127, 32767}, {259, -127, -32768}, {300, -127, -32768}} {
		src := make([][]int8, c.w)
		for k := range src {
			src[k] = []int8{c.code}
		}
		dst := make([]int16, 1)
		SumInt8(dst, src)
		if dst[0] != c.want {
			t.Errorf("W=%d of %d: %d, want %d", c.w, c.code, dst[0], c.want)
		}
	}
}

// TestMaxSumWorkers: the bound is where the worst lane sum, W codes of
// magnitude 127, stops fitting int16 (computed here from the int16 range,
// not from the constant): at MaxSumWorkers the sum of all +127 or all -127
// is exact, one worker more saturates; CheckSumWorkers accepts exactly the
// exact range for the summed formats and leaves the voted ones alone.
func TestMaxSumWorkers(t *testing.T) {
	exact := 0
	for w := 1; 127*w <= math.MaxInt16 && -127*w >= math.MinInt16; w++ {
		exact = w
	}
	if MaxSumWorkers != exact {
		t.Fatalf("MaxSumWorkers %d, the largest exact W is %d", MaxSumWorkers, exact)
	}
	for _, code := range []int8{127, -127} {
		for _, w := range []int{exact, exact + 1} {
			src := make([][]int8, w)
			for k := range src {
				src[k] = []int8{code}
			}
			got := RefSumInt8(src)[0]
			if exactSum := int(code) * w; (int(got) == exactSum) != (w <= exact) {
				t.Errorf("W=%d of %d: lane %d, exact sum %d", w, code, got, exactSum)
			}
		}
	}
	for _, f := range []Format{Int8, BFP8} {
		for w, ok := range map[int]bool{0: false, 1: true, exact: true, exact + 1: false, MaxWorkers: false} {
			if err := CheckSumWorkers(f, w); (err == nil) != ok {
				t.Errorf("CheckSumWorkers(%v, %d) = %v", f, w, err)
			}
		}
	}
	for _, f := range []Format{Binary, Ternary, FP32} {
		if err := CheckSumWorkers(f, MaxWorkers); err != nil {
			t.Errorf("CheckSumWorkers(%v, %d) = %v; the voted formats are not summed", f, MaxWorkers, err)
		}
	}
}

// TestInt8ScaleRange: MaxInt8Scale is what the agreement gives for the
// largest finite |g| (computed here in float32 arithmetic), CheckInt8Scale
// accepts exactly +0 to it, and a full code at it decodes to the largest
// float32, not Inf, in the kernel and the reference alike.
func TestInt8ScaleRange(t *testing.T) {
	top := float32(math.MaxFloat32)
	if want := top / 127; MaxInt8Scale != want || Int8Scale(top) != want {
		t.Fatalf("MaxInt8Scale %v, Int8Scale(MaxFloat32) %v; want %v", MaxInt8Scale, Int8Scale(top), want)
	}
	if float64(MaxInt8Scale)*127 <= math.MaxFloat32 {
		t.Fatalf("127 x %v = %v does not exceed MaxFloat32: the clamp is not exercised", MaxInt8Scale, float64(MaxInt8Scale)*127)
	}
	for _, c := range []struct {
		scale float32
		ok    bool
	}{
		{0, true}, {1e-45, true}, {1, true}, {MaxInt8Scale, true},
		{float32(math.Copysign(0, -1)), false}, {-1, false}, {3e38, false},
		{math.Nextafter32(MaxInt8Scale, top), false}, {float32(math.Inf(1)), false}, {float32(math.NaN()), false},
	} {
		if err := CheckInt8Scale(c.scale); (err == nil) != c.ok {
			t.Errorf("CheckInt8Scale(%v) = %v", c.scale, err)
		}
	}
	for _, w := range []int{1, 2, MaxSumWorkers} {
		sum := []int16{int16(127 * w), int16(-127 * w)}
		got := make([]float32, 2)
		DecodeInt8(got, sum, MaxInt8Scale, w)
		ref := RefDecodeInt8(sum, MaxInt8Scale, w)
		if got[0] != top || got[1] != -top || ref[0] != top || ref[1] != -top {
			t.Errorf("W=%d: decode %v, reference %v; want ±MaxFloat32", w, got, ref)
		}
	}
	if err := EncodeInt8(make([]int8, 1), []float32{1}, 3e38); err == nil {
		t.Error("EncodeInt8 accepted the scale 3e38")
	}
}

// TestBFP8Hand: a block with max 3.0 has e = 2 (3 = 0.75 * 2^2), so codes
// are g * 32; a worker with e = 0 aligned to E = 2 shifts right by 2.
func TestBFP8Hand(t *testing.T) {
	g := make([]float32, 65)
	g[0], g[1], g[2] = 3.0, -1.0, 0.0078125 // 0.0078125 * 32 = 0.25 -> 0
	g[64] = 0.5                             // block 1: e = 0, code 64
	mant := make([]int8, len(g))
	exp := make([]int8, 2)
	if err := EncodeBFP8(mant, exp, g); err != nil {
		t.Fatal(err)
	}
	if exp[0] != 2 || exp[1] != 0 || mant[0] != 96 || mant[1] != -32 || mant[2] != 0 || mant[64] != 64 {
		t.Fatalf("exp %v mant %v %v %v %v", exp, mant[0], mant[1], mant[2], mant[64])
	}
	// Worker 2: block exponent 0, codes 6, -6, 7: shift by 2 with
	// round-to-nearest ties up: (6+2)>>2 = 2, (-6+2)>>2 = -1, (7+2)>>2 = 2.
	m2 := make([]int8, 65)
	m2[0], m2[1], m2[2] = 6, -6, 7
	sum := make([]int16, 65)
	e := make([]int8, 2)
	SumBFP8(sum, e, [][]int8{mant, m2}, [][]int8{exp, {0, 0}})
	if e[0] != 2 || sum[0] != 98 || sum[1] != -33 || sum[2] != 2 || sum[64] != 64 {
		t.Fatalf("E %v sums %v %v %v %v", e, sum[0], sum[1], sum[2], sum[64])
	}
	out := make([]float32, 65)
	DecodeBFP8(out, sum, e, 2)
	if out[0] != 98.0/32/2 || out[64] != 0.25 {
		t.Errorf("decoded %v %v", out[0], out[64])
	}
}

func TestBFP8ExponentClamp(t *testing.T) {
	g := []float32{math.MaxFloat32, 1e-45}
	for _, c := range []struct {
		v float32
		e int8
	}{{math.MaxFloat32, BFPMaxExp}, {1e-45, BFPMinExp}, {0, BFPMinExp}, {1, 1}, {0.999, 0}} {
		mant := make([]int8, 1)
		exp := make([]int8, 1)
		if err := EncodeBFP8(mant, exp, []float32{c.v}); err != nil {
			t.Fatal(err)
		}
		if exp[0] != c.e {
			t.Errorf("exponent of %v = %d, want %d", c.v, exp[0], c.e)
		}
	}
	_ = g
}

func TestFixedAgainstRef(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 30))
	for _, w := range []int{1, 2, 3, 8, 17, 259} {
		for _, n := range []int{0, 1, 31, 63, 64, 65, 130, 4097} {
			g := randFixed(r, w, n)
			var m float32
			codes := make([][]int8, w)
			mants := make([][]int8, w)
			exps := make([][]int8, w)
			for k := range g {
				mk, err := MaxAbs(g[k])
				if err != nil {
					t.Fatal(err)
				}
				m = max(m, mk)
			}
			s := Int8Scale(m)
			for k := range g {
				codes[k] = make([]int8, n)
				if err := EncodeInt8(codes[k], g[k], s); err != nil {
					t.Fatal(err)
				}
				if want := RefEncodeInt8(g[k], s); !slices.Equal(codes[k], want) {
					t.Fatalf("W=%d n=%d: EncodeInt8 differs from RefEncodeInt8", w, n)
				}
				mants[k] = make([]int8, n)
				exps[k] = make([]int8, BFPBlocks(n))
				if err := EncodeBFP8(mants[k], exps[k], g[k]); err != nil {
					t.Fatal(err)
				}
				wm, we := RefEncodeBFP8(g[k])
				if !slices.Equal(mants[k], wm) || !slices.Equal(exps[k], we) {
					t.Fatalf("W=%d n=%d: EncodeBFP8 differs from RefEncodeBFP8", w, n)
				}
			}
			checkSums(t, w, n, s, codes, mants, exps)
		}
	}
}

func checkSums(t *testing.T, w, n int, s float32, codes, mants, exps [][]int8) {
	t.Helper()
	sum := make([]int16, n)
	SumInt8(sum, codes)
	if want := RefSumInt8(codes); !slices.Equal(sum, want) {
		t.Fatalf("W=%d n=%d: SumInt8 differs from RefSumInt8", w, n)
	}
	mean := make([]float32, n)
	DecodeInt8(mean, sum, s, w)
	if want := RefDecodeInt8(sum, s, w); !slices.Equal(mean, want) {
		t.Fatalf("W=%d n=%d: DecodeInt8 differs from RefDecodeInt8", w, n)
	}
	bs := make([]int16, n)
	be := make([]int8, BFPBlocks(n))
	SumBFP8(bs, be, mants, exps)
	ws, we := RefSumBFP8(mants, exps, n)
	if !slices.Equal(bs, ws) || !slices.Equal(be, we) {
		t.Fatalf("W=%d n=%d: SumBFP8 differs from RefSumBFP8", w, n)
	}
	DecodeBFP8(mean, bs, be, w)
	if want := RefDecodeBFP8(bs, be, w); !slices.Equal(mean, want) {
		t.Fatalf("W=%d n=%d: DecodeBFP8 differs from RefDecodeBFP8", w, n)
	}
}

// TestFixedError bounds the round trip against the true mean: Int8 within
// half a step (s/2) per worker; BFP8 within half a step of each worker's
// block plus the alignment rounding at the largest exponent.
func TestFixedError(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 50))
	const w, n = 4, 256
	g := randFixed(r, w, n)
	var m float32
	for k := range g {
		mk, _ := MaxAbs(g[k])
		m = max(m, mk)
	}
	s := Int8Scale(m)
	codes := make([][]int8, w)
	mants, exps := make([][]int8, w), make([][]int8, w)
	for k := range g {
		codes[k] = RefEncodeInt8(g[k], s)
		mants[k], exps[k] = RefEncodeBFP8(g[k])
	}
	isum, bsum := make([]int16, n), make([]int16, n)
	be := make([]int8, BFPBlocks(n))
	SumInt8(isum, codes)
	SumBFP8(bsum, be, mants, exps)
	im, bm := make([]float32, n), make([]float32, n)
	DecodeInt8(im, isum, s, w)
	DecodeBFP8(bm, bsum, be, w)
	for i := range n {
		var mean float64
		for k := range g {
			mean += float64(g[k][i])
		}
		mean /= w
		if d := math.Abs(float64(im[i]) - mean); d > float64(s)*0.5001+1e-30 {
			t.Errorf("int8 element %d: error %g over s/2 = %g", i, d, s/2)
		}
		step := math.Ldexp(1, int(be[i/BFPBlock])-7)
		if d := math.Abs(float64(bm[i]) - mean); d > step*1.0001 {
			t.Errorf("bfp8 element %d: error %g over one step %g", i, d, step)
		}
	}
}

func TestFixedNonFinite(t *testing.T) {
	g := []float32{1, 2, float32(math.Inf(-1)), 3}
	var nf *NonFiniteError
	if _, err := MaxAbs(g); !errors.As(err, &nf) || nf.Index != 2 {
		t.Errorf("MaxAbs: %v", err)
	}
	if err := EncodeInt8(make([]int8, 4), g, 1); !errors.As(err, &nf) || nf.Index != 2 {
		t.Errorf("EncodeInt8: %v", err)
	}
	g[2] = float32(math.NaN())
	if err := EncodeBFP8(make([]int8, 4), make([]int8, 1), g); !errors.As(err, &nf) || nf.Index != 2 {
		t.Errorf("EncodeBFP8: %v", err)
	}
	// In a later block and past a finite prefix, both encoders name the
	// flattened index; with scale 0 Int8 still refuses it.
	long := make([]float32, 3*BFPBlock)
	long[2*BFPBlock+5] = float32(math.Inf(1))
	if err := EncodeBFP8(make([]int8, len(long)), make([]int8, 3), long); !errors.As(err, &nf) || nf.Index != 2*BFPBlock+5 {
		t.Errorf("EncodeBFP8, third block: %v", err)
	}
	for _, s := range []float32{0, 1} {
		if err := EncodeInt8(make([]int8, len(long)), long, s); !errors.As(err, &nf) || nf.Index != 2*BFPBlock+5 {
			t.Errorf("EncodeInt8 scale %v: %v", s, err)
		}
	}
	for _, s := range []float32{-1, float32(math.NaN()), float32(math.Inf(1))} {
		if err := EncodeInt8(make([]int8, 1), []float32{1}, s); err == nil {
			t.Errorf("EncodeInt8 accepted scale %v", s)
		}
	}
}

func TestInt16Lanes(t *testing.T) {
	v := []int16{0, 1, -1, SumMax, SumMin, 258}
	b := make([]byte, 2*len(v))
	PutInt16s(b, v)
	if b[2] != 1 || b[3] != 0 || b[4] != 0xff || b[5] != 0xff || b[8] != 0x00 || b[9] != 0x80 {
		t.Fatalf("little-endian bytes %x", b)
	}
	got := make([]int16, len(v))
	Int16s(got, b)
	if !slices.Equal(got, v) {
		t.Errorf("Int16s(PutInt16s(v)) = %v", got)
	}
}

// FuzzFixed checks the kernels against the reference loops on arbitrary
// bit patterns (finite ones; non-finite must be reported, not encoded).
func FuzzFixed(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf}, uint8(2))
	f.Add(make([]byte, 520), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, wb uint8) {
		w := int(wb%9) + 1
		n := len(raw) / 4 / w
		g := make([][]float32, w)
		for k := range g {
			g[k] = make([]float32, n)
			for i := range g[k] {
				o := 4 * (k*n + i)
				g[k][i] = math.Float32frombits(uint32(raw[o]) | uint32(raw[o+1])<<8 | uint32(raw[o+2])<<16 | uint32(raw[o+3])<<24)
			}
		}
		var m float32
		for k := range g {
			mk, err := MaxAbs(g[k])
			if err != nil {
				if CheckFinite(g[k]) == nil {
					t.Fatalf("MaxAbs error on finite input: %v", err)
				}
				return
			}
			m = max(m, mk)
		}
		s := Int8Scale(m)
		codes, mants, exps := make([][]int8, w), make([][]int8, w), make([][]int8, w)
		for k := range g {
			codes[k] = make([]int8, n)
			if err := EncodeInt8(codes[k], g[k], s); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(codes[k], RefEncodeInt8(g[k], s)) {
				t.Fatal("EncodeInt8 differs from RefEncodeInt8")
			}
			mants[k], exps[k] = make([]int8, n), make([]int8, BFPBlocks(n))
			if err := EncodeBFP8(mants[k], exps[k], g[k]); err != nil {
				t.Fatal(err)
			}
			wm, we := RefEncodeBFP8(g[k])
			if !slices.Equal(mants[k], wm) || !slices.Equal(exps[k], we) {
				t.Fatal("EncodeBFP8 differs from RefEncodeBFP8")
			}
		}
		checkSums(t, w, n, s, codes, mants, exps)
	})
}

// BenchmarkEncodeFixed measures the conservative formats' encoders on
// 256 Ki elements (1 MiB of float32) of one worker.
func BenchmarkEncodeFixed(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 70))
	g := randFixed(r, 1, 1<<18)[0]
	codes := make([]int8, len(g))
	exps := make([]int8, BFPBlocks(len(g)))
	m, _ := MaxAbs(g)
	s := Int8Scale(m)
	b.Run("int8", func(b *testing.B) {
		b.SetBytes(int64(4 * len(g)))
		for b.Loop() {
			if err := EncodeInt8(codes, g, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bfp8", func(b *testing.B) {
		b.SetBytes(int64(4 * len(g)))
		for b.Loop() {
			if err := EncodeBFP8(codes, exps, g); err != nil {
				b.Fatal(err)
			}
		}
	})
}
