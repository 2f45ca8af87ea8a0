package nn

import (
	"fmt"
	"math"
)

// Conv2d is a 2-D convolution (cross-correlation, as in PyTorch) with a
// square K×K kernel, stride S and zero padding P, computed as im2col + GEMM.
//
//	x (N, C, H, W), weight (F, C, K, K), bias (F) if present,
//	y (N, F, OH, OW) with OH = (H+2P-K)/S+1, OW = (W+2P-K)/S+1
//	y[n,f,i,j] = b[f] + Σ_{c,p,q} W[f,c,p,q] · x[n,c,S*i+p-P,S*j+q-P]
//
// With col_n the (C·K·K) × (OH·OW) im2col matrix of image n, row
// (c*K+p)*K+q and column i*OW + j, and Y_n, dY_n image n of y and dy read
// as F × OH·OW matrices (which they are in NCHW):
//
//	forward:  Y_n = W col_n
//	backward: dW += dY_n col_nᵀ,  db += row sums of dY_n,
//	          dcol_n = Wᵀ dY_n,   dx_n = col2im(dcol_n)
//
// one image at a time, so that col_n stays in cache and Y_n, dY_n need no
// re-layout. When OH·OW < perImageMin the per-image GEMMs are too thin to
// run well; the layer then builds one col matrix for the whole batch
// (columns n*OH*OW + i*OW + j) and scatters Y from, and gathers dY into,
// the F × N·OH·OW layout of that product.
//
// The col matrices live in the replica's workspace and are rebuilt in
// Backward, so a deep network needs only one col buffer per replica.
type Conv2d struct {
	C, F, K, S, P int
	W, B          []float32 // B is nil without bias
	dW, dB        []float32
	// NoInputGrad skips dx (the first layer of a network).
	NoInputGrad bool

	ws    *workspace
	x     *Tensor
	oh    int
	ow    int
	y, dx Tensor
	dyT   []float32 // dY gathered to F × N·OH·OW (batched path)
}

// perImageMin is the smallest OH·OW for which Conv2d runs its GEMMs one
// image at a time (see Conv2d).
const perImageMin = 64

func newConv(b *builder, name string, c, f, k, s, p int, bias bool) *Conv2d {
	cv := &Conv2d{C: c, F: f, K: k, S: s, P: p, ws: b.ws}
	cv.W, cv.dW = b.param(name+".weight", []int{f, c, k, k}, b.kaimingNormal(f*k*k))
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
	cv.x = x
	cv.oh = (x.Shape[2]+2*cv.P-cv.K)/cv.S + 1
	cv.ow = (x.Shape[3]+2*cv.P-cv.K)/cv.S + 1
	n, h, w, p, ckk := cv.geom(x)
	cv.y.resize(n, cv.F, cv.oh, cv.ow)
	if p >= perImageMin {
		var beta float32 // y = W col + bias: start from the bias
		if cv.B != nil {
			beta = 1
			for i := 0; i < n*cv.F; i++ {
				row := cv.y.Data[i*p : (i+1)*p]
				for j := range row {
					row[j] = cv.B[i%cv.F]
				}
			}
		}
		col := cv.ws.colBuf(ckk * p)
		img := cv.C * h * w
		cv.ws.packA(false, cv.F, ckk, cv.W, ckk) // W once for every image
		for i := 0; i < n; i++ {
			im2col(x.Data[i*img:(i+1)*img], 1, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow, col)
			cv.ws.mulPacked(false, p, 1, col, p, beta, cv.y.Data[i*cv.F*p:(i+1)*cv.F*p], p)
		}
		return &cv.y
	}
	np := n * p
	col := cv.ws.colBuf(ckk * np)
	im2col(x.Data, n, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow, col)
	out := cv.ws.dcolBuf(cv.F * np)
	cv.ws.gemm(false, false, cv.F, np, ckk, 1, cv.W, ckk, col, np, 0, out, np)
	for f := 0; f < cv.F; f++ {
		var bias float32
		if cv.B != nil {
			bias = cv.B[f]
		}
		for i := 0; i < n; i++ {
			dst := cv.y.Data[(i*cv.F+f)*p : (i*cv.F+f+1)*p]
			for j, v := range out[f*np+i*p : f*np+(i+1)*p] {
				dst[j] = v + bias
			}
		}
	}
	return &cv.y
}

func (cv *Conv2d) Backward(dy *Tensor) *Tensor {
	x := cv.x
	n, h, w, p, ckk := cv.geom(x)
	if cv.dB != nil {
		for i := 0; i < n*cv.F; i++ {
			var s float32
			for _, v := range dy.Data[i*p : (i+1)*p] {
				s += v
			}
			cv.dB[i%cv.F] += s
		}
	}
	if !cv.NoInputGrad {
		cv.dx.resize(x.Shape...)
	}
	if p >= perImageMin {
		col := cv.ws.colBuf(ckk * p)
		dcol := cv.ws.dcolBuf(ckk * p)
		img := cv.C * h * w
		if !cv.NoInputGrad {
			cv.ws.packA(true, ckk, cv.F, cv.W, ckk) // Wᵀ once for every image
		}
		for i := 0; i < n; i++ {
			dyi := dy.Data[i*cv.F*p : (i+1)*cv.F*p]
			im2col(x.Data[i*img:(i+1)*img], 1, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow, col)
			cv.ws.gemm(false, true, cv.F, ckk, p, 1, dyi, p, col, p, 1, cv.dW, ckk)
			if cv.NoInputGrad {
				continue
			}
			cv.ws.mulPacked(false, p, 1, dyi, p, 0, dcol, p)
			col2im(dcol, 1, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow, cv.dx.Data[i*img:(i+1)*img])
		}
		if cv.NoInputGrad {
			return nil
		}
		return &cv.dx
	}
	np := n * p
	if cap(cv.dyT) < cv.F*np {
		cv.dyT = make([]float32, cv.F*np)
	}
	dyT := cv.dyT[:cv.F*np]
	for i := 0; i < n; i++ {
		for f := 0; f < cv.F; f++ {
			copy(dyT[f*np+i*p:f*np+(i+1)*p], dy.Data[(i*cv.F+f)*p:(i*cv.F+f+1)*p])
		}
	}
	col := cv.ws.colBuf(ckk * np)
	im2col(x.Data, n, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow, col)
	cv.ws.gemm(false, true, cv.F, ckk, np, 1, dyT, np, col, np, 1, cv.dW, ckk)
	if cv.NoInputGrad {
		return nil
	}
	dcol := cv.ws.dcolBuf(ckk * np)
	cv.ws.gemm(true, false, ckk, np, cv.F, 1, cv.W, ckk, dyT, np, 0, dcol, np)
	col2im(dcol, n, cv.C, h, w, cv.K, cv.S, cv.P, cv.oh, cv.ow, cv.dx.Data)
	return &cv.dx
}

// validRange returns the output indices [lo, hi) whose input index
// o*s - pad + k lies in [0, size).
func validRange(size, k, s, pad, out int) (lo, hi int) {
	// o*s - pad + k >= 0  <=>  o >= (pad-k)/s rounded up
	lo = 0
	if pad-k > 0 {
		lo = (pad - k + s - 1) / s
	}
	// o*s - pad + k <= size-1  <=>  o <= (size-1+pad-k)/s
	hi = out
	if lim := size - 1 + pad - k; lim < 0 {
		hi = 0
	} else if h := lim/s + 1; h < hi {
		hi = h
	}
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

// im2col writes the (C·K·K) × (N·OH·OW) patch matrix of the n images
// x (N, C, H, W) into col.
func im2col(x []float32, n, c, h, w, k, s, pad, oh, ow int, col []float32) {
	p := oh * ow
	np := n * p
	for ci := 0; ci < c; ci++ {
		for ki := 0; ki < k; ki++ {
			ilo, ihi := validRange(h, ki, s, pad, oh)
			for kj := 0; kj < k; kj++ {
				jlo, jhi := validRange(w, kj, s, pad, ow)
				row := col[((ci*k+ki)*k+kj)*np : ((ci*k+ki)*k+kj+1)*np]
				for ni := 0; ni < n; ni++ {
					src := x[(ni*c+ci)*h*w : (ni*c+ci+1)*h*w]
					dst := row[ni*p : (ni+1)*p]
					for i := 0; i < oh; i++ {
						d := dst[i*ow : (i+1)*ow]
						if i < ilo || i >= ihi {
							zero(d)
							continue
						}
						zero(d[:jlo])
						zero(d[jhi:])
						base := (i*s-pad+ki)*w - pad + kj
						if s == 1 {
							copy(d[jlo:jhi], src[base+jlo:base+jhi])
							continue
						}
						for j := jlo; j < jhi; j++ {
							d[j] = src[base+j*s]
						}
					}
				}
			}
		}
	}
}

// col2im adds the columns of dcol back into the n images dx (N, C, H, W),
// zeroed first: the adjoint of im2col.
func col2im(dcol []float32, n, c, h, w, k, s, pad, oh, ow int, dx []float32) {
	zero(dx)
	p := oh * ow
	np := n * p
	for ci := 0; ci < c; ci++ {
		for ki := 0; ki < k; ki++ {
			ilo, ihi := validRange(h, ki, s, pad, oh)
			for kj := 0; kj < k; kj++ {
				jlo, jhi := validRange(w, kj, s, pad, ow)
				row := dcol[((ci*k+ki)*k+kj)*np : ((ci*k+ki)*k+kj+1)*np]
				for ni := 0; ni < n; ni++ {
					dst := dx[(ni*c+ci)*h*w : (ni*c+ci+1)*h*w]
					src := row[ni*p : (ni+1)*p]
					for i := ilo; i < ihi; i++ {
						sr := src[i*ow : (i+1)*ow]
						base := (i*s-pad+ki)*w - pad + kj
						if s == 1 {
							d := dst[base+jlo : base+jhi]
							for j, v := range sr[jlo:jhi] {
								d[j] += v
							}
							continue
						}
						for j := jlo; j < jhi; j++ {
							dst[base+j*s] += sr[j]
						}
					}
				}
			}
		}
	}
}
