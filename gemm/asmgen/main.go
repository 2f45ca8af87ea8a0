// Command asmgen generates gemm's amd64 micro-kernels with avo.
//
// It lives in its own module so that avo stays out of the nfabric module's
// dependencies. gemm/kernel_amd64.go runs it through go:generate:
//
//	cd gemm && go generate
//
// which rewrites gemm/kernel_amd64.s and gemm/kernel_amd64_stubs.go; CI
// regenerates them and fails when the committed files differ.
//
// gather16AVX2 packs 16 columns of a Gathered matrix (see gemm/gathered.go)
// with two VPGATHERDD per row; runs16x1AVX512 .. runs16x6AVX512 pack them
// with one masked load per run of consecutive offsets; transpose8AVX2 packs eight rows of
// A into a sliver with 8×8 transposes in registers.
//
// Every kernel computes one MR×NR tile of C from packed panels (see
// gemm/pack.go):
//
//	acc[i][j] = Σ_{p<kc} a[p*MR+i] · b[p*NR+j]   (one FMA per p, p ascending)
//	C[i][j]   = alpha·acc[i][j] + beta·C[i][j]    (C not read when beta == 0)
//
// with the final line computed as fma(beta, C, alpha·acc), so every kernel
// here (whatever its MR and NR) performs the same rounded operations on
// each element in the same order and gives the same bits.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!noasm") // go:build amd64 && !noasm
	kernel("sgemm6x16FMA", 6, 16, 8, YMM)
	for rows := 1; rows < 6; rows++ {
		edgeKernel(fmt.Sprintf("sgemm6x16FMARows%d", rows), rows, 6, 16, 8, YMM)
	}
	kernel("sgemm12x32AVX512", 12, 32, 16, ZMM)
	kernel("sgemm8x32AVX512", 8, 32, 16, ZMM)
	gather16()
	bounds32()
	for nrun := 1; nrun <= 6; nrun++ {
		runs16(nrun)
	}
	transpose8()
	transpose6()
	for _, w := range []int{6, 8, 12, 16, 32} {
		packRows(fmt.Sprintf("packRows%dAVX2", w), w)
	}
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

// kernel writes an mr×nr micro-kernel with vectors of lanes floats
// (nr/lanes vectors per row of C), using vec to allocate vector registers
// (YMM for AVX2+FMA, ZMM for AVX-512F).
func kernel(name string, mr, nr, lanes int, vec func() VecVirtual) {
	TEXT(name, NOSPLIT, "func(kc int, a, b, c *float32, ldc int, alpha, beta float32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes the %dx%d tile C = alpha*A*B + beta*C from a packed A sliver", name, mr, nr),
		fmt.Sprintf("(kc steps of %d floats) and a packed B sliver (kc steps of %d floats);", mr, nr),
		"C rows are ldc floats apart; C is not read when beta == 0.")
	kernelBody(name, mr, mr, nr, lanes, vec)
}

// edgeKernel writes the kernel for the first rows < mr rows of an mr×nr
// tile: the last sliver of a product whose m is not a multiple of mr (a
// 64-row product with 6-row slivers ends with 4 rows). It reads the same
// packed slivers as the mr-row kernel (A steps of mr floats) and performs
// each element's operations in the same order, so it gives the same bits,
// and it writes C directly instead of through a scratch tile, without the
// mr-rows FMAs of the padding rows.
func edgeKernel(name string, rows, mr, nr, lanes int, vec func() VecVirtual) {
	TEXT(name, NOSPLIT, "func(kc int, a, b, c *float32, ldc int, alpha, beta float32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes rows 0..%d of the %dx%d tile C = alpha*A*B + beta*C", name, rows-1, mr, nr),
		fmt.Sprintf("from a packed A sliver (kc steps of %d floats) and a packed B sliver (kc steps of", mr),
		fmt.Sprintf("%d floats); C rows are ldc floats apart; C is not read when beta == 0.", nr))
	kernelBody(name, rows, mr, nr, lanes, vec)
}

// kernelBody writes the body of a kernel computing rows×nr elements of C
// from A slivers whose steps are astride floats.
func kernelBody(name string, mr, astride, nr, lanes int, vec func() VecVirtual) {
	kc := Load(Param("kc"), GP64())
	pa := Load(Param("a"), GP64())
	pb := Load(Param("b"), GP64())
	pc := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(U8(2), ldc) // bytes

	// Ask for the C tile now, so that its rows (in L2 or L3 when C is
	// large, as a convolution's dW is) have arrived when the loop ends.
	pf := GP64()
	MOVQ(pc, pf)
	for i := 0; i < mr; i++ {
		PREFETCHT0(Mem{Base: pf})
		PREFETCHT0(Mem{Base: pf, Disp: 4*nr - 4})
		if i < mr-1 {
			ADDQ(ldc, pf)
		}
	}

	nv := nr / lanes
	acc := make([]VecVirtual, mr*nv)
	for i := range acc {
		acc[i] = vec()
		if lanes == 16 {
			VPXORD(acc[i], acc[i], acc[i]) // VXORPS on ZMM needs AVX512DQ
		} else {
			VXORPS(acc[i], acc[i], acc[i])
		}
	}
	TESTQ(kc, kc)
	JZ(LabelRef(name + "_store"))
	Label(name + "_loop")
	bv := make([]VecVirtual, nv)
	for v := range bv {
		bv[v] = vec()
		VMOVUPS(Mem{Base: pb, Disp: 4 * lanes * v}, bv[v])
	}
	for i := 0; i < mr; i++ {
		t := vec()
		VBROADCASTSS(Mem{Base: pa, Disp: 4 * i}, t)
		for v := 0; v < nv; v++ {
			VFMADD231PS(bv[v], t, acc[i*nv+v]) // acc += t*b
		}
	}
	ADDQ(U32(4*astride), pa)
	ADDQ(U32(4*nr), pb)
	DECQ(kc)
	JNZ(LabelRef(name + "_loop"))

	Label(name + "_store")
	alpha := vec()
	VBROADCASTSS(addr("alpha"), alpha)
	for i := range acc {
		VMULPS(alpha, acc[i], acc[i])
	}
	// beta == 0 (either sign) skips reading C, so NaNs there do not leak.
	bits := GP32()
	MOVL(addr("beta"), bits)
	ANDL(U32(0x7fffffff), bits)
	JZ(LabelRef(name + "_overwrite"))
	beta := vec()
	VBROADCASTSS(addr("beta"), beta)
	row := GP64()
	MOVQ(pc, row)
	for i := 0; i < mr; i++ {
		for v := 0; v < nv; v++ {
			VFMADD231PS(Mem{Base: row, Disp: 4 * lanes * v}, beta, acc[i*nv+v]) // acc += beta*C
			VMOVUPS(acc[i*nv+v], Mem{Base: row, Disp: 4 * lanes * v})
		}
		if i < mr-1 {
			ADDQ(ldc, row)
		}
	}
	VZEROUPPER()
	RET()

	Label(name + "_overwrite")
	for i := 0; i < mr; i++ {
		for v := 0; v < nv; v++ {
			VMOVUPS(acc[i*nv+v], Mem{Base: pc, Disp: 4 * lanes * v})
		}
		if i < mr-1 {
			ADDQ(ldc, pc)
		}
	}
	VZEROUPPER()
	RET()
}

// gather16 writes gather16AVX2: for l < n, the 16 floats
// d[l*ldd+j] = x[a[l]+ix[j]], j < 16, two 8-lane gathers per row.
func gather16() {
	TEXT("gather16AVX2", NOSPLIT, "func(d *float32, ldd int, x *float32, a *int32, n int, ix *int32)")
	Pragma("noescape")
	Doc("gather16AVX2 sets d[l*ldd+j] = x[a[l]+ix[j]] for l < n and j < 16 (every",
		"index in range: the caller checks).")
	d := Load(Param("d"), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd) // bytes
	x := Load(Param("x"), GP64())
	a := Load(Param("a"), GP64())
	n := Load(Param("n"), GP64())
	ix := Load(Param("ix"), GP64())
	i0, i1 := YMM(), YMM()
	VMOVDQU(Mem{Base: ix}, i0)
	VMOVDQU(Mem{Base: ix, Disp: 32}, i1)
	TESTQ(n, n)
	JZ(LabelRef("gather16_done"))
	Label("gather16_loop")
	b := YMM()
	VPBROADCASTD(Mem{Base: a}, b)
	o0, o1 := YMM(), YMM()
	VPADDD(i0, b, o0)
	VPADDD(i1, b, o1)
	m0, m1 := YMM(), YMM()
	VPCMPEQD(m0, m0, m0) // all lanes
	VPCMPEQD(m1, m1, m1)
	g0, g1 := YMM(), YMM()
	VPXOR(g0, g0, g0)
	VPXOR(g1, g1, g1)
	VPGATHERDD(m0, Mem{Base: x, Index: o0, Scale: 4}, g0)
	VPGATHERDD(m1, Mem{Base: x, Index: o1, Scale: 4}, g1)
	VMOVDQU(g0, Mem{Base: d})
	VMOVDQU(g1, Mem{Base: d, Disp: 32})
	ADDQ(U8(4), a)
	ADDQ(ldd, d)
	DECQ(n)
	JNZ(LabelRef("gather16_loop"))
	Label("gather16_done")
	VZEROUPPER()
	RET()
}

// runs16 writes runs16x<nrun>AVX512: for l < n, the 16 floats
// d[l*ldd+j] = x[a[l]+j+runs[2r]] for the lanes j in the mask runs[2r+1]
// of each run r < nrun (the runs' masks partition the 16 lanes). The run
// table is read once: each run's start x+runs[2r] sits in a register and
// its mask in a mask register, so a row is one offset load, nrun masked
// loads (the first zeroing, the others merging) and one store. A
// masked-off lane's address is never accessed (AVX-512 suppresses its
// faults).
func runs16(nrun int) {
	name := fmt.Sprintf("runs16x%dAVX512", nrun)
	TEXT(name, NOSPLIT, "func(d *float32, ldd int, x *float32, a *int32, n int, runs *int32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets d[l*ldd+j] = x[a[l]+j+runs[2r]] for l < n and the lanes", name),
		fmt.Sprintf("j < 16 in the mask runs[2r+1] of each run r < %d (the masks partition", nrun),
		"the lanes; every index of a set lane in range: the caller checks).")
	d := Load(Param("d"), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd) // bytes
	x := Load(Param("x"), GP64())
	a := Load(Param("a"), GP64())
	n := Load(Param("n"), GP64())
	runs := Load(Param("runs"), GP64())
	start := make([]Register, nrun)
	mask := make([]Register, nrun)
	for r := range nrun {
		off := GP64()
		MOVLQSX(Mem{Base: runs, Disp: 8 * r}, off)
		start[r] = GP64()
		LEAQ(Mem{Base: x, Index: off, Scale: 4}, start[r])
		mask[r] = K()
		KMOVW(Mem{Base: runs, Disp: 8*r + 4}, mask[r])
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	Label(name + "_row")
	base := GP64()
	MOVLQSX(Mem{Base: a}, base)
	row := ZMM()
	for r := range nrun {
		m := Mem{Base: start[r], Index: base, Scale: 4}
		if r == 0 {
			VMOVUPS_Z(m, mask[r], row)
		} else {
			VMOVUPS(m, mask[r], row) // merge the run's lanes
		}
	}
	VMOVUPS(row, Mem{Base: d})
	ADDQ(U8(4), a)
	ADDQ(ldd, d)
	DECQ(n)
	JNZ(LabelRef(name + "_row"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// transpose8 writes transpose8AVX2: d[l*ldd+r] = a[r*lda+l] for r < 8
// and l < kc8 (a multiple of 8), one 8×8 block at a time: eight row loads,
// the usual unpack / shuffle / lane-permute transpose, eight stores.
func transpose8() {
	TEXT("transpose8AVX2", NOSPLIT, "func(d *float32, ldd int, a *float32, lda int, kc8 int)")
	Pragma("noescape")
	Doc("transpose8AVX2 sets d[l*ldd+r] = a[r*lda+l] for r < 8 and l < kc8, a",
		"multiple of 8 (packA's eight-row sliver, rows lda floats apart).")
	d := Load(Param("d"), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd)
	a := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	SHLQ(U8(2), lda)
	kc := Load(Param("kc8"), GP64())
	SHRQ(U8(3), kc)
	TESTQ(kc, kc)
	JZ(LabelRef("transpose8_done"))
	lda3 := GP64()
	LEAQ(Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	Label("transpose8_block")
	// Row pointers: a, a+lda, a+2lda, a+3lda and the same from a+4lda.
	a4 := GP64()
	LEAQ(Mem{Base: a, Index: lda, Scale: 4}, a4)
	r := make([]VecVirtual, 8)
	for i := range r {
		r[i] = YMM()
	}
	load := func(base Register, i int, v VecVirtual) {
		switch i {
		case 0:
			VMOVUPS(Mem{Base: base}, v)
		case 1:
			VMOVUPS(Mem{Base: base, Index: lda, Scale: 1}, v)
		case 2:
			VMOVUPS(Mem{Base: base, Index: lda, Scale: 2}, v)
		case 3:
			VMOVUPS(Mem{Base: base, Index: lda3, Scale: 1}, v)
		}
	}
	for i := range 4 {
		load(a, i, r[i])
		load(a4, i, r[4+i])
	}
	cols := transpose8x8(r)
	dst := GP64()
	MOVQ(d, dst)
	for c, o := range cols {
		VMOVUPS(o, Mem{Base: dst})
		if c < 7 {
			ADDQ(ldd, dst)
		}
	}
	// Next block: a moves 8 floats right, d 8 steps down.
	ADDQ(U8(32), a)
	LEAQ(Mem{Base: d, Index: ldd, Scale: 8}, d)
	DECQ(kc)
	JNZ(LabelRef("transpose8_block"))
	Label("transpose8_done")
	VZEROUPPER()
	RET()
}

// transpose8x8 transposes the 8×8 block whose rows are r (overwriting
// them) and returns its columns: the usual unpack / shuffle /
// lane-permute sequence.
func transpose8x8(r []VecVirtual) []VecVirtual {
	t := make([]VecVirtual, 8)
	for i := range t {
		t[i] = YMM()
	}
	for h := 0; h < 8; h += 2 { // rows h, h+1
		VUNPCKLPS(r[h+1], r[h], t[h])   // [x0 y0 x1 y1 | x4 y4 x5 y5]
		VUNPCKHPS(r[h+1], r[h], t[h+1]) // [x2 y2 x3 y3 | x6 y6 x7 y7]
	}
	u := r                      // reuse
	for q := 0; q < 8; q += 4 { // rows q..q+3
		VSHUFPS(U8(0x44), t[q+2], t[q], u[q])     // column 0 (and 4) of the four rows
		VSHUFPS(U8(0xEE), t[q+2], t[q], u[q+1])   // column 1 (and 5)
		VSHUFPS(U8(0x44), t[q+3], t[q+1], u[q+2]) // column 2 (and 6)
		VSHUFPS(U8(0xEE), t[q+3], t[q+1], u[q+3]) // column 3 (and 7)
	}
	for c := range 8 {
		if c < 4 {
			VPERM2F128(U8(0x20), u[4+c], u[c], t[c])
		} else {
			VPERM2F128(U8(0x31), u[c], u[c-4], t[c])
		}
	}
	return t
}

// transpose6 writes transpose6AVX2, packA's six-row sliver for the AVX2
// 6×16 kernel: d[l*6+r] = a[r*lda+l] for r < 6 and l < kc8 (a multiple
// of 8), one block of 8 steps at a time: six row loads (two zero rows),
// the 8×8 transpose, and per step a 32-byte store whose last two floats
// the next step's store overwrites (the block's last step stores 16 + 8
// bytes, so nothing past step kc8 is written).
func transpose6() {
	TEXT("transpose6AVX2", NOSPLIT, "func(d *float32, a *float32, lda int, kc8 int)")
	Pragma("noescape")
	Doc("transpose6AVX2 sets d[l*6+r] = a[r*lda+l] for r < 6 and l < kc8, a",
		"multiple of 8 (packA's six-row sliver, rows lda floats apart).")
	d := Load(Param("d"), GP64())
	a := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	SHLQ(U8(2), lda)
	kc := Load(Param("kc8"), GP64())
	SHRQ(U8(3), kc)
	TESTQ(kc, kc)
	JZ(LabelRef("transpose6_done"))
	Label("transpose6_block")
	r := make([]VecVirtual, 8)
	row := GP64()
	MOVQ(a, row)
	for i := range r {
		r[i] = YMM()
		if i < 6 {
			VMOVUPS(Mem{Base: row}, r[i])
			if i < 5 {
				ADDQ(lda, row)
			}
		} else {
			VXORPS(r[i], r[i], r[i])
		}
	}
	cols := transpose8x8(r)
	for c, o := range cols {
		if c < 7 {
			VMOVUPS(o, Mem{Base: d, Disp: 24 * c})
			continue
		}
		VMOVUPS(o.AsX(), Mem{Base: d, Disp: 24 * c})
		hi := XMM()
		VEXTRACTF128(U8(1), o, hi)
		VMOVSD(hi, Mem{Base: d, Disp: 24*c + 16})
	}
	ADDQ(U8(32), a)
	ADDQ(U8(24*8), d)
	DECQ(kc)
	JNZ(LabelRef("transpose6_block"))
	Label("transpose6_done")
	VZEROUPPER()
	RET()
}

// packRows writes name: the copy of ns full slivers of nr columns from a
// row-major matrix, packB's for B and packA's for a transposed A, row by
// row so that each row is read sequentially (one sliver at a time would
// touch kc rows, a cache line of each, with no stream for the prefetcher
// to follow): d[s*ldd+l*nr+j] = b[l*ldb+s*nr+j] for l < kc, s < ns and
// j < nr, with ldd = kc*nr the distance between slivers. nr is even; each
// sliver row moves as 8-, 4- and 2-float pieces.
func packRows(name string, nr int) {
	TEXT(name, NOSPLIT, "func(d *float32, ldd int, b *float32, ldb int, kc int, ns int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets d[s*ldd+l*%d+j] = b[l*ldb+s*%d+j] for l < kc, s < ns and", name, nr, nr),
		fmt.Sprintf("j < %d: slivers of a row-major matrix, each of its rows read in order.", nr))
	d := Load(Param("d"), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd)
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb)
	kc := Load(Param("kc"), GP64())
	ns := Load(Param("ns"), GP64())
	TESTQ(kc, kc)
	JZ(LabelRef(name + "_done"))
	TESTQ(ns, ns)
	JZ(LabelRef(name + "_done"))
	Label(name + "_row")
	src, dst, cnt := GP64(), GP64(), GP64()
	MOVQ(b, src)
	MOVQ(d, dst)
	MOVQ(ns, cnt)
	Label(name + "_sliver")
	type piece struct {
		v   VecVirtual
		off int
	}
	var ps []piece
	for off := 0; off < nr; {
		switch {
		case nr-off >= 8:
			p := piece{YMM(), off}
			VMOVUPS(Mem{Base: src, Disp: 4 * off}, p.v)
			ps, off = append(ps, p), off+8
		case nr-off >= 4:
			p := piece{XMM(), off}
			VMOVUPS(Mem{Base: src, Disp: 4 * off}, p.v)
			ps, off = append(ps, p), off+4
		default:
			p := piece{XMM(), off}
			VMOVSD(Mem{Base: src, Disp: 4 * off}, p.v)
			ps, off = append(ps, p), off+2
		}
	}
	for _, p := range ps {
		if nr-p.off >= 4 {
			VMOVUPS(p.v, Mem{Base: dst, Disp: 4 * p.off})
		} else {
			VMOVSD(p.v, Mem{Base: dst, Disp: 4 * p.off})
		}
	}
	ADDQ(U32(4*nr), src)
	ADDQ(ldd, dst)
	DECQ(cnt)
	JNZ(LabelRef(name + "_sliver"))
	ADDQ(ldb, b)
	ADDQ(U32(4*nr), d)
	DECQ(kc)
	JNZ(LabelRef(name + "_row"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// bounds32 writes bounds32AVX2, the smallest and largest of n int32s (n a
// positive multiple of 8) with VPMINSD/VPMAXSD over eight lanes: the
// range check of a Gathered block's offset tables, which PackB makes on
// every call.
func bounds32() {
	TEXT("bounds32AVX2", NOSPLIT, "func(s *int32, n int) (lo, hi int32)")
	Pragma("noescape")
	Doc("bounds32AVX2 returns the smallest and largest of s[0..n), n a positive multiple of 8.")
	p := Load(Param("s"), GP64())
	n := Load(Param("n"), GP64())
	lo, hi := YMM(), YMM()
	VMOVDQU(Mem{Base: p}, lo)
	VMOVDQA(lo, hi)
	ADDQ(U8(32), p)
	SUBQ(U8(8), n)
	Label("bounds32_loop")
	TESTQ(n, n)
	JZ(LabelRef("bounds32_reduce"))
	v := YMM()
	VMOVDQU(Mem{Base: p}, v)
	VPMINSD(v, lo, lo)
	VPMAXSD(v, hi, hi)
	ADDQ(U8(32), p)
	SUBQ(U8(8), n)
	JMP(LabelRef("bounds32_loop"))
	Label("bounds32_reduce")
	reduce := func(acc VecVirtual, op func(mxy, xy, xy1 Op), ret int) {
		t := XMM()
		VEXTRACTI128(U8(1), acc, t)
		x := acc.AsX()
		op(t, x, x)
		VPSHUFD(U8(0x4e), x, t)
		op(t, x, x)
		VPSHUFD(U8(0xb1), x, t)
		op(t, x, x)
		r := GP32()
		VMOVD(x, r)
		Store(r, ReturnIndex(ret))
	}
	reduce(lo, func(a, b, c Op) { VPMINSD(a, b, c) }, 0) // lo
	reduce(hi, func(a, b, c Op) { VPMAXSD(a, b, c) }, 1) // hi
	VZEROUPPER()
	RET()
}
