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
// not depend on scheduling. The passes are kernels.go's (planeSums,
// planeSqDevs, bnNormalize; planeSumDots, bnBackward), assembly where the
// CPU allows, with the same bits as their reference loops.
// A 2-D input (N, C) is treated as (N, C, 1, 1).
type BatchNorm2d struct {
	C               int
	Eps, Momentum   float64
	Gamma, Beta     []float32
	dGamma, dBeta   []float32
	RunMean, RunVar []float32 // the replica's running statistics

	train  bool
	cm     bool // the last Forward's input was channel-major (Tensor.cm)
	xs     []int
	xhat   []float32
	invStd []float64
	y, dx  Tensor
	// scratch holds per-plane sums (two per image).
	scratch []float64
}

// planeScratch returns scratch[:n], with room for 2n.
func (bn *BatchNorm2d) planeScratch(n int) []float64 {
	if cap(bn.scratch) < 2*n {
		bn.scratch = make([]float64, 2*n)
	}
	bn.scratch = bn.scratch[:2*n]
	return bn.scratch[:n]
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
	bn.y.resize(x.Shape...)
	bn.y.cm = x.cm
	bn.forward(x, train, nil, nil)
	return &bn.y
}

// forwardRelu is Forward followed by r.Forward, or, when s is not nil, by
// r.Forward of the sum with the shortcut s (a residual block's end), in one pass
// that writes only r's output: y = max(BN(x), 0) or max(BN(x) + s, 0),
// the same bits as the two layers, without BatchNorm's own output.
func (bn *BatchNorm2d) forwardRelu(x *Tensor, train bool, s *Tensor, r *ReLU) *Tensor {
	r.y.resize(x.Shape...)
	r.y.cm = x.cm
	if s == nil {
		bn.forward(x, train, &r.y, nil)
	} else {
		if len(s.Data) < len(x.Data) || s.cm != x.cm {
			panic("nn: BatchNorm2d shortcut smaller than its input or in another layout")
		}
		bn.forward(x, train, &r.y, s.Data)
	}
	return &r.y
}

// forward sets the statistics, x̂ and, when relu is nil, bn.y; otherwise
// relu gets max(γ x̂ + β (+ s), 0).
func (bn *BatchNorm2d) forward(x *Tensor, train bool, relu *Tensor, s []float32) {
	n, hw := bn.dims(x)
	bn.train, bn.cm = train, x.cm
	bn.xs = append(bn.xs[:0], x.Shape...)
	if cap(bn.xhat) < len(x.Data) {
		bn.xhat = make([]float32, len(x.Data))
	}
	bn.xhat = bn.xhat[:len(x.Data)]
	m := n * hw
	base, stride := bn.planes(hw)
	ps := bn.planeScratch(n)
	for c := 0; c < bn.C; c++ {
		var mean, inv float64
		if train {
			planeSums(x.Data[c*base:], stride, hw, ps)
			var s float64
			for _, v := range ps {
				s += v
			}
			mean = s / float64(m)
			planeSqDevs(x.Data[c*base:], stride, hw, mean, ps)
			var ss float64
			for _, v := range ps {
				ss += v
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
		switch {
		case relu == nil:
			bnNormalize(x.Data[c*base:], bn.xhat[c*base:], bn.y.Data[c*base:], stride, n, hw,
				float32(mean), float32(inv), bn.Gamma[c], bn.Beta[c])
		case s == nil:
			bnNormRelu(x.Data[c*base:], bn.xhat[c*base:], nil, relu.Data[c*base:], stride, n, hw,
				float32(mean), float32(inv), bn.Gamma[c], bn.Beta[c])
		default:
			bnNormRelu(x.Data[c*base:], bn.xhat[c*base:], s[c*base:], relu.Data[c*base:], stride, n, hw,
				float32(mean), float32(inv), bn.Gamma[c], bn.Beta[c])
		}
	}
}

// planes returns where channel c's planes start (c·base) and how far
// apart its images' planes lie, for the last Forward's layout.
func (bn *BatchNorm2d) planes(hw int) (base, stride int) {
	if bn.cm {
		return bn.xs[0] * hw, hw
	}
	return hw, bn.C * hw
}

func (bn *BatchNorm2d) Backward(dy *Tensor) *Tensor {
	n := bn.xs[0]
	hw := len(dy.Data) / (n * bn.C)
	m := float64(n * hw)
	if dy.cm != bn.cm {
		panic("nn: BatchNorm2d.Backward: dy and x differ in layout")
	}
	bn.dx.resize(bn.xs...)
	bn.dx.cm = bn.cm
	base, stride := bn.planes(hw)
	sa := bn.planeScratch(n)
	sab := bn.scratch[n : 2*n]
	for c := 0; c < bn.C; c++ {
		planeSumDots(dy.Data[c*base:], bn.xhat[c*base:], stride, hw, sa, sab)
		var sdy, sdyx float64
		for i := range sa {
			sdy += sa[i]
			sdyx += sab[i]
		}
		bn.dGamma[c] += float32(sdyx)
		bn.dBeta[c] += float32(sdy)
		g := bn.Gamma[c]
		if !bn.train {
			k := g * float32(bn.invStd[c])
			for i := 0; i < n; i++ {
				off := c*base + i*stride
				for j, d := range dy.Data[off : off+hw] {
					bn.dx.Data[off+j] = k * d
				}
			}
			continue
		}
		// g·mean(dy) and g·mean(dy x̂) are the two means in the formula.
		k := float32(float64(g) * bn.invStd[c])
		bnBackward(dy.Data[c*base:], bn.xhat[c*base:], bn.dx.Data[c*base:], stride, n, hw,
			k, float32(sdy/m), float32(sdyx/m))
	}
	return &bn.dx
}

// bnReLU is a BatchNorm2d followed by a ReLU, run forward as one pass
// (forwardRelu).
type bnReLU struct {
	BN   *BatchNorm2d
	Relu ReLU
}

func (l *bnReLU) Forward(x *Tensor, train bool) *Tensor {
	return l.BN.forwardRelu(x, train, nil, &l.Relu)
}

func (l *bnReLU) Backward(dy *Tensor) *Tensor { return l.BN.Backward(l.Relu.Backward(dy)) }
