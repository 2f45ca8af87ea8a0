package nn

import "math"

// BatchNorm2d normalises each channel of an NCHW tensor (Ioffe & Szegedy),
// with PyTorch's defaults eps = 1e-5 and momentum = 0.1.
//
// Training mode, with m = N·H·W values per channel c:
//
//	μ = (1/m) Σ x,  σ² = (1/m) Σ (x-μ)²,  x̂ = (x-μ)/√(σ²+eps),  y = γ x̂ + β
//	running_mean ← (1-momentum) running_mean + momentum μ
//	running_var  ← (1-momentum) running_var  + momentum σ² m/(m-1)
//
// Inference mode uses running_mean and running_var in place of μ and σ².
// Backward (training mode), with g = dy·γ:
//
//	dγ += Σ dy x̂,  dβ += Σ dy,
//	dx = (1/√(σ²+eps)) (g - mean(g) - x̂ mean(g x̂))
//
// Sums run over each (n, c) plane with four float64 accumulators
// (elements j mod 4), added in image order: a fixed order, so results do
// not depend on scheduling.
// A 2-D input (N, C) is treated as (N, C, 1, 1).
type BatchNorm2d struct {
	C               int
	Eps, Momentum   float64
	Gamma, Beta     []float32
	dGamma, dBeta   []float32
	RunMean, RunVar []float32 // the replica's running statistics

	train  bool
	xs     []int
	xhat   []float32
	invStd []float64
	y, dx  Tensor
}

func newBatchNorm(b *builder, name string, c int) *BatchNorm2d {
	bn := &BatchNorm2d{C: c, Eps: 1e-5, Momentum: 0.1}
	bn.Gamma, bn.dGamma = b.param(name+".weight", []int{c}, constant(1))
	bn.Beta, bn.dBeta = b.param(name+".bias", []int{c}, constant(0))
	bn.RunMean = b.buffer(name+".running_mean", c, 0)
	bn.RunVar = b.buffer(name+".running_var", c, 1)
	bn.invStd = make([]float64, c)
	return bn
}

func (bn *BatchNorm2d) dims(x *Tensor) (n, hw int) {
	n = x.Shape[0]
	hw = 1
	if len(x.Shape) == 4 {
		hw = x.Shape[2] * x.Shape[3]
	}
	if x.Shape[1] != bn.C {
		panic("nn: BatchNorm2d channel mismatch")
	}
	return n, hw
}

func (bn *BatchNorm2d) Forward(x *Tensor, train bool) *Tensor {
	n, hw := bn.dims(x)
	bn.train = train
	bn.xs = append(bn.xs[:0], x.Shape...)
	bn.y.resize(x.Shape...)
	if cap(bn.xhat) < len(x.Data) {
		bn.xhat = make([]float32, len(x.Data))
	}
	bn.xhat = bn.xhat[:len(x.Data)]
	m := n * hw
	for c := 0; c < bn.C; c++ {
		var mean, inv float64
		if train {
			var s float64
			for i := 0; i < n; i++ {
				s += sum64(x.Data[(i*bn.C+c)*hw : (i*bn.C+c+1)*hw])
			}
			mean = s / float64(m)
			var ss float64
			for i := 0; i < n; i++ {
				ss += sqDev64(x.Data[(i*bn.C+c)*hw:(i*bn.C+c+1)*hw], mean)
			}
			variance := ss / float64(m)
			inv = 1 / math.Sqrt(variance+bn.Eps)
			unbiased := variance
			if m > 1 {
				unbiased = ss / float64(m-1)
			}
			mom := bn.Momentum
			bn.RunMean[c] = float32((1-mom)*float64(bn.RunMean[c]) + mom*mean)
			bn.RunVar[c] = float32((1-mom)*float64(bn.RunVar[c]) + mom*unbiased)
		} else {
			mean = float64(bn.RunMean[c])
			inv = 1 / math.Sqrt(float64(bn.RunVar[c])+bn.Eps)
		}
		bn.invStd[c] = inv
		mu, is, g, b := float32(mean), float32(inv), bn.Gamma[c], bn.Beta[c]
		for i := 0; i < n; i++ {
			off := (i*bn.C + c) * hw
			xs := x.Data[off : off+hw]
			xh := bn.xhat[off : off+hw][:len(xs)] // equal lengths: no bounds checks
			ys := bn.y.Data[off : off+hw][:len(xs)]
			for j, v := range xs {
				h := (v - mu) * is
				xh[j] = h
				ys[j] = g*h + b
			}
		}
	}
	return &bn.y
}

func (bn *BatchNorm2d) Backward(dy *Tensor) *Tensor {
	n := bn.xs[0]
	hw := len(dy.Data) / (n * bn.C)
	m := float64(n * hw)
	bn.dx.resize(bn.xs...)
	for c := 0; c < bn.C; c++ {
		var sdy, sdyx float64
		for i := 0; i < n; i++ {
			off := (i*bn.C + c) * hw
			a, b := sumDot64(dy.Data[off:off+hw], bn.xhat[off:off+hw])
			sdy += a
			sdyx += b
		}
		bn.dGamma[c] += float32(sdyx)
		bn.dBeta[c] += float32(sdy)
		g := bn.Gamma[c]
		if !bn.train {
			k := g * float32(bn.invStd[c])
			for i := 0; i < n; i++ {
				off := (i*bn.C + c) * hw
				for j, d := range dy.Data[off : off+hw] {
					bn.dx.Data[off+j] = k * d
				}
			}
			continue
		}
		// g·mean(dy) and g·mean(dy x̂) are the two means in the formula.
		k := float32(float64(g) * bn.invStd[c])
		mdy := float32(sdy / m)
		mdyx := float32(sdyx / m)
		for i := 0; i < n; i++ {
			off := (i*bn.C + c) * hw
			ds := dy.Data[off : off+hw]
			xh := bn.xhat[off : off+hw][:len(ds)]
			dx := bn.dx.Data[off : off+hw][:len(ds)]
			for j, d := range ds {
				dx[j] = k * (d - mdy - xh[j]*mdyx)
			}
		}
	}
	return &bn.dx
}

// sum64 returns Σ s in float64, with four accumulators (s[j], j mod 4)
// so that the additions do not wait on each other, combined as
// (a0+a1)+(a2+a3).
func sum64(s []float32) float64 {
	var a0, a1, a2, a3 float64
	j := 0
	for ; j+4 <= len(s); j += 4 {
		a0 += float64(s[j])
		a1 += float64(s[j+1])
		a2 += float64(s[j+2])
		a3 += float64(s[j+3])
	}
	for ; j < len(s); j++ {
		a0 += float64(s[j])
	}
	return (a0 + a1) + (a2 + a3)
}

// sqDev64 returns Σ (s-mean)² in float64, accumulated like sum64.
func sqDev64(s []float32, mean float64) float64 {
	var a0, a1, a2, a3 float64
	j := 0
	for ; j+4 <= len(s); j += 4 {
		d0, d1 := float64(s[j])-mean, float64(s[j+1])-mean
		d2, d3 := float64(s[j+2])-mean, float64(s[j+3])-mean
		a0 += d0 * d0
		a1 += d1 * d1
		a2 += d2 * d2
		a3 += d3 * d3
	}
	for ; j < len(s); j++ {
		d := float64(s[j]) - mean
		a0 += d * d
	}
	return (a0 + a1) + (a2 + a3)
}

// sumDot64 returns Σ a and Σ a·b in float64, accumulated like sum64.
func sumDot64(a, b []float32) (sa, sab float64) {
	b = b[:len(a)]
	var s0, s1, s2, s3, p0, p1, p2, p3 float64
	j := 0
	for ; j+4 <= len(a); j += 4 {
		x0, x1, x2, x3 := float64(a[j]), float64(a[j+1]), float64(a[j+2]), float64(a[j+3])
		s0 += x0
		s1 += x1
		s2 += x2
		s3 += x3
		p0 += x0 * float64(b[j])
		p1 += x1 * float64(b[j+1])
		p2 += x2 * float64(b[j+2])
		p3 += x3 * float64(b[j+3])
	}
	for ; j < len(a); j++ {
		s0 += float64(a[j])
		p0 += float64(a[j]) * float64(b[j])
	}
	return (s0 + s1) + (s2 + s3), (p0 + p1) + (p2 + p3)
}
