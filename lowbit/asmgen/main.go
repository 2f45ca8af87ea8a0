// Command asmgen generates lowbit's amd64 AVX2 kernels with avo.
//
// It lives in its own module so that avo stays out of the nfabric module's
// dependencies. lowbit/kernels_amd64.go runs it through go:generate:
//
//	cd lowbit && go generate
//
// which rewrites lowbit/kernels_amd64.s and lowbit/kernels_amd64_stubs.go.
// Every kernel processes only whole blocks (64 floats or 32 bytes); the Go
// wrappers in kernels_amd64.go do the tails with the portable code, and
// the tests compare the result with the reference loops in ref.go.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!noasm") // go:build amd64 && !noasm
	encode("encodeSignsAVX2", false)
	encode("encodeGatesAVX2", true)
	packetLUT("packetLUTAVX2", false)
	packetLUT("packetLUTMaskAVX2", true)
	vote8Planes("vote8PlanesAVX2", false)
	vote8Planes("vote8PlanesMaskAVX2", true)
	Generate()
}

// encode writes one bit per float32 for len(g)&^63 floats of g:
// signs: bit = int32(x) > 0 (so +0, -0 and negatives give 0);
// gates: bit = int32(x & 0x7fffffff) > int32(tau).
// It returns the largest x & 0x7fffffff it saw; the caller reports a
// non-finite value when that is >= 0x7f800000 (exponent all ones), so the
// NaN/Inf check stays in the same pass.
func encode(name string, gates bool) {
	if gates {
		TEXT(name, NOSPLIT, "func(dst []byte, g []float32, tau uint32) uint32")
		Pragma("noescape")
		Doc(name+" writes bit j of dst = 1{|g[j]| > tau} (bitwise on the IEEE bits) for len(g)&^63 floats",
			"and returns the largest g[j]&0x7fffffff seen.")
	} else {
		TEXT(name, NOSPLIT, "func(dst []byte, g []float32) uint32")
		Pragma("noescape")
		Doc(name+" writes bit j of dst = 1{int32(bits(g[j])) > 0} for len(g)&^63 floats",
			"and returns the largest g[j]&0x7fffffff seen.")
	}
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("g").Base(), GP64())
	n := Load(Param("g").Len(), GP64())
	SHRQ(U8(6), n) // blocks of 64 floats

	absMask := YMM()
	tmp := GP32()
	MOVL(U32(0x7fffffff), tmp)
	x := XMM()
	MOVD(tmp, x)
	VPBROADCASTD(x, absMask)
	thr := YMM()
	if gates {
		t := Load(Param("tau"), GP32())
		tx := XMM()
		MOVD(t, tx)
		VPBROADCASTD(tx, thr)
	} else {
		VPXOR(thr, thr, thr)
	}
	perm := YMM()
	VMOVDQU(permDwords(), perm)
	acc := YMM()
	VPXOR(acc, acc, acc)

	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_loop")
	var words [2]GPVirtual
	for half := 0; half < 2; half++ {
		var c [4]VecVirtual
		for k := 0; k < 4; k++ {
			v := YMM()
			VMOVDQU(Mem{Base: src, Disp: 128*half + 32*k}, v)
			a := YMM()
			VPAND(v, absMask, a)
			VPMAXUD(a, acc, acc)
			c[k] = YMM()
			if gates {
				VPCMPGTD(thr, a, c[k]) // a > tau
			} else {
				VPCMPGTD(thr, v, c[k]) // int32(x) > 0
			}
		}
		// Saturating packs keep 0 and -1 and interleave 128-bit lanes;
		// VPERMD puts the 4-element groups back in element order.
		VPACKSSDW(c[1], c[0], c[0])
		VPACKSSDW(c[3], c[2], c[2])
		VPACKSSWB(c[2], c[0], c[0])
		VPERMD(c[0], perm, c[0])
		words[half] = GP64()
		VPMOVMSKB(c[0], words[half].As32())
	}
	SHLQ(U8(32), words[1])
	ORQ(words[1], words[0])
	MOVQ(words[0], Mem{Base: dst})
	ADDQ(U32(256), src)
	ADDQ(U32(8), dst)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_done")
	// Horizontal max of acc.
	hi := XMM()
	VEXTRACTI128(U8(1), acc, hi)
	lo := acc.AsX()
	VPMAXUD(hi, lo, lo)
	VPSHUFD(U8(0x4e), lo, hi)
	VPMAXUD(hi, lo, lo)
	VPSHUFD(U8(0xb1), lo, hi)
	VPMAXUD(hi, lo, lo)
	r := GP32()
	VMOVD(lo, r)
	VZEROUPPER()
	Store(r, ReturnIndex(0))
	RET()
}

var permData Mem
var permDone bool

// permDwords is the VPERMD index that undoes the lane interleave of
// VPACKSSDW + VPACKSSWB: dword i of the result is dword perm[i].
func permDwords() Mem {
	if !permDone {
		permData = GLOBL("permPack", RODATA|NOPTR)
		for i, v := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
			DATA(4*i, U32(v))
		}
		permDone = true
	}
	return permData
}

// packetLUT maps each byte of len(src)&^31 bytes of element-major packets
// through two nibble popcount tables and a result table:
//
//	c      = luts[0:16][b & 15] + luts[16:32][b >> 4]   (the masked sign count)
//	dst[i] = luts[32:48][c]                               (c must be <= 15)
//
// and, with mask, ANDs dst[i] with mask[i] (the positional gate).
func packetLUT(name string, masked bool) {
	if masked {
		TEXT(name, NOSPLIT, "func(dst, src []byte, luts *[48]byte, mask []byte)")
		Pragma("noescape")
		Doc(name + " is packetLUTAVX2 followed by dst[i] &= mask[i].")
	} else {
		TEXT(name, NOSPLIT, "func(dst, src []byte, luts *[48]byte)")
		Pragma("noescape")
		Doc(name + " writes dst[i] = luts[32+luts[src[i]&15]+luts[16+src[i]>>4]] for len(src)&^31 bytes.")
	}
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	var mask Register
	if masked {
		mask = Load(Param("mask").Base(), GP64())
	}
	l := Load(Param("luts"), GP64())
	lutLo, lutHi, lutRes := YMM(), YMM(), YMM()
	VBROADCASTI128(Mem{Base: l}, lutLo)
	VBROADCASTI128(Mem{Base: l, Disp: 16}, lutHi)
	VBROADCASTI128(Mem{Base: l, Disp: 32}, lutRes)
	low4 := YMM()
	t := GP32()
	MOVL(U32(0x0f0f0f0f), t)
	tx := XMM()
	MOVD(t, tx)
	VPBROADCASTD(tx, low4)

	i := GP64()
	XORQ(i, i)
	SHRQ(U8(5), n)
	SHLQ(U8(5), n)
	// Two vectors per iteration while possible, then one.
	end2 := GP64()
	MOVQ(n, end2)
	ANDQ(I32(-64), end2)
	body := func(disp int) {
		x := YMM()
		VMOVDQU(Mem{Base: src, Index: i, Scale: 1, Disp: disp}, x)
		h := YMM()
		VPSRLW(U8(4), x, h)
		VPAND(x, low4, x)
		VPAND(h, low4, h)
		VPSHUFB(x, lutLo, x)
		VPSHUFB(h, lutHi, h)
		VPADDB(h, x, x)
		VPSHUFB(x, lutRes, x)
		if masked {
			VPAND(Mem{Base: mask, Index: i, Scale: 1, Disp: disp}, x, x)
		}
		VMOVDQU(x, Mem{Base: dst, Index: i, Scale: 1, Disp: disp})
	}
	CMPQ(i, end2)
	JAE(LabelRef(name + "_one"))
	Label(name + "_loop2")
	body(0)
	body(32)
	ADDQ(U32(64), i)
	CMPQ(i, end2)
	JB(LabelRef(name + "_loop2"))
	Label(name + "_one")
	CMPQ(i, n)
	JAE(LabelRef(name + "_done"))
	body(0)
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// vote8Planes is the majority of eight worker-major bit-planes through a
// carry-save adder tree, 256 elements per step, for len(pos)&^31 bytes:
// with count c = b0 + 2 b1 + 4 b2 + 8 b3,
//
//	pos = 1{c > 4} = b3 | b2 & (b1 | b0)
//	nz  = pos | 1{c < 4} = pos | ^(b3 | b2)
//
// The masked variant also ANDs both results with mask[i], the positional
// gate's bit stream, in the same pass (G-Ternary: no second pass over the
// results).
func vote8Planes(name string, masked bool) {
	if masked {
		TEXT(name, NOSPLIT, "func(pos, nz []byte, planes *[8]*byte, mask []byte)")
		Pragma("noescape")
		Doc(name + " is vote8PlanesAVX2 followed by pos[i] &= mask[i], nz[i] &= mask[i].")
	} else {
		TEXT(name, NOSPLIT, "func(pos, nz []byte, planes *[8]*byte)")
		Pragma("noescape")
		Doc(name + " writes the W=8 majority planes pos and nz of eight sign planes for len(pos)&^31 bytes.")
	}
	pos := Load(Param("pos").Base(), GP64())
	nz := Load(Param("nz").Base(), GP64())
	n := Load(Param("pos").Len(), GP64())
	pp := Load(Param("planes"), GP64())
	var mask GPVirtual
	if masked {
		mask = GP64()
		Load(Param("mask").Base(), mask)
	}
	var p [8]GPVirtual
	for k := range p {
		p[k] = GP64()
		MOVQ(Mem{Base: pp, Disp: 8 * k}, p[k])
	}
	SHRQ(U8(5), n)
	SHLQ(U8(5), n)
	i := GP64()
	XORQ(i, i)
	ones := YMM()
	VPCMPEQB(ones, ones, ones)
	CMPQ(i, n)
	JAE(LabelRef(name + "_done"))
	Label(name + "_loop")
	ld := func(k int) VecVirtual {
		x := YMM()
		VMOVDQU(Mem{Base: p[k], Index: i, Scale: 1}, x)
		return x
	}
	fullAdd := func(a, b, c VecVirtual) (sum, carry VecVirtual) {
		t := YMM()
		VPXOR(a, b, t)
		sum = YMM()
		VPXOR(t, c, sum)
		VPAND(a, b, a)
		VPAND(c, t, t)
		VPOR(a, t, t)
		return sum, t
	}
	s1, c1 := fullAdd(ld(0), ld(1), ld(2))
	s2, c2 := fullAdd(ld(3), ld(4), ld(5))
	s3, c3 := fullAdd(s1, s2, ld(6))
	x7 := ld(7)
	b0 := YMM()
	VPXOR(s3, x7, b0)
	h := YMM()
	VPAND(s3, x7, h)
	t, c4 := fullAdd(c1, c2, c3)
	b1 := YMM()
	VPXOR(t, h, b1)
	h2 := YMM()
	VPAND(t, h, h2)
	b23 := YMM() // b3 | b2 = c4 | h2
	VPOR(c4, h2, b23)
	b3 := YMM()
	VPAND(c4, h2, b3)
	VPOR(b1, b0, b1)
	// pos = b3 | (b2|b3)&(b1|b0), which equals b3 | b2&(b1|b0).
	VPAND(b1, b23, b1)
	VPOR(b1, b3, b1)
	VPXOR(b23, ones, b23)
	VPOR(b23, b1, b23) // nz
	if masked {
		m := YMM()
		VMOVDQU(Mem{Base: mask, Index: i, Scale: 1}, m)
		VPAND(b1, m, b1)
		VPAND(b23, m, b23)
	}
	VMOVDQU(b1, Mem{Base: pos, Index: i, Scale: 1})
	VMOVDQU(b23, Mem{Base: nz, Index: i, Scale: 1})
	ADDQ(U32(32), i)
	CMPQ(i, n)
	JB(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
