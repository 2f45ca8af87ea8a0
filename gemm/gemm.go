package gemm

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Block sizes (in floats). MC, NC and NB are multiples of every kernel's
// MR and NR, so the tile grid always starts at the origin of C.
const (
	KC = 256  // depth of one packed block
	MC = 144  // rows of C per packed A block
	NC = 2048 // columns of C per packed B block
	NB = 256  // columns packed at a time when the rows fit in one MC block
)

// serialFlops is the size (2·m·n·k) below which ParallelSgemm stays on the
// calling goroutine: starting goroutines costs more than it saves.
const serialFlops = 1 << 21

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on the calling goroutine,
// where op(X) is X, or Xᵀ when tX is set. op(A) is m×k with row stride lda
// (A itself is k×m when tA), op(B) is k×n with row stride ldb and C is m×n
// with row stride ldc. It panics when a dimension is negative, a stride is
// too small or a slice too short.
func Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	p := problem{tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc}
	p.run(kernelFor(m), 1)
}

// ParallelSgemm is Sgemm with up to workers goroutines (the caller's
// included; workers < 1 means 1). The result is bit for bit that of
// Sgemm.
func ParallelSgemm(workers int, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	p := problem{tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc}
	p.run(kernelFor(m), workers)
}

type problem struct {
	tA, tB  bool
	m, n, k int
	alpha   float32
	a       []float32
	lda     int
	b       []float32
	ldb     int
	beta    float32
	c       []float32
	ldc     int
	// packed, when set, is op(A) already packed by PackedA.Pack (a is then
	// unused).
	packed *PackedA
	// bsrc, when set, packs op(B) (b is then unused).
	bsrc BPacker
}

// check panics with a message naming the first invalid argument.
func (p *problem) check() {
	if p.m < 0 || p.n < 0 || p.k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", p.m, p.n, p.k))
	}
	need := func(name string, x []float32, rows, cols, ld int) {
		if ld < max(cols, 1) {
			panic(fmt.Sprintf("gemm: %s stride %d < %d columns", name, ld, cols))
		}
		if rows > 0 && cols > 0 && len(x) < (rows-1)*ld+cols {
			panic(fmt.Sprintf("gemm: %s has %d elements, a %dx%d matrix with stride %d needs %d", name, len(x), rows, cols, ld, (rows-1)*ld+cols))
		}
	}
	ar, ac := p.m, p.k
	if p.tA {
		ar, ac = ac, ar
	}
	if p.packed == nil {
		need("A", p.a, ar, ac, p.lda)
	}
	br, bc := p.k, p.n
	if p.tB {
		br, bc = bc, br
	}
	if p.bsrc == nil {
		need("B", p.b, br, bc, p.ldb)
	}
	need("C", p.c, p.m, p.n, p.ldc)
}

func (p *problem) run(kr *kernel, workers int) {
	p.check()
	if p.m == 0 || p.n == 0 {
		return
	}
	if p.k == 0 || p.alpha == 0 {
		p.scaleC()
		return
	}
	if workers < 1 || 2*p.m*p.n*p.k < serialFlops {
		workers = 1
	}
	rows, cols := split(p.m, p.n, workers, kr)
	mj, nj := (p.m+rows-1)/rows, (p.n+cols-1)/cols
	if workers == 1 || mj*nj == 1 {
		// No goroutines and, once the pool holds a scratch, no allocation.
		w := getScratch(kr)
		for i0 := 0; i0 < p.m; i0 += rows {
			for j0 := 0; j0 < p.n; j0 += cols {
				p.block(kr, w, i0, min(i0+rows, p.m), j0, min(j0+cols, p.n))
			}
		}
		putScratch(w)
		return
	}
	parallel(*p, kr, workers, rows, cols, mj, nj)
}

// parallel lets up to workers goroutines take the mj×nj jobs of rows×cols
// elements of C. It takes p by value so that only this path allocates.
func parallel(p problem, kr *kernel, workers, rows, cols, mj, nj int) {
	jobs := mj * nj
	var next atomic.Int64
	loop := func() {
		w := getScratch(kr)
		defer putScratch(w)
		for {
			j := int(next.Add(1)) - 1
			if j >= jobs {
				return
			}
			i0, j0 := (j/nj)*rows, (j%nj)*cols
			p.block(kr, w, i0, min(i0+rows, p.m), j0, min(j0+cols, p.n))
		}
	}
	var wg sync.WaitGroup
	for range min(workers, jobs) - 1 {
		wg.Go(loop)
	}
	loop()
	wg.Wait()
}

// scaleC sets C = beta·C (C = 0 when beta is 0, without reading C).
func (p *problem) scaleC() {
	for i := 0; i < p.m; i++ {
		row := p.c[i*p.ldc : i*p.ldc+p.n]
		if p.beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= p.beta
		}
	}
}

// split chooses the rectangle of C (rows × cols, multiples of the kernel's
// tile) that one job computes. One worker takes all rows and NC columns at
// a time; several workers get about three jobs each so that uneven tiles
// and a busy core even out. Any split gives the same bits.
func split(m, n, workers int, kr *kernel) (rows, cols int) {
	if workers == 1 {
		return m, NC
	}
	target := 3 * workers
	cols = min(NC, roundUp((n+target-1)/target, kr.nr))
	nj := (n + cols - 1) / cols
	rows = m
	if nj < target {
		parts := (target + nj - 1) / nj
		rows = roundUp((m+parts-1)/parts, kr.mr)
	}
	return rows, cols
}

func roundUp(x, q int) int { return (x + q - 1) / q * q }

// block computes rows [i0, i1) and columns [j0, j1) of C, looping over
// NC-column blocks, then KC-deep blocks in ascending order, then MC-row
// blocks, as in BLIS. When the rows fit in one MC block (a product with
// few rows, such as a 64-filter convolution), each packed B panel is used
// once, so it is packed NB columns at a time just before the kernels use
// them, while those columns are still in L2, instead of all NC at once
// and read back from L3.
func (p *problem) block(kr *kernel, w *scratch, i0, i1, j0, j1 int) {
	for jc := j0; jc < j1; jc += NC {
		nc := min(NC, j1-jc)
		for pc := 0; pc < p.k; pc += KC {
			kc := min(KC, p.k-pc)
			beta := p.beta
			if pc > 0 {
				beta = 1
			}
			if i1-i0 <= MC {
				ap := p.panelA(kr, w, i0, i1-i0, pc, kc)
				for jb := jc; jb < jc+nc; jb += NB {
					nb := min(NB, jc+nc-jb)
					p.panelB(kr, w.b, pc, kc, jb, nb)
					p.macro(kr, w, ap, w.b, i0, i1-i0, jb, nb, kc, beta)
				}
				continue
			}
			p.panelB(kr, w.b, pc, kc, jc, nc)
			for ic := i0; ic < i1; ic += MC {
				mc := min(MC, i1-ic)
				p.macro(kr, w, p.panelA(kr, w, ic, mc, pc, kc), w.b, ic, mc, jc, nc, kc, beta)
			}
		}
	}
}

// panelA returns rows [ic, ic+mc) and columns [pc, pc+kc) of op(A) as
// packed slivers: from PackedA when it holds op(A), else packed into w.a.
func (p *problem) panelA(kr *kernel, w *scratch, ic, mc, pc, kc int) []float32 {
	if p.packed != nil {
		return p.packed.data[pc*p.packed.mpad+ic*kc:]
	}
	p.packA(w.a, kr.mr, ic, mc, pc, kc)
	return w.a
}

// panelB packs rows [pc, pc+kc) and columns [jc, jc+nc) of op(B) into
// dst as slivers, from the BPacker when there is one.
func (p *problem) panelB(kr *kernel, dst []float32, pc, kc, jc, nc int) {
	if p.bsrc != nil {
		p.bsrc.PackB(dst[:roundUp(nc, kr.nr)*kc], kr.nr, pc, kc, jc, nc)
		return
	}
	p.packB(dst, kr.nr, pc, kc, jc, nc)
}

// macro runs the micro-kernel over the mc×nc block of C at (ic, jc) from
// the packed A block apanel and the packed B block bpanel. Edge tiles go
// to the kernel's edge kernels when it has them and the columns are full,
// else through w.tile, so that no kernel touches C outside the block.
func (p *problem) macro(kr *kernel, w *scratch, apanel, bpanel []float32, ic, mc, jc, nc, kc int, beta float32) {
	mr, nr := kr.mr, kr.nr
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		bp := &bpanel[jr*kc]
		for ir := 0; ir < mc; ir += mr {
			rows := min(mr, mc-ir)
			ap := &apanel[ir*kc]
			off := (ic+ir)*p.ldc + jc + jr
			if rows == mr && cols == nr {
				kr.fn(kc, ap, bp, &p.c[off], p.ldc, p.alpha, beta)
				continue
			}
			if cols == nr && kr.edge != nil {
				kr.edge[rows](kc, ap, bp, &p.c[off], p.ldc, p.alpha, beta)
				continue
			}
			t := w.tile[:mr*nr]
			if beta != 0 {
				for i := 0; i < rows; i++ {
					copy(t[i*nr:i*nr+cols], p.c[off+i*p.ldc:])
				}
			}
			kr.fn(kc, ap, bp, &t[0], nr, p.alpha, beta)
			for i := 0; i < rows; i++ {
				copy(p.c[off+i*p.ldc:off+i*p.ldc+cols], t[i*nr:])
			}
		}
	}
}

// scratch holds one goroutine's packed panels and edge tile.
type scratch struct {
	a, b, tile []float32
}

// scratches holds the scratch buffers not in use. Unlike a sync.Pool it
// never drops them (a pool may, and under the race detector does at
// random), so a GEMM in steady state does not allocate; it holds at most
// as many as GEMM goroutines ever ran at once.
var scratches struct {
	sync.Mutex
	free []*scratch
}

func getScratch(kr *kernel) *scratch {
	scratches.Lock()
	defer scratches.Unlock()
	if n := len(scratches.free); n > 0 {
		w := scratches.free[n-1]
		scratches.free = scratches.free[:n-1]
		return w
	}
	return &scratch{
		a:    make([]float32, MC*KC),
		b:    make([]float32, KC*NC),
		tile: make([]float32, maxTile),
	}
}

func putScratch(w *scratch) {
	scratches.Lock()
	scratches.free = append(scratches.free, w)
	scratches.Unlock()
}

// PackedA is op(A) packed once for several products with the same A and
// different B (a convolution's weights against each image's patches).
// Products through it give the same bits as Sgemm.
type PackedA struct {
	kr         *kernel
	m, k, mpad int
	data       []float32
}

// Pack packs the m×k matrix op(A) (A[l*lda+i] when tA, else A[i*lda+l])
// into pa, reusing its memory: for each KC block, slivers of MR rows, as
// Sgemm would pack them. It panics like Sgemm on bad arguments.
func (pa *PackedA) Pack(tA bool, m, k int, a []float32, lda int) {
	p := problem{tA: tA, m: m, k: k, a: a, lda: lda, n: 0, ldb: 1, ldc: 1}
	p.check()
	kr := kernelFor(m)
	pa.kr, pa.m, pa.k, pa.mpad = kr, m, k, roundUp(m, kr.mr)
	if cap(pa.data) < pa.mpad*k {
		pa.data = make([]float32, pa.mpad*k)
	}
	pa.data = pa.data[:pa.mpad*k]
	if m == 0 {
		return
	}
	for pc := 0; pc < k; pc += KC {
		p.packA(pa.data[pc*pa.mpad:], kr.mr, 0, m, pc, min(KC, k-pc))
	}
}

// PackGathered packs the len(g.Rows)×len(g.Cols) matrix A(i, l) =
// g.X[g.Rows[i]+g.Cols[l]] into pa, reusing its memory, in the layout of
// Pack: pa then holds what Pack would give for that matrix stored row by
// row, without the matrix being formed (a convolution's weights flipped
// and transposed). It panics when an element would lie outside g.X.
func (pa *PackedA) PackGathered(g *Gathered) {
	m, k := len(g.Rows), len(g.Cols)
	kr := kernelFor(m)
	pa.kr, pa.m, pa.k, pa.mpad = kr, m, k, roundUp(m, kr.mr)
	if cap(pa.data) < pa.mpad*k {
		pa.data = make([]float32, pa.mpad*k)
	}
	pa.data = pa.data[:pa.mpad*k]
	if m == 0 || k == 0 {
		return
	}
	checkGathered(g.X, g.Rows, g.Cols)
	mr, x := kr.mr, g.X
	for pc := 0; pc < k; pc += KC {
		kc := min(KC, k-pc)
		blk := pa.data[pc*pa.mpad:]
		cols := g.Cols[pc : pc+kc]
		for s := 0; s < m; s += mr {
			// Element (s+r, pc+l) to d[l*mr+r], as packA puts it.
			d := blk[s*kc : (s+mr)*kc]
			rows := g.Rows[s:min(s+mr, m)]
			if len(rows) == 8 && mr == 8 {
				// A full sliver of the 8-row kernel (a convolution's
				// channels), unrolled.
				r := (*[8]int32)(rows)
				for l, base := range cols {
					dl := (*[8]float32)(d[l*8:])
					dl[0], dl[1], dl[2], dl[3] = x[r[0]+base], x[r[1]+base], x[r[2]+base], x[r[3]+base]
					dl[4], dl[5], dl[6], dl[7] = x[r[4]+base], x[r[5]+base], x[r[6]+base], x[r[7]+base]
				}
				continue
			}
			for l, base := range cols {
				dl := d[l*mr : (l+1)*mr]
				for r, off := range rows {
					dl[r] = x[off+base]
				}
				clear(dl[len(rows):])
			}
		}
	}
}

// Mul computes C = alpha·op(A)·op(B) + beta·C with op(A) the m×k matrix
// last packed into pa, op(B) k×n and C m×n as in ParallelSgemm, with up to
// workers goroutines.
func (pa *PackedA) Mul(workers int, tB bool, n int, alpha float32, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if pa.kr == nil {
		panic("gemm: PackedA.Mul before Pack")
	}
	p := problem{tB: tB, m: pa.m, n: n, k: pa.k, alpha: alpha, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, packed: pa}
	p.run(pa.kr, workers)
}

// BPacker supplies op(B) to PackedA.MulB by packing it on demand, for
// products whose B is never stored as a matrix: a convolution's patch
// matrix, gathered from the image straight into the panels (implicit
// im2col).
type BPacker interface {
	// PackB writes rows [pc, pc+kc) and columns [jc, jc+nc) of the k×n
	// matrix op(B) into dst (len(dst) is nc rounded up to nr, times kc) as
	// slivers of nr columns: element (pc+l, jc+s+j) goes to
	// dst[s*kc+l*nr+j] for s a multiple of nr, and columns past nc are
	// zero. Calls for different blocks may run concurrently.
	PackB(dst []float32, nr, pc, kc, jc, nc int)
}

// MulB is Mul with op(B) supplied by a BPacker: C = alpha·op(A)·op(B) +
// beta·C with op(A) the m×k matrix last packed into pa, op(B) k×n as b
// packs it and C m×n. The result is bit for bit that of Sgemm on the
// matrix b packs.
func (pa *PackedA) MulB(workers int, n int, alpha float32, b BPacker, beta float32, c []float32, ldc int) {
	if pa.kr == nil {
		panic("gemm: PackedA.MulB before Pack")
	}
	p := problem{m: pa.m, n: n, k: pa.k, alpha: alpha, ldb: 1, beta: beta, c: c, ldc: ldc, packed: pa, bsrc: b}
	p.run(pa.kr, workers)
}
