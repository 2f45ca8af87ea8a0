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
// With col the (C·K·K) × (N·OH·OW) im2col matrix of x, row (c*K+p)*K+q and
// column n*OH*OW + i*OW + j:
//
//	forward:  Y = W col                  (F × N·OH·OW), scattered to NCHW
//	backward: dW += dY colᵀ,  db += row sums of dY,
//	          dcol = Wᵀ dY,   dx = col2im(dcol)
//
// The col matrix lives in the replica's workspace and is rebuilt in
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
	dyT   []float32 // dY gathered to F × N·OH·OW
}

func newConv(b *builder, name string, c, f, k, s, p int, bias bool) *Conv2d {
	cv := &Conv2d{C: c, F: f, K: k, S: s, P: p, ws: b.ws}
	cv.W, cv.dW = b.param(name+".weight", []int{f, c, k, k}, b.kaimingNormal(f*k*k))
	if bias {
		cv.B, cv.dB = b.param(name+".bias", []int{f}, b.uniform(1/math.Sqrt(float64(c*k*k))))
	}
	return cv
}

func (cv *Conv2d) Forward(x *Tensor, train bool) *Tensor {
	if len(x.Shape) != 4 || x.Shape[1] != cv.C {
		panic(fmt.Sprintf("nn: Conv2d(C=%d) got %v", cv.C, x))
	}
	n, h, w := x.Shape[0], x.Shape[2], x.Shape[3]
	cv.x = x
	cv.oh, cv.ow = (h+2*cv.P-cv.K)/cv.S+1, (w+2*cv.P-cv.K)/cv.S+1
	p := cv.oh * cv.ow
	np, ckk := n*p, cv.C*cv.K*cv.K
	col := cv.ws.colBuf(ckk * np)
	im2col(x, cv.K, cv.S, cv.P, cv.oh, cv.ow, col)
	// Y (F × NP) goes to dcol scratch, then is scattered to NCHW.
	out := cv.ws.dcolBuf(cv.F * np)
	gemmMode(cv.ws.serial, false, false, cv.F, np, ckk, 1, cv.W, ckk, col, np, 0, out, np)
	cv.y.resize(n, cv.F, cv.oh, cv.ow)
	for f := 0; f < cv.F; f++ {
		var bias float32
		if cv.B != nil {
			bias = cv.B[f]
		}
		for i := 0; i < n; i++ {
			dst := cv.y.Data[(i*cv.F+f)*p : (i*cv.F+f+1)*p]
			src := out[f*np+i*p : f*np+(i+1)*p]
			if bias == 0 {
				copy(dst, src)
				continue
			}
			for j, v := range src {
				dst[j] = v + bias
			}
		}
	}
	return &cv.y
}

func (cv *Conv2d) Backward(dy *Tensor) *Tensor {
	x := cv.x
	n := x.Shape[0]
	p := cv.oh * cv.ow
	np, ckk := n*p, cv.C*cv.K*cv.K
	if cap(cv.dyT) < cv.F*np {
		cv.dyT = make([]float32, cv.F*np)
	}
	dyT := cv.dyT[:cv.F*np]
	for i := 0; i < n; i++ {
		for f := 0; f < cv.F; f++ {
			copy(dyT[f*np+i*p:f*np+(i+1)*p], dy.Data[(i*cv.F+f)*p:(i*cv.F+f+1)*p])
		}
	}
	if cv.dB != nil {
		for f := 0; f < cv.F; f++ {
			var s float32
			for _, v := range dyT[f*np : (f+1)*np] {
				s += v
			}
			cv.dB[f] += s
		}
	}
	col := cv.ws.colBuf(ckk * np)
	im2col(x, cv.K, cv.S, cv.P, cv.oh, cv.ow, col)
	gemmMode(cv.ws.serial, false, true, cv.F, ckk, np, 1, dyT, np, col, np, 1, cv.dW, ckk)
	if cv.NoInputGrad {
		return nil
	}
	dcol := cv.ws.dcolBuf(ckk * np)
	gemmMode(cv.ws.serial, true, false, ckk, np, cv.F, 1, cv.W, ckk, dyT, np, 0, dcol, np)
	cv.dx.resize(x.Shape...)
	col2im(dcol, cv.K, cv.S, cv.P, cv.oh, cv.ow, &cv.dx)
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

// im2col writes the (C·K·K) × (N·OH·OW) patch matrix of x into col.
func im2col(x *Tensor, k, s, pad, oh, ow int, col []float32) {
	n, c, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	p := oh * ow
	np := n * p
	for ci := 0; ci < c; ci++ {
		for ki := 0; ki < k; ki++ {
			ilo, ihi := validRange(h, ki, s, pad, oh)
			for kj := 0; kj < k; kj++ {
				jlo, jhi := validRange(w, kj, s, pad, ow)
				row := col[((ci*k+ki)*k+kj)*np : ((ci*k+ki)*k+kj+1)*np]
				for ni := 0; ni < n; ni++ {
					src := x.Data[(ni*c+ci)*h*w : (ni*c+ci+1)*h*w]
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

// col2im adds the columns of dcol back into dx (zeroed first), the adjoint
// of im2col.
func col2im(dcol []float32, k, s, pad, oh, ow int, dx *Tensor) {
	n, c, h, w := dx.Shape[0], dx.Shape[1], dx.Shape[2], dx.Shape[3]
	zero(dx.Data)
	p := oh * ow
	np := n * p
	for ci := 0; ci < c; ci++ {
		for ki := 0; ki < k; ki++ {
			ilo, ihi := validRange(h, ki, s, pad, oh)
			for kj := 0; kj < k; kj++ {
				jlo, jhi := validRange(w, kj, s, pad, ow)
				row := dcol[((ci*k+ki)*k+kj)*np : ((ci*k+ki)*k+kj+1)*np]
				for ni := 0; ni < n; ni++ {
					dst := dx.Data[(ni*c+ci)*h*w : (ni*c+ci+1)*h*w]
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
