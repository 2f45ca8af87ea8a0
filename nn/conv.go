package nn

import (
	"fmt"
	"math"
	"sync"

	"github.com/neuronfabric/nfabric/gemm"
)

// Conv2d is a 2-D convolution (cross-correlation, as in PyTorch) with a
// square K×K kernel, stride S and zero padding P, computed as GEMMs on an
// implicit im2col matrix.
//
//	x (N, C, H, W), weight (F, C, K, K), bias (F) if present,
//	y (N, F, OH, OW) with OH = (H+2P-K)/S+1, OW = (W+2P-K)/S+1
//	y[n,f,i,j] = b[f] + Σ_{c,p,q} W[f,c,p,q] · x[n,c,S*i+p-P,S*j+q-P]
//
// The images run in groups of about groupCols output positions. With col
// the (C·K·K) × (g·OH·OW) patch matrix of a group (row (c*K+p)*K+q,
// column n*OH*OW + i*OW + j) and Y, dY the group's y and dy as F × g·OH·OW
// matrices:
//
//	forward:  Y = W col
//	backward: dW += dY colᵀ,  db += row sums of dY,
//	          dx = col2im(Wᵀ dY)
//
// col is never stored: it is a gemm.Gathered over the zero-padded input
// (offset tables, see taps), whose panels the GEMM gathers straight from
// the input, so the patches are read once per product instead of being
// written out, read back and packed. For stride 1 with P < K, dx is the convolution of dy
// (padded by K-1-P) with the weights flipped and transposed
// (W'[c,f,p,q] = W[f,c,K-1-p,K-1-q]), again an implicit GEMM, so neither
// Wᵀ dY nor col2im is formed; other strides form dcol = Wᵀ dY and add its
// columns into dx, skipping the taps that fall in the padding.
//
// The scratch buffers live in the replica's workspace, so a deep network
// needs only one set per replica; the padded input of a batch that is one
// group of at most keepPad floats is kept from Forward for Backward, and
// rebuilt otherwise. A ResNet's convolutions write y channel-major when
// the batch is one group (chanMajor), so that Y is y and dY is dy, with no
// regrouping pass either way.
type Conv2d struct {
	C, F, K, S, P int
	W, B          []float32 // B is nil without bias
	dW, dB        []float32
	// NoInputGrad skips dx (the first layer of a network).
	NoInputGrad bool
	// chanMajor lets Forward write y channel-major (Tensor.cm) when the
	// batch is one group: the GEMM's F × N·P result is then y itself, and
	// Backward takes dy in the same layout as its dY matrix. A ResNet's
	// convolutions set it; its BatchNorm, ReLU, sums and pooling read and
	// keep either layout.
	chanMajor bool
	// overwrite makes the next Backward write dW instead of adding into
	// it (Replica.TrainStep's first product of a step).
	overwrite bool
	// xpad keeps Forward's zero-padded input for Backward when the images
	// form one group of at most keepPad floats (kept says it holds the
	// last Forward's); otherwise Backward pads again into the workspace.
	xpad []float32
	kept bool

	ws       *workspace
	wp       *weightPack // the model's packs of W and W', shared by the replicas
	x        *Tensor
	oh, ow   int
	y, dx    Tensor
	fwd, bwd taps          // tap offsets of the forward and of the dx convolution
	pw       *gemm.PackedA // W' packed, for dxFlipped
	pt, ptd  gemm.Gathered // the GEMMs' patch matrices (fields, so passing them does not allocate)
}

// weightPack holds one convolution's weights packed for the GEMM (W, and
// W' of the flipped dx convolution) for all replicas of a model during one
// runShards call, in which the weights do not change: the first replica
// that needs a pack makes it and the others reuse it, so W replicas pack
// once per step instead of W times. Packing only moves values, so a
// shared pack gives the same bits as a private one.
type weightPack struct {
	mu    sync.Mutex
	pass  uint64 // the runShards call the packs belong to
	packs [packKinds]gemm.PackedA
	has   [packKinds]bool
	// flipRows and flipCols are W' (see packFlipped) as offsets into W,
	// set when the model is built and read-only after.
	flipRows, flipCols []int32
}

// packKind names the three ways a convolution's weights enter a GEMM.
type packKind int

const (
	packFwd   packKind = iota // W, F × C·K·K: the forward product
	packFlip                  // W', C × F·K·K: the flipped dx convolution
	packTrans                 // Wᵀ, C·K·K × F: dcol = Wᵀ dY of dxCol2im
	packKinds
)

// groupCols is about how many output positions (GEMM columns) one group
// of images gives: enough that a group of small images fills the GEMM's
// column blocks, few enough that the workspace stays near the size of one
// layer's activations.
const groupCols = 4096

// groupSize returns how many of the n images of x, p output positions
// each, form one group: the images split into the fewest groups of at
// most about groupCols columns, sizes as even as possible; a channel-major
// x is one group, since its images' planes are not contiguous.
func groupSize(x *Tensor, n, p int) int {
	if x.cm {
		return max(n, 1)
	}
	ng := min(max(1, (n*p+groupCols-1)/groupCols), max(n, 1))
	return max(1, (n+ng-1)/ng)
}

func newConv(b *builder, name string, c, f, k, s, p int, bias bool) *Conv2d {
	cv := &Conv2d{C: c, F: f, K: k, S: s, P: p, ws: b.ws, chanMajor: b.chanMajor}
	cv.W, cv.dW = b.param(name+".weight", []int{f, c, k, k}, b.kaimingNormal(f*k*k))
	if b.rep != nil {
		b.rep.convs = append(b.rep.convs, cv)
		b.rep.lazy[len(b.rep.lazy)-1] = true
	}
	cv.wp = b.weightPack()
	if cv.wp.flipRows == nil {
		cv.wp.flipRows, cv.wp.flipCols = flipOffsets(c, f, k)
	}
	if bias {
		cv.B, cv.dB = b.param(name+".bias", []int{f}, b.uniform(1/math.Sqrt(float64(c*k*k))))
	}
	return cv
}

// geom is the input's shape and the matrix sizes: P = OH·OW positions per
// image and CKK = C·K·K rows of col.
func (cv *Conv2d) geom(x *Tensor) (n, h, w, p, ckk int) {
	n, h, w = x.Shape[0], x.Shape[2], x.Shape[3]
	return n, h, w, cv.oh * cv.ow, cv.C * cv.K * cv.K
}

func (cv *Conv2d) Forward(x *Tensor, train bool) *Tensor {
	if len(x.Shape) != 4 || x.Shape[1] != cv.C {
		panic(fmt.Sprintf("nn: Conv2d(C=%d) got %v", cv.C, x))
	}
	cv.x, cv.kept = x, false
	cv.oh = (x.Shape[2]+2*cv.P-cv.K)/cv.S + 1
	cv.ow = (x.Shape[3]+2*cv.P-cv.K)/cv.S + 1
	n, h, w, p, _ := cv.geom(x)
	cv.y.resize(n, cv.F, cv.oh, cv.ow)
	g := groupSize(x, n, p)
	cv.buildTaps(x, h, w, g)
	pw := cv.packed(packFwd) // W once for every group
	cv.y.cm = cv.chanMajor && g >= n
	for n0 := 0; n0 < n; n0 += g {
		gn := min(g, n-n0)
		cv.patchesOf(&cv.pt, x, n0, gn, false)
		if gn == 1 || cv.y.cm { // Y of one image, or channel-major, is its slice of y
			out := cv.y.Data[n0*cv.F*p : (n0+gn)*cv.F*p]
			cv.ws.mulCols(pw, &cv.pt, 0, out, gn*p)
			if cv.B != nil {
				for f := range cv.F {
					addConst(out[f*gn*p:(f+1)*gn*p], cv.B[f])
				}
			}
			continue
		}
		out := grow(&cv.ws.grid, cv.F*gn*p)
		cv.ws.mulCols(pw, &cv.pt, 0, out, gn*p)
		for i := range gn {
			for f := range cv.F {
				dst := cv.y.Data[((n0+i)*cv.F+f)*p : ((n0+i)*cv.F+f+1)*p]
				copy(dst, out[f*gn*p+i*p:])
				if cv.B != nil {
					addConst(dst, cv.B[f])
				}
			}
		}
	}
	return &cv.y
}

// packed returns W packed for the product kind (see packKind). Within a
// runShards call it is the model's pack, made by the first replica that
// asks; otherwise the replica packs its own.
func (cv *Conv2d) packed(kind packKind) *gemm.PackedA {
	if cv.ws.pass == 0 {
		// Outside runShards the weights may have changed since any pack.
		cv.pack(kind, &cv.ws.packed)
		return &cv.ws.packed
	}
	wp := cv.wp
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if wp.pass != cv.ws.pass {
		wp.pass, wp.has = cv.ws.pass, [packKinds]bool{}
	}
	if !wp.has[kind] {
		cv.pack(kind, &wp.packs[kind])
		wp.has[kind] = true
	}
	return &wp.packs[kind]
}

// pack packs W into pa for the product kind (see packKind).
func (cv *Conv2d) pack(kind packKind, pa *gemm.PackedA) {
	ckk := cv.C * cv.K * cv.K
	switch kind {
	case packFwd:
		pa.Pack(false, cv.F, ckk, cv.W, ckk)
	case packTrans:
		pa.Pack(true, ckk, cv.F, cv.W, ckk)
	default:
		cv.packFlipped(pa)
	}
}

// packFlipped packs W'[c,f,p,q] = W[f,c,K-1-p,K-1-q], the C × F·K·K
// matrix of the dx convolution, into pa, gathered straight from W at the
// offsets of flipOffsets (gemm.PackedA.PackGathered), so W' is never
// formed. The packed floats are those of packing a formed W'.
func (cv *Conv2d) packFlipped(pa *gemm.PackedA) {
	g := gemm.Gathered{X: cv.W, Rows: cv.wp.flipRows, Cols: cv.wp.flipCols}
	pa.PackGathered(&g)
}

// flipOffsets returns W' of a convolution with c input channels, f
// filters and k×k kernels as offsets into W (F, C, K, K): row c of W'
// starts at c·K·K and its column (f, t), t = p·K+q, lies f·C·K·K +
// K·K-1-t further, so that W'[c, (f, t)] = W[rows[c]+cols[f·K·K+t]].
func flipOffsets(c, f, k int) (rows, cols []int32) {
	kk := k * k
	rows = make([]int32, c)
	for ci := range c {
		rows[ci] = int32(ci * kk)
	}
	cols = make([]int32, f*kk)
	for fi := range f {
		for t := range kk {
			cols[fi*kk+t] = int32(fi*c*kk + kk - 1 - t)
		}
	}
	return rows, cols
}

// keepPad is the most floats of padded input a convolution keeps from
// Forward for Backward (4 MiB): enough for the training stand-ins' and
// ResNet-18's per-replica shards, small beside the activations.
const keepPad = 1 << 20

// buildTaps builds the forward tap table for x's h×w planes, padded, in
// groups of g images.
func (cv *Conv2d) buildTaps(x *Tensor, h, w, g int) {
	hp, wp := h+2*cv.P, w+2*cv.P
	img, ch := x.planeStrides()
	cv.fwd.build(cv.C, hp*wp, cv.K, cv.S, wp, cv.oh, cv.ow, g, img, ch)
}

// patchesOf sets pt to the patch matrix of images [n0, n0+gn) of x (its
// transpose when trans is set), zero-padding them into the workspace when
// P > 0.
func (cv *Conv2d) patchesOf(pt *gemm.Gathered, x *Tensor, n0, gn int, trans bool) {
	h, w := x.Shape[2], x.Shape[3]
	img := cv.C * h * w
	src := x.Data[n0*img : (n0+gn)*img]
	if cv.P > 0 {
		hp, wp := h+2*cv.P, w+2*cv.P
		size := gn * cv.C * hp * wp
		whole := gn == x.Shape[0] && size <= keepPad
		switch {
		case trans && cv.kept && whole:
			src = cv.xpad[:size] // Forward's, x unchanged since
		case !trans && whole:
			buf := grow(&cv.xpad, size)
			padPlanes(buf, src, gn*cv.C, h, w, cv.P)
			src, cv.kept = buf, true
		default:
			buf := grow(&cv.ws.pad, size)
			padPlanes(buf, src, gn*cv.C, h, w, cv.P)
			src = buf
		}
	}
	*pt = gemm.Gathered{X: src, Rows: cv.fwd.rows, Cols: cv.fwd.cols[:gn*cv.oh*cv.ow]}
	if trans {
		pt.Rows, pt.Cols = pt.Cols, pt.Rows
	}
}

func (cv *Conv2d) Backward(dy *Tensor) *Tensor {
	x := cv.x
	n, h, w, p, ckk := cv.geom(x)
	if dy.cm != cv.y.cm {
		panic("nn: Conv2d.Backward: dy and y differ in layout")
	}
	if cv.dB != nil {
		img, ch := dy.planeStrides()
		for m := range n {
			for f := range cv.F {
				var s float32
				for _, v := range dy.Data[(m*img+f*ch)*p:][:p] {
					s += v
				}
				cv.dB[f] += s
			}
		}
	}
	flipped := cv.S == 1 && cv.P < cv.K
	g := groupSize(x, n, p)
	cv.buildTaps(x, h, w, g)
	if !cv.NoInputGrad {
		cv.dx.resize(x.Shape...)
		cv.dx.cm = x.cm
		if flipped {
			cv.prepareFlipped(dy, h, w, g)
		}
	}
	for n0 := 0; n0 < n; n0 += g {
		gn := min(g, n-n0)
		// dY of the group as one F × gn·P matrix (dy itself when
		// channel-major).
		dyg := dy.Data[n0*cv.F*p : (n0+gn)*cv.F*p]
		if gn > 1 && !dy.cm {
			buf := grow(&cv.ws.grid, cv.F*gn*p)
			for i := range gn {
				for f := range cv.F {
					copy(buf[f*gn*p+i*p:f*gn*p+(i+1)*p], dyg[(i*cv.F+f)*p:])
				}
			}
			dyg = buf
		}
		cv.ws.packedDY.Pack(false, cv.F, gn*p, dyg, gn*p)
		cv.patchesOf(&cv.pt, x, n0, gn, true)
		beta := float32(1)
		if cv.overwrite {
			beta, cv.overwrite = 0, false
		}
		cv.ws.mulCols(&cv.ws.packedDY, &cv.pt, beta, cv.dW, ckk)
		switch {
		case cv.NoInputGrad:
		case flipped:
			cv.dxFlipped(dy, n0, gn, h, w)
		default:
			cv.dxCol2im(dyg, n0, gn, h, w)
		}
	}
	if cv.NoInputGrad {
		return nil
	}
	return &cv.dx
}

// prepareFlipped builds the dx convolution's tap table (over dy padded by
// K-1-P) and takes its packed weights W' (C × F·K·K).
func (cv *Conv2d) prepareFlipped(dy *Tensor, h, w, g int) {
	k, pd := cv.K, cv.K-1-cv.P
	img, ch := dy.planeStrides()
	cv.bwd.build(cv.F, (cv.oh+2*pd)*(cv.ow+2*pd), k, 1, cv.ow+2*pd, h, w, g, img, ch)
	cv.pw = cv.packed(packFlip)
}

// dxFlipped computes dx of images [n0, n0+gn) as the stride-1
// convolution of dy padded by K-1-P with W'.
func (cv *Conv2d) dxFlipped(dy *Tensor, n0, gn, h, w int) {
	pd := cv.K - 1 - cv.P
	hp, wp := cv.oh+2*pd, cv.ow+2*pd
	p := cv.oh * cv.ow
	src := dy.Data[n0*cv.F*p : (n0+gn)*cv.F*p]
	if pd > 0 {
		buf := grow(&cv.ws.dpad, gn*cv.F*hp*wp)
		padPlanes(buf, src, gn*cv.F, cv.oh, cv.ow, pd)
		src = buf
	}
	hw := h * w
	cv.ptd = gemm.Gathered{X: src, Rows: cv.bwd.rows, Cols: cv.bwd.cols[:gn*hw]}
	if gn == 1 || cv.dx.cm { // dx of one image, or channel-major, is the product
		cv.ws.mulCols(cv.pw, &cv.ptd, 0, cv.dx.Data[n0*cv.C*hw:(n0+gn)*cv.C*hw], gn*hw)
		return
	}
	out := grow(&cv.ws.dgrid, cv.C*gn*hw)
	cv.ws.mulCols(cv.pw, &cv.ptd, 0, out, gn*hw)
	for i := range gn {
		for c := range cv.C {
			copy(cv.dx.Data[((n0+i)*cv.C+c)*hw:((n0+i)*cv.C+c+1)*hw], out[c*gn*hw+i*hw:])
		}
	}
}

// dxCol2im computes dx of images [n0, n0+gn) as dcol = Wᵀ dY, whose
// columns it adds into dx: row r = (c, ki, kj) of dcol, column (n, i, j)
// goes to dx[n, c, i*S+ki-P, j*S+kj-P] (col2im). Positions that fall in
// the zero padding are skipped instead of being added into a padded copy
// and dropped, and each element of dx receives its terms in increasing r,
// as a scatter over a padded copy would add them, so the bits are those
// of col2im over the padded planes. dcol is formed a few images at a time
// (about dcolChunk floats), each slice added into dx while it is still in
// cache; every element of dcol is the same sum whatever the slice.
func (cv *Conv2d) dxCol2im(dyg []float32, n0, gn, h, w int) {
	p := cv.oh * cv.ow
	ckk := cv.C * cv.K * cv.K
	pt := cv.packed(packTrans)
	step := max(1, dcolChunk/(ckk*p))
	img, ch := cv.dx.planeStrides()
	hw := h * w
	for m0 := 0; m0 < gn; m0 += step {
		m1 := min(m0+step, gn)
		cn := (m1 - m0) * p
		dcol := grow(&cv.ws.dgrid, ckk*cn)
		pt.Mul(cv.ws.gemmWorkers(), false, cn, 1, dyg[m0*p:], gn*p, 0, dcol, cn)
		col2im(cv.dx.Data[(n0+m0)*img*hw:], img*hw, ch*hw, dcol, m1-m0, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow)
	}
}

// dcolChunk is about how many floats of dcol dxCol2im forms at once
// (256 KB), so that a slice is added into dx from L2.
const dcolChunk = 1 << 16

// col2im sets dst (n images of c planes h×w, the plane of image m and
// channel ci at m*imgStride + ci*chStride) to the sum of the columns of
// dcol (c·k·k rows of n·oh·ow columns) at their taps: for r = (ci, ki,
// kj) and column (m, i, j), dst[m, ci, i*s+ki-p, j*s+kj-p] += dcol[r,
// col], terms of each element in increasing r, positions in the padding
// skipped.
func col2im(dst []float32, imgStride, chStride int, dcol []float32, n, c, h, w, k, s, p, oh, ow int) {
	for m := range n {
		for ci := range c {
			clear(dst[m*imgStride+ci*chStride:][:h*w])
		}
	}
	cols := n * oh * ow
	for ci := range c {
		for ki := range k {
			ilo, ihi := tapRange(ki, s, p, h, oh)
			for kj := range k {
				jlo, jhi := tapRange(kj, s, p, w, ow)
				if jlo >= jhi {
					continue
				}
				if ilo >= ihi {
					continue
				}
				row := dcol[((ci*k+ki)*k+kj)*cols:][:cols]
				col2imTap(dst[ci*chStride+(ilo*s+ki-p)*w+jlo*s+kj-p:], row[ilo*ow+jlo:], s,
					n, imgStride, oh*ow, ihi-ilo, s*w, ow, jhi-jlo)
			}
		}
	}
}

// tapRange returns the outputs [lo, hi) of out whose tap at offset t
// (stride s, padding p) reads inside an input of n: 0 <= o*s+t-p < n.
func tapRange(t, s, p, n, out int) (lo, hi int) {
	if p > t {
		lo = (p - t + s - 1) / s
	}
	if top := n - 1 + p - t; top >= 0 {
		hi = min(out, top/s+1)
	}
	return lo, max(lo, hi)
}

// taps is the offset table of one convolution geometry over a group of
// images. The input (i*S+ki, j*S+kj) of tap t = ki*K+kj at output (i, j)
// lies at (i*S+ki)*wp + j*S+kj in a zero-padded plane wp columns wide,
// which separates into a row part and a column part of the patch
// matrix: rows[c*K*K + t] = c*plane + ki*wp + kj and cols[n*P + i*OW + j]
// = n*C*plane + i*S*wp + j*S, element (r, col) being x[rows[r]+cols[col]]
// (a gemm.Gathered).
type taps struct {
	key        [9]int  // the geometry it was built for
	rows, cols []int32 // cols covers at least g images
}

// build sets the tables for c channels of h×w planes padded to wp columns
// (plane floats each), K×K taps at stride s, oh×ow outputs, g images; the
// planes of two images lie img planes apart, of two channels ch (NCHW: C
// and 1, channel-major: 1 and N).
func (tp *taps) build(c, plane, k, s, wp, oh, ow, g, img, ch int) {
	key := [9]int{c, plane, k, s, wp, oh, ow, img, ch}
	p := oh * ow
	if tp.rows != nil && tp.key == key && len(tp.cols) >= g*p {
		return
	}
	tp.key = key
	tp.rows = make([]int32, c*k*k)
	for ci := range c {
		for ki := range k {
			for kj := range k {
				tp.rows[(ci*k+ki)*k+kj] = int32(ci*ch*plane + ki*wp + kj)
			}
		}
	}
	tp.cols = make([]int32, g*p)
	for n := range g {
		for i := range oh {
			for j := range ow {
				tp.cols[n*p+i*ow+j] = int32(n*img*plane + i*s*wp + j*s)
			}
		}
	}
}

// chunkCols is how many columns of a patch matrix a single-goroutine
// product packs at once (see mulCols); a variable for the tests.
var chunkCols = 256

// mulCols sets out (ldc floats a row) to pa times the patch matrix pt
// plus beta times out. A replica's product on one goroutine runs
// chunkCols columns at a time, so that the packed block of B (at most
// gemm.KC × chunkCols floats, 256 KB) stays in L2 while the micro-kernel
// reads it, where one product over a whole group packed up to gemm.NC
// columns (1.2 MB for 144 rows) before using any; with more goroutines
// the product is split between them instead. Each element of C is the
// same sum in the same order whatever the chunk, so the bits do not
// depend on chunkCols. pt.Cols is left as it was.
func (ws *workspace) mulCols(pa *gemm.PackedA, pt *gemm.Gathered, beta float32, out []float32, ldc int) {
	workers, cols := ws.gemmWorkers(), pt.Cols
	if workers > 1 {
		pa.MulB(workers, len(cols), 1, pt, beta, out, ldc)
		return
	}
	for j0 := 0; j0 < len(cols); j0 += chunkCols {
		j1 := min(j0+chunkCols, len(cols))
		pt.Cols = cols[j0:j1]
		pa.MulB(1, j1-j0, 1, pt, beta, out[j0:], ldc)
	}
	pt.Cols = cols
}

func addConst(s []float32, v float32) {
	for i := range s {
		s[i] += v
	}
}
