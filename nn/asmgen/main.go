// Command asmgen generates nn's amd64 kernels for the passes over
// activations (BatchNorm's statistics and normalisation, ReLU, the
// residual sum) with avo.
//
// It lives in its own module so that avo stays out of the nfabric module's
// dependencies. nn/kernels_amd64.go runs it through go:generate:
//
//	cd nn && go generate
//
// which rewrites nn/kernels_amd64.s and nn/kernels_amd64_stubs.go; CI
// regenerates them and fails when the committed files differ.
//
// Every kernel performs, on each element, the rounded operations of its
// reference loop in nn/kernels.go in the same order (no fused
// multiply-adds), so it gives the same bits. The float64 sums keep the
// reference's four accumulators (elements j mod 4) as the four lanes of
// one YMM register per plane, and run four planes at once so that the
// additions of one plane do not wait on each other; AVX2 is enough for
// that, and the elementwise passes (memory-bound) use 8-lane AVX2 too.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!noasm") // go:build amd64 && !noasm
	reduce(sumKind)
	reduce(sqDevKind)
	reduce(sumDotKind)
	normalize()
	normalizeRelu(false)
	normalizeRelu(true)
	bnBackward()
	relu()
	reluBackward()
	add()
	pad()
	pad512()
	padSmall512()
	col2imS2()
	Generate()
}

// addr is the stack address of a parameter.
func addr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

type kind int

const (
	sumKind kind = iota
	sqDevKind
	sumDotKind
)

// reduce writes one of the per-plane float64 reductions over planes
// planes of n floats, stride floats apart:
//
//	planeSums64AVX2:   out[i] = Σ x
//	planeSqDevs64AVX2: out[i] = Σ (x-mean)²
//	planeSumDots64AVX2: sa[i] = Σ a, sab[i] = Σ a·b
//
// each accumulated like nn's sum64: lanes j mod 4, the n mod 4 last
// elements added to lane 0 in order, then (l0+l1)+(l2+l3).
func reduce(k kind) {
	var name, sig string
	switch k {
	case sumKind:
		name, sig = "planeSums64AVX2", "func(x *float32, stride, planes, n int, out *float64)"
	case sqDevKind:
		name, sig = "planeSqDevs64AVX2", "func(x *float32, stride, planes, n int, mean float64, out *float64)"
	case sumDotKind:
		name, sig = "planeSumDots64AVX2", "func(a, b *float32, stride, planes, n int, sa, sab *float64)"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	switch k {
	case sumKind:
		Doc(name+" sets out[i] = Σ_{j<n} x[i*stride+j] for i < planes, in float64",
			"accumulated as sum64 does (lanes j mod 4, tail into lane 0, (l0+l1)+(l2+l3)).")
	case sqDevKind:
		Doc(name+" sets out[i] = Σ_{j<n} (x[i*stride+j]-mean)² for i < planes, in",
			"float64 accumulated as sqDev64 does.")
	case sumDotKind:
		Doc(name+" sets sa[i] = Σ_{j<n} a[i*stride+j] and sab[i] = Σ a[..]·b[..]",
			"(same index) for i < planes, in float64 accumulated as sumDot64 does.")
	}
	var xa, xb, out, out2 Register
	if k == sumDotKind {
		xa = Load(Param("a"), GP64())
		xb = Load(Param("b"), GP64())
		out = Load(Param("sa"), GP64())
		out2 = Load(Param("sab"), GP64())
	} else {
		xa = Load(Param("x"), GP64())
		out = Load(Param("out"), GP64())
	}
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride) // bytes
	planes := Load(Param("planes"), GP64())
	n := Load(Param("n"), GP64())
	n4 := GP64()
	MOVQ(n, n4)
	ANDQ(I8(-4), n4)
	var mean VecVirtual
	if k == sqDevKind {
		mean = YMM()
		VBROADCASTSD(addr("mean"), mean)
	}
	groups := []int{4, 1}
	if k == sumDotKind {
		groups = []int{2, 1} // two accumulators a plane: fewer planes fit
	}
	for _, g := range groups {
		top := fmt.Sprintf("%s_g%d", name, g)
		next := fmt.Sprintf("%s_g%d_end", name, g)
		Label(top)
		CMPQ(planes, U8(g))
		JL(LabelRef(next))
		// Pointers to the g planes of a (and b).
		pa := make([]Register, g)
		pb := make([]Register, g)
		for i := range g {
			if i == 0 {
				pa[i] = xa
			} else {
				pa[i] = GP64()
				LEAQ(Mem{Base: pa[i-1], Index: stride, Scale: 1}, pa[i])
			}
			if k == sumDotKind {
				if i == 0 {
					pb[i] = xb
				} else {
					pb[i] = GP64()
					LEAQ(Mem{Base: pb[i-1], Index: stride, Scale: 1}, pb[i])
				}
			}
		}
		acc := make([]VecVirtual, g)
		acc2 := make([]VecVirtual, g)
		for i := range g {
			acc[i] = YMM()
			VXORPD(acc[i], acc[i], acc[i])
			if k == sumDotKind {
				acc2[i] = YMM()
				VXORPD(acc2[i], acc2[i], acc2[i])
			}
		}
		j := GP64()
		XORQ(j, j)
		loop := top + "_loop"
		tail := top + "_tail"
		Label(loop)
		CMPQ(j, n4)
		JGE(LabelRef(tail))
		for i := range g {
			t := YMM()
			VCVTPS2PD(Mem{Base: pa[i], Index: j, Scale: 4}, t)
			switch k {
			case sumKind:
				VADDPD(t, acc[i], acc[i])
			case sqDevKind:
				VSUBPD(mean, t, t) // t - mean
				VMULPD(t, t, t)
				VADDPD(t, acc[i], acc[i])
			case sumDotKind:
				u := YMM()
				VCVTPS2PD(Mem{Base: pb[i], Index: j, Scale: 4}, u)
				VADDPD(t, acc[i], acc[i])
				VMULPD(u, t, u) // a·b
				VADDPD(u, acc2[i], acc2[i])
			}
		}
		ADDQ(U8(4), j)
		JMP(LabelRef(loop))
		Label(tail)
		for i := range g {
			hi := XMM()
			VEXTRACTF128(U8(1), acc[i], hi)
			lo := acc[i].AsX()
			var hi2, lo2 Op
			if k == sumDotKind {
				hi2 = XMM()
				VEXTRACTF128(U8(1), acc2[i], hi2)
				lo2 = acc2[i].AsX()
			}
			jj := j
			MOVQ(n4, jj)
			tl := fmt.Sprintf("%s_tail%d", top, i)
			td := fmt.Sprintf("%s_tail%d_done", top, i)
			Label(tl)
			CMPQ(jj, n)
			JGE(LabelRef(td))
			t := XMM()
			VCVTSS2SD(Mem{Base: pa[i], Index: jj, Scale: 4}, t, t)
			switch k {
			case sumKind:
				VADDSD(t, lo, lo)
			case sqDevKind:
				VSUBSD(mean.AsX(), t, t)
				VMULSD(t, t, t)
				VADDSD(t, lo, lo)
			case sumDotKind:
				u := XMM()
				VCVTSS2SD(Mem{Base: pb[i], Index: jj, Scale: 4}, u, u)
				VADDSD(t, lo, lo)
				VMULSD(u, t, u)
				VADDSD(u, lo2, lo2)
			}
			INCQ(jj)
			JMP(LabelRef(tl))
			Label(td)
			store := func(lo, hi Op, dst Mem) {
				a, b := XMM(), XMM()
				VPERMILPD(U8(1), lo, a) // l1
				VADDSD(a, lo, a)        // l0+l1
				VPERMILPD(U8(1), hi, b) // l3
				VADDSD(b, hi, b)        // l2+l3
				VADDSD(b, a, a)
				VMOVSD(a, dst)
			}
			store(lo, hi, Mem{Base: out, Disp: 8 * i})
			if k == sumDotKind {
				store(lo2, hi2, Mem{Base: out2, Disp: 8 * i})
			}
		}
		for s := range g {
			_ = s
			ADDQ(stride, xa)
			if k == sumDotKind {
				ADDQ(stride, xb)
			}
		}
		ADDQ(U8(8*g), out)
		if k == sumDotKind {
			ADDQ(U8(8*g), out2)
		}
		SUBQ(U8(g), planes)
		JMP(LabelRef(top))
		Label(next)
	}
	VZEROUPPER()
	RET()
}

// elementwise writes a kernel that runs body over planes planes of n
// floats, stride floats apart (contiguous kernels pass planes = 1): eight
// floats at a time, then one at a time. ptrs are the parameters that point
// at the planes' first floats; body gets their plane base registers, the
// element index and whether it works on 8 floats (YMM) or 1 (XMM).
func elementwise(name, sig string, ptrs []string, strided bool, doc []string, setup func(), body func(p []Register, j Register, wide bool)) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(doc...)
	p := make([]Register, len(ptrs))
	for i, s := range ptrs {
		p[i] = Load(Param(s), GP64())
	}
	n := Load(Param("n"), GP64())
	var stride, planes Register
	if strided {
		stride = Load(Param("stride"), GP64())
		SHLQ(U8(2), stride)
		planes = Load(Param("planes"), GP64())
	}
	setup()
	n8 := GP64()
	MOVQ(n, n8)
	ANDQ(I8(-8), n8)
	if strided {
		Label(name + "_plane")
		TESTQ(planes, planes)
		JZ(LabelRef(name + "_done"))
	}
	j := GP64()
	XORQ(j, j)
	Label(name + "_loop8")
	CMPQ(j, n8)
	JGE(LabelRef(name + "_loop1"))
	body(p, j, true)
	ADDQ(U8(8), j)
	JMP(LabelRef(name + "_loop8"))
	Label(name + "_loop1")
	CMPQ(j, n)
	JGE(LabelRef(name + "_next"))
	body(p, j, false)
	INCQ(j)
	JMP(LabelRef(name + "_loop1"))
	Label(name + "_next")
	if strided {
		for _, r := range p {
			ADDQ(stride, r)
		}
		DECQ(planes)
		JMP(LabelRef(name + "_plane"))
	}
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// vload and vstore move 8 floats (wide) or 1.
func vload(m Mem, wide bool) VecVirtual {
	if wide {
		v := YMM()
		VMOVUPS(m, v)
		return v
	}
	v := XMM()
	VMOVSS(m, v)
	return v
}

func vstore(v VecVirtual, m Mem, wide bool) {
	if wide {
		VMOVUPS(v, m)
	} else {
		VMOVSS(v.AsX(), m)
	}
}

func at(p Register, j Register) Mem { return Mem{Base: p, Index: j, Scale: 4} }

// view is the register a scalar-or-wide operation uses.
func view(v VecVirtual, wide bool) Op {
	if wide {
		return v
	}
	return v.AsX()
}

func op(wide bool, ps, ss func(a, b, c Op)) func(a, b, c Op) {
	if wide {
		return ps
	}
	return ss
}

func sub(wide bool) func(a, b, c Op) {
	return op(wide, func(a, b, c Op) { VSUBPS(a, b, c) }, func(a, b, c Op) { VSUBSS(a, b, c) })
}
func mul(wide bool) func(a, b, c Op) {
	return op(wide, func(a, b, c Op) { VMULPS(a, b, c) }, func(a, b, c Op) { VMULSS(a, b, c) })
}
func addf(wide bool) func(a, b, c Op) {
	return op(wide, func(a, b, c Op) { VADDPS(a, b, c) }, func(a, b, c Op) { VADDSS(a, b, c) })
}
func maxf(wide bool) func(a, b, c Op) {
	return op(wide, func(a, b, c Op) { VMAXPS(a, b, c) }, func(a, b, c Op) { VMAXSS(a, b, c) })
}

func broadcast(name string) VecVirtual {
	v := YMM()
	VBROADCASTSS(addr(name), v)
	return v
}

// normalize writes bnNormalizeAVX2: h = (x-mu)·inv, xh = h, y = gamma·h + beta.
func normalize() {
	var mu, is, g, b VecVirtual
	elementwise("bnNormalizeAVX2", "func(x, xh, y *float32, stride, planes, n int, mu, inv, gamma, beta float32)",
		[]string{"x", "xh", "y"}, true,
		[]string{"bnNormalizeAVX2 sets h = (x-mu)*inv, xh = h and y = gamma*h + beta (each",
			"operation rounded) over planes planes of n floats, stride floats apart."},
		func() { mu, is, g, b = broadcast("mu"), broadcast("inv"), broadcast("gamma"), broadcast("beta") },
		func(p []Register, j Register, w bool) {
			v := vload(at(p[0], j), w)
			sub(w)(view(mu, w), view(v, w), view(v, w))
			mul(w)(view(is, w), view(v, w), view(v, w))
			vstore(v, at(p[1], j), w)
			mul(w)(view(g, w), view(v, w), view(v, w))
			addf(w)(view(b, w), view(v, w), view(v, w))
			vstore(v, at(p[2], j), w)
		})
}

// normalizeRelu writes bnNormalizeReluAVX2: h = (x-mu)·inv, xh = h,
// y = max(gamma·h + beta, 0), or with sum set bnNormalizeAddReluAVX2:
// y = max((gamma·h + beta) + s, 0) (BatchNorm followed by the ReLU, or by
// a residual block's sum and ReLU, in one pass).
func normalizeRelu(sum bool) {
	var mu, is, g, b, zero VecVirtual
	name, sig := "bnNormalizeReluAVX2", "func(x, xh, y *float32, stride, planes, n int, mu, inv, gamma, beta float32)"
	ptrs := []string{"x", "xh", "y"}
	doc := []string{"bnNormalizeReluAVX2 sets h = (x-mu)*inv, xh = h and y = max(gamma*h + beta, 0)",
		"(each operation rounded, max as Go's) over planes planes of n floats,",
		"stride floats apart."}
	if sum {
		name, sig = "bnNormalizeAddReluAVX2", "func(x, xh, s, y *float32, stride, planes, n int, mu, inv, gamma, beta float32)"
		ptrs = []string{"x", "xh", "y", "s"}
		doc = []string{"bnNormalizeAddReluAVX2 sets h = (x-mu)*inv, xh = h and",
			"y = max((gamma*h + beta) + s, 0) (each operation rounded, max as Go's)",
			"over planes planes of n floats, stride floats apart."}
	}
	elementwise(name, sig, ptrs, true, doc,
		func() {
			mu, is, g, b = broadcast("mu"), broadcast("inv"), broadcast("gamma"), broadcast("beta")
			zero = negZeroVec()
		},
		func(p []Register, j Register, w bool) {
			v := vload(at(p[0], j), w)
			sub(w)(view(mu, w), view(v, w), view(v, w))
			mul(w)(view(is, w), view(v, w), view(v, w))
			vstore(v, at(p[1], j), w)
			mul(w)(view(g, w), view(v, w), view(v, w))
			addf(w)(view(b, w), view(v, w), view(v, w))
			if sum {
				u := vload(at(p[3], j), w)
				addf(w)(view(u, w), view(v, w), view(v, w))
			}
			reluOf(zero, v, w)
			vstore(v, at(p[2], j), w)
		})
}

// bnBackward writes bnBackwardAVX2: dx = k·((dy-mdy) - xh·mdyx).
func bnBackward() {
	var k, mdy, mdyx VecVirtual
	elementwise("bnBackwardAVX2", "func(dy, xh, dx *float32, stride, planes, n int, k, mdy, mdyx float32)",
		[]string{"dy", "xh", "dx"}, true,
		[]string{"bnBackwardAVX2 sets dx = k*((dy-mdy) - xh*mdyx) (each operation",
			"rounded) over planes planes of n floats, stride floats apart."},
		func() { k, mdy, mdyx = broadcast("k"), broadcast("mdy"), broadcast("mdyx") },
		func(p []Register, j Register, w bool) {
			d := vload(at(p[0], j), w)
			h := vload(at(p[1], j), w)
			sub(w)(view(mdy, w), view(d, w), view(d, w))
			mul(w)(view(mdyx, w), view(h, w), view(h, w))
			sub(w)(view(h, w), view(d, w), view(d, w))
			mul(w)(view(k, w), view(d, w), view(d, w))
			vstore(d, at(p[2], j), w)
		})
}

// reluOf sets v = max(v, 0) with the instructions Go compiles max to
// (max(x, y) = -min(-x, -y), min as m1 = MINPS(a, b), m2 = MINPS(m1, a),
// m1|m2), so that -0 gives +0 and a NaN comes out with a clear sign bit
// exactly as from Go. MINPS returns its second source for a NaN and for
// two zeros.
func reluOf(negZero, v VecVirtual, w bool) {
	a, m1 := YMM(), YMM()
	if w {
		VXORPS(negZero, v, a)  // a = -x
		VMINPS(negZero, a, m1) // m1 = a < -0 ? a : -0
		VMINPS(a, m1, v)       // m2 = m1 < a ? m1 : a
		VORPS(m1, v, v)        // m1 | m2
		VXORPS(negZero, v, v)  // negated back
		return
	}
	nz, vx, ax, mx := negZero.AsX(), v.AsX(), a.AsX(), m1.AsX()
	VXORPS(nz, vx, ax)
	VMINSS(nz, ax, mx)
	VMINSS(ax, mx, vx)
	VORPS(mx, vx, vx)
	VXORPS(nz, vx, vx)
}

// negZeroVec returns -0 in every lane (the sign bit).
func negZeroVec() VecVirtual {
	z := YMM()
	bits := GP32()
	MOVL(U32(0x80000000), bits)
	MOVD(bits, z.AsX())
	VPBROADCASTD(z.AsX(), z)
	return z
}

func zeroVec() VecVirtual {
	z := YMM()
	VXORPS(z, z, z)
	return z
}

func relu() {
	var zero VecVirtual
	elementwise("reluAVX2", "func(x, y *float32, n int)", []string{"x", "y"}, false,
		[]string{"reluAVX2 sets y = max(x, 0) as Go's max does (-0 gives +0, a NaN",
			"comes out with a clear sign bit)."},
		func() { zero = negZeroVec() },
		func(p []Register, j Register, w bool) {
			v := vload(at(p[0], j), w)
			reluOf(zero, v, w)
			vstore(v, at(p[1], j), w)
		})
}

func add() {
	elementwise("addAVX2", "func(a, b, y *float32, n int)", []string{"a", "b", "y"}, false,
		[]string{"addAVX2 sets y = a + b."},
		func() {},
		func(p []Register, j Register, w bool) {
			v := vload(at(p[0], j), w)
			u := vload(at(p[1], j), w)
			addf(w)(view(u, w), view(v, w), view(v, w))
			vstore(v, at(p[2], j), w)
		})
}

// reluBackward writes reluBackwardAVX2: dx = dy & (-int32(bits(y)) >> 31),
// all ones exactly when y's bits are a positive int32 (y > 0 or a NaN
// with a clear sign bit).
func reluBackward() {
	var zero VecVirtual
	elementwise("reluBackwardAVX2", "func(dy, y, dx *float32, n int)", []string{"dy", "y", "dx"}, false,
		[]string{"reluBackwardAVX2 sets dx = dy where y's bits are a positive int32 (y > 0,",
			"or a NaN with a clear sign bit) and +0 elsewhere."},
		func() { zero = zeroVec() },
		func(p []Register, j Register, w bool) {
			y := vload(at(p[1], j), w)
			d := vload(at(p[0], j), w)
			if w {
				VPSUBD(y, zero, y) // -y
				VPSRAD(U8(31), y, y)
				VPAND(d, y, y)
			} else {
				yx, zx, dx := y.AsX(), zero.AsX(), d.AsX()
				VPSUBD(yx, zx, yx)
				VPSRAD(U8(31), yx, yx)
				VPAND(dx, yx, yx)
			}
			vstore(y, at(p[2], j), w)
		})
}

// fill writes a loop that stores zeros (src nil) or copies from src into
// the n floats at dst, eight at a time and then one at a time; dst and
// src advance past them. label makes its labels unique.
func fill(label string, dst, src, n Register, zero VecVirtual) {
	c := GP64()
	MOVQ(n, c)
	Label(label + "_8")
	CMPQ(c, U8(8))
	JL(LabelRef(label + "_1"))
	if src == nil {
		VMOVUPS(zero, Mem{Base: dst})
	} else {
		v := YMM()
		VMOVUPS(Mem{Base: src}, v)
		VMOVUPS(v, Mem{Base: dst})
		ADDQ(U8(32), src)
	}
	ADDQ(U8(32), dst)
	SUBQ(U8(8), c)
	JMP(LabelRef(label + "_8"))
	Label(label + "_1")
	TESTQ(c, c)
	JZ(LabelRef(label + "_done"))
	if src == nil {
		VMOVSS(zero.AsX(), Mem{Base: dst})
	} else {
		v := XMM()
		VMOVSS(Mem{Base: src}, v)
		VMOVSS(v, Mem{Base: dst})
		ADDQ(U8(4), src)
	}
	ADDQ(U8(4), dst)
	DECQ(c)
	JMP(LabelRef(label + "_1"))
	Label(label + "_done")
}

// pad writes padPlanesAVX2, padPlanes' loop: each h×w plane of src
// copied into a (h+2p)×(w+2p) plane of dst with a zero border p wide,
// dst written in order (top border, then each row and the 2p zeros after
// it, then what is left of the plane).
func pad() {
	TEXT("padPlanesAVX2", NOSPLIT, "func(dst, src *float32, planes, h, w, p int)")
	Pragma("noescape")
	Doc("padPlanesAVX2 copies the h×w planes of src into dst as (h+2p)×(w+2p)",
		"planes with a zero border p wide.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	planes := Load(Param("planes"), GP64())
	h := Load(Param("h"), GP64())
	w := Load(Param("w"), GP64())
	p := Load(Param("p"), GP64())
	zero := YMM()
	VXORPS(zero, zero, zero)
	wp := GP64()
	LEAQ(Mem{Base: w, Index: p, Scale: 2}, wp) // w + 2p
	top := GP64()                              // p·wp + p
	MOVQ(p, top)
	IMULQ(wp, top)
	ADDQ(p, top)
	p2 := GP64()
	LEAQ(Mem{Base: p, Index: p, Scale: 1}, p2)
	bottom := GP64() // p·wp - p: the bottom border less the p floats after the last row
	MOVQ(p, bottom)
	IMULQ(wp, bottom)
	SUBQ(p, bottom)
	Label("pad_plane")
	TESTQ(planes, planes)
	JZ(LabelRef("pad_done"))
	fill("pad_top", dst, nil, top, zero)
	r := GP64()
	MOVQ(h, r)
	Label("pad_row")
	TESTQ(r, r)
	JZ(LabelRef("pad_rows_done"))
	fill("pad_copy", dst, src, w, zero)
	fill("pad_gap", dst, nil, p2, zero)
	DECQ(r)
	JMP(LabelRef("pad_row"))
	Label("pad_rows_done")
	fill("pad_bottom", dst, nil, bottom, zero)
	DECQ(planes)
	JMP(LabelRef("pad_plane"))
	Label("pad_done")
	VZEROUPPER()
	RET()
}

// pad512 writes padPlanesAVX512, padPlanes with 16-lane masked moves: each
// padded row is written in chunks of 16 columns, chunk c with one
// zero-masked load of the source lanes masks[2c] (from the source row,
// offset so that lane j is padded column 16c+j) and one store of the lanes
// masks[2c+1] (the columns inside the row). Rows of the top and bottom
// border store zeros. A masked-off lane's address is never accessed.
func pad512() {
	TEXT("padPlanesAVX512", NOSPLIT, "func(dst, src *float32, planes, h, w, p int, masks *int32, chunks int)")
	Pragma("noescape")
	Doc("padPlanesAVX512 copies the h×w planes of src into dst as (h+2p)×(w+2p)",
		"planes with a zero border p wide; masks holds, for each 16-column chunk",
		"of a padded row, its source-lane and store-lane masks.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	planes := Load(Param("planes"), GP64())
	h := Load(Param("h"), GP64())
	w := Load(Param("w"), GP64())
	p := Load(Param("p"), GP64())
	masks := Load(Param("masks"), GP64())
	chunks := Load(Param("chunks"), GP64())
	wpB := GP64() // padded row in bytes
	LEAQ(Mem{Base: w, Index: p, Scale: 2}, wpB)
	SHLQ(U8(2), wpB)
	SHLQ(U8(2), w) // source row in bytes
	pB := GP64()
	MOVQ(p, pB)
	SHLQ(U8(2), pB)
	zero := ZMM()
	VPXORD(zero, zero, zero)
	// zeroRows stores count rows of zeros at dst, advancing it.
	zeroRows := func(label string, count Register) {
		r := GP64()
		MOVQ(count, r)
		Label(label)
		TESTQ(r, r)
		JZ(LabelRef(label + "_done"))
		c, m, d := GP64(), GP64(), GP64()
		MOVQ(chunks, c)
		MOVQ(masks, m)
		MOVQ(dst, d)
		Label(label + "_chunk")
		k := K()
		KMOVW(Mem{Base: m, Disp: 4}, k)
		VMOVUPS(zero, k, Mem{Base: d})
		ADDQ(U8(8), m)
		ADDQ(U8(64), d)
		DECQ(c)
		JNZ(LabelRef(label + "_chunk"))
		ADDQ(wpB, dst)
		DECQ(r)
		JMP(LabelRef(label))
		Label(label + "_done")
	}
	Label("pad512_plane")
	TESTQ(planes, planes)
	JZ(LabelRef("pad512_done"))
	zeroRows("pad512_top", p)
	r := GP64()
	MOVQ(h, r)
	Label("pad512_row")
	TESTQ(r, r)
	JZ(LabelRef("pad512_rows_done"))
	c, m, d, s := GP64(), GP64(), GP64(), GP64()
	MOVQ(chunks, c)
	MOVQ(masks, m)
	MOVQ(dst, d)
	MOVQ(src, s)
	SUBQ(pB, s) // lane j of chunk 0 is source column j-p
	Label("pad512_chunk")
	kl, ks := K(), K()
	KMOVW(Mem{Base: m}, kl)
	KMOVW(Mem{Base: m, Disp: 4}, ks)
	v := ZMM()
	VMOVUPS_Z(Mem{Base: s}, kl, v) // zeroing: lanes outside the source are 0
	VMOVUPS(v, ks, Mem{Base: d})
	ADDQ(U8(8), m)
	ADDQ(U8(64), d)
	ADDQ(U8(64), s)
	DECQ(c)
	JNZ(LabelRef("pad512_chunk"))
	ADDQ(wpB, dst)
	ADDQ(w, src)
	DECQ(r)
	JMP(LabelRef("pad512_row"))
	Label("pad512_rows_done")
	zeroRows("pad512_bottom", p)
	DECQ(planes)
	JMP(LabelRef("pad512_plane"))
	Label("pad512_done")
	VZEROUPPER()
	RET()
}

// padSmall512 writes padSmallAVX512, padPlanes for planes whose padded
// size (h+2p)×(w+2p) is at most 16 floats (a 2×2 plane padded by 1): each
// plane is one zero-masked expanding load of its n = h·w source floats
// into the lanes expand selects (the padded positions of the source, in
// order) and one store of the np = (h+2p)·(w+2p) lanes store selects, so
// the border is written as zeros with the plane. The expanding load reads
// only the n floats of the plane; no masked-off address is accessed.
func padSmall512() {
	TEXT("padSmallAVX512", NOSPLIT, "func(dst, src *float32, planes, n, np int, expand, store uint16)")
	Pragma("noescape")
	Doc("padSmallAVX512 copies planes of n floats from src into planes of np <= 16",
		"floats of dst, source float i to the lane of the i-th set bit of expand,",
		"the other lanes below np zero (store: the np low bits).")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	planes := Load(Param("planes"), GP64())
	n := Load(Param("n"), GP64())
	np := Load(Param("np"), GP64())
	SHLQ(U8(2), n)
	SHLQ(U8(2), np)
	ke, ks := K(), K()
	KMOVW(Load(Param("expand"), GP32()), ke)
	KMOVW(Load(Param("store"), GP32()), ks)
	Label("padsmall_plane")
	TESTQ(planes, planes)
	JZ(LabelRef("padsmall_done"))
	v := ZMM()
	VEXPANDPS_Z(Mem{Base: src}, ke, v)
	VMOVUPS(v, ks, Mem{Base: dst})
	ADDQ(n, src)
	ADDQ(np, dst)
	DECQ(planes)
	JMP(LabelRef("padsmall_plane"))
	Label("padsmall_done")
	VZEROUPPER()
	RET()
}

// col2imS2 writes col2imS2AVX512, the scatter-add of col2im at stride 2:
// for m < n and i < rows, the cnt source floats at src + m*sImg + i*sRow
// are added into every other float from dst + m*dImg + i*dRow,
// d[2t] += v[t], as full chunks of 8 (full of them) and a tail chunk
// (tail: its lanes' mask, 0 if none). A chunk is one expanding load of
// the source into the even lanes, one masked load of dst, one masked add
// (dst as the first operand, as the scalar d += v) and one masked store;
// the odd lanes and every masked-off address are never touched.
func col2imS2() {
	TEXT("col2imS2AVX512", NOSPLIT, "func(dst, src *float32, n, dImg, sImg, rows, dRow, sRow, full, tail int)")
	Pragma("noescape")
	Doc("col2imS2AVX512 sets d[2t] += v[t] for t < 8*full + popcount(tail) over the rows",
		"i < rows of the images m < n: d = dst + m*dImg + i*dRow, v = src + m*sImg + i*sRow",
		"(strides in floats); tail is the even-lane mask of the last, partial chunk.")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	dImg := Load(Param("dImg"), GP64())
	sImg := Load(Param("sImg"), GP64())
	rows := Load(Param("rows"), GP64())
	dRow := Load(Param("dRow"), GP64())
	sRow := Load(Param("sRow"), GP64())
	full := Load(Param("full"), GP64())
	for _, r := range []Register{dImg, sImg, dRow, sRow} {
		SHLQ(U8(2), r) // bytes
	}
	kf, kt := K(), K()
	k := GP32()
	MOVL(U32(0x5555), k)
	KMOVW(k, kf)
	tl := GP64()
	Load(Param("tail"), tl)
	KMOVW(tl.(GPVirtual).As32(), kt)
	chunk := func(k Register, d, s Register) {
		v, x := ZMM(), ZMM()
		VEXPANDPS_Z(Mem{Base: s}, k, v)
		VMOVUPS_Z(Mem{Base: d}, k, x)
		VADDPS(v, x, k, x) // x = x + v in the masked lanes
		VMOVUPS(x, k, Mem{Base: d})
	}
	// Rows outer, images inner: a row's 16-lane masked store would
	// overlap the next row's load when rows are under 16 floats apart (7×7
	// planes), stalling the load until the store commits; the images'
	// planes lie at least a plane apart.
	Label("c2i_row")
	TESTQ(rows, rows)
	JZ(LabelRef("c2i_done"))
	d1, s1, m := GP64(), GP64(), GP64()
	MOVQ(dst, d1)
	MOVQ(src, s1)
	MOVQ(n, m)
	Label("c2i_img")
	TESTQ(m, m)
	JZ(LabelRef("c2i_imgs_done"))
	d2, s2, c := GP64(), GP64(), GP64()
	MOVQ(d1, d2)
	MOVQ(s1, s2)
	MOVQ(full, c)
	Label("c2i_chunk")
	TESTQ(c, c)
	JZ(LabelRef("c2i_tail"))
	chunk(kf, d2, s2)
	ADDQ(U8(32), s2)
	ADDQ(U8(64), d2)
	DECQ(c)
	JMP(LabelRef("c2i_chunk"))
	Label("c2i_tail")
	KORTESTW(kt, kt)
	JZ(LabelRef("c2i_img_end"))
	chunk(kt, d2, s2)
	Label("c2i_img_end")
	ADDQ(dImg, d1)
	ADDQ(sImg, s1)
	DECQ(m)
	JMP(LabelRef("c2i_img"))
	Label("c2i_imgs_done")
	ADDQ(dRow, dst)
	ADDQ(sRow, src)
	DECQ(rows)
	JMP(LabelRef("c2i_row"))
	Label("c2i_done")
	VZEROUPPER()
	RET()
}
