package lowbit

import (
	"math"
	"math/big"
)

// This file holds the reference loops: plain per-element code written from
// the paper's Section 2 definitions, independent of the packing and SWAR
// tricks of the fast kernels. Tests, the functional tester and the hardware
// co-simulation use them as oracles.

// RefSign returns sgn(a): +1, 0 or -1.
func RefSign(a int) int8 {
	switch {
	case a > 0:
		return 1
	case a < 0:
		return -1
	}
	return 0
}

// RefGateKeeps reports whether the gate keeps element i (flattened index)
// whose vote margin is a. It is meaningful for GatePattern and GateMargin;
// GateWorker gates per worker, not per element, and always keeps here.
func RefGateKeeps(g Gate, i, a int) bool {
	switch g.Kind {
	case GatePattern:
		p := g.period()
		return i%p != p-1
	case GateMargin:
		if a < 0 {
			a = -a
		}
		return a >= g.Threshold
	}
	return true
}

// RefAggregate computes the aggregate of W workers' FP32 gradients g[k][i]
// straight from the definitions, with no packing: b = 1{g > 0}, a = 2c - W,
// u = sgn(a), and for G-Ternary the gate. For GateWorker, worker k votes on
// element i only when |g[k][i]| > tau, and a = P - N over those workers.
// base is the flattened index of element 0. Non-finite inputs are the
// caller's to exclude.
func RefAggregate(g [][]float32, s Spec, tau float32, base int) []int8 {
	w := len(g)
	if w == 0 {
		return nil
	}
	n := len(g[0])
	out := make([]int8, n)
	for i := range n {
		a := 0
		for k := range w {
			v := g[k][i]
			if s.Format == Ternary && s.Gate.Kind == GateWorker {
				if v > tau || v < -tau {
					if v > 0 {
						a++
					} else {
						a--
					}
				}
				continue
			}
			if v > 0 {
				a++
			} else {
				a--
			}
		}
		u := RefSign(a)
		if s.Format == Ternary && !RefGateKeeps(s.Gate, base+i, a) {
			u = 0
		}
		out[i] = u
	}
	return out
}

// RefCount returns c[i], the number of workers with g[k][i] > 0.
func RefCount(g [][]float32) []int {
	if len(g) == 0 {
		return nil
	}
	out := make([]int, len(g[0]))
	for _, gk := range g {
		for i, v := range gk {
			if v > 0 {
				out[i]++
			}
		}
	}
	return out
}

// RefCountPacket returns the byte-level count of each element-major packet
// byte over its low w bits, one bit at a time.
func RefCountPacket(src []byte, w int) []int {
	out := make([]int, len(src))
	for i, b := range src {
		for k := range w {
			if b&(1<<k) != 0 {
				out[i]++
			}
		}
	}
	return out
}

// RefAggregatePacket computes the aggregate of element-major packets one
// bit at a time: a = (#set) - (#clear) over the low W bits, or, for
// GateWorker, over the workers whose gate bit is set. gates may be nil
// unless the spec uses GateWorker.
func RefAggregatePacket(signs, gates []byte, s Spec, base int) []int8 {
	out := make([]int8, len(signs))
	for i, b := range signs {
		a := 0
		for k := range s.Workers {
			if s.GateBits() && gates[i]&(1<<k) == 0 {
				continue
			}
			if b&(1<<k) != 0 {
				a++
			} else {
				a--
			}
		}
		u := RefSign(a)
		if s.Format == Ternary && !RefGateKeeps(s.Gate, base+i, a) {
			u = 0
		}
		out[i] = u
	}
	return out
}

// RefAggregatePlanes computes the aggregate of n elements of worker-major
// bit-planes one bit at a time.
func RefAggregatePlanes(signs, gates [][]byte, n int, s Spec, base int) []int8 {
	out := make([]int8, n)
	for i := range n {
		a := 0
		for k := range s.Workers {
			if s.GateBits() && gates[k][i/8]&(1<<(i%8)) == 0 {
				continue
			}
			if signs[k][i/8]&(1<<(i%8)) != 0 {
				a++
			} else {
				a--
			}
		}
		u := RefSign(a)
		if s.Format == Ternary && !RefGateKeeps(s.Gate, base+i, a) {
			u = 0
		}
		out[i] = u
	}
	return out
}

// The reference loops of the conservative formats (fixed.go) are written
// from the formulas with other arithmetic: rounding by floor and a tie
// test instead of math.RoundToEven, exponents by comparing with powers of
// two instead of math.Frexp, alignment by floor division with no cap on
// the shift, sums in int64 and the decoders' division in math/big.

// refRoundHalfEven rounds x to the nearest integer, ties to even.
func refRoundHalfEven(x float64) float64 {
	f := math.Floor(x)
	switch d := x - f; {
	case d > 0.5:
		return f + 1
	case d < 0.5:
		return f
	}
	if math.Mod(f, 2) == 0 {
		return f
	}
	return f + 1
}

// refClampCode clamps an integer-valued x to [-127, 127].
func refClampCode(x float64) int8 {
	if x > Int8Max {
		return Int8Max
	}
	if x < -Int8Max {
		return -Int8Max
	}
	return int8(x)
}

// refSaturate clamps a lane sum to int16.
func refSaturate(s int64) int16 {
	if s > SumMax {
		return SumMax
	}
	if s < SumMin {
		return SumMin
	}
	return int16(s)
}

// RefEncodeInt8 returns clamp(roundHalfEven(g[i] / scale), -127, 127) per
// element (float32 division), 0 for scale 0.
func RefEncodeInt8(g []float32, scale float32) []int8 {
	out := make([]int8, len(g))
	if scale == 0 {
		return out
	}
	for i, v := range g {
		q := v / scale
		out[i] = refClampCode(refRoundHalfEven(float64(q)))
	}
	return out
}

// RefSumInt8 returns clamp(sum_k src[k][i], -32768, 32767) per element.
func RefSumInt8(src [][]int8) []int16 {
	if len(src) == 0 {
		return nil
	}
	out := make([]int16, len(src[0]))
	for i := range out {
		var s int64
		for k := range src {
			s += int64(src[k][i])
		}
		out[i] = refSaturate(s)
	}
	return out
}

// refMean returns float32(v * 2^p * scale / w), the product exact and the
// division rounded once to float64, in math/big; a quotient beyond the
// largest float32 reads as ±math.MaxFloat32 (a mean of finite values).
func refMean(v int64, p int, scale float64, w int) float32 {
	x := new(big.Float).SetPrec(200).SetInt64(v)
	x.SetMantExp(x, p)
	x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(scale))
	q := new(big.Float).SetPrec(53).Quo(x, new(big.Float).SetInt64(int64(w)))
	f, _ := q.Float64()
	if math.Abs(f) > math.MaxFloat32 {
		return float32(math.Copysign(math.MaxFloat32, f))
	}
	return float32(f)
}

// RefDecodeInt8 returns the mean float32(float64(sum[i]) * scale / w),
// clamped to ±math.MaxFloat32.
func RefDecodeInt8(sum []int16, scale float32, w int) []float32 {
	out := make([]float32, len(sum))
	for i, v := range sum {
		out[i] = refMean(int64(v), 0, float64(scale), w)
	}
	return out
}

// refBlockExponent returns the e with 2^(e-1) <= m < 2^e, clamped to
// [BFPMinExp, BFPMaxExp], BFPMinExp for m = 0.
func refBlockExponent(m float64) int {
	if m == 0 {
		return BFPMinExp
	}
	e := BFPMinExp
	for e < BFPMaxExp && m >= math.Ldexp(1, e) {
		e++
	}
	return e
}

// RefEncodeBFP8 returns the BFP8 mantissas and block exponents of g.
func RefEncodeBFP8(g []float32) (mant, exp []int8) {
	mant = make([]int8, len(g))
	exp = make([]int8, BFPBlocks(len(g)))
	for b := range exp {
		var m float64
		for i := b * BFPBlock; i < len(g) && i < (b+1)*BFPBlock; i++ {
			m = math.Max(m, math.Abs(float64(g[i])))
		}
		e := refBlockExponent(m)
		exp[b] = int8(e)
		for i := b * BFPBlock; i < len(g) && i < (b+1)*BFPBlock; i++ {
			x := float64(g[i]) * math.Pow(2, float64(7-e))
			mant[i] = refClampCode(refRoundHalfEven(x))
		}
	}
	return mant, exp
}

// RefSumBFP8 aligns each worker's mantissas to the block's largest
// exponent E by floor((m + 2^(d-1)) / 2^d), d = E - e with no cap, and
// sums with saturation. n is the element count.
func RefSumBFP8(mant [][]int8, exp [][]int8, n int) (sum []int16, e []int8) {
	sum = make([]int16, n)
	e = make([]int8, BFPBlocks(n))
	for b := range e {
		top := BFPMinExp
		for k := range exp {
			top = max(top, int(exp[k][b]))
		}
		e[b] = int8(top)
		for i := b * BFPBlock; i < n && i < (b+1)*BFPBlock; i++ {
			var s int64
			for k := range mant {
				d := top - int(exp[k][b])
				m := float64(mant[k][i])
				if d > 0 {
					m = math.Floor((m + math.Pow(2, float64(d-1))) / math.Pow(2, float64(d)))
				}
				s += int64(m)
			}
			sum[i] = refSaturate(s)
		}
	}
	return sum, e
}

// RefDecodeBFP8 returns the mean float32(mant[i] 2^(E-7) / w).
func RefDecodeBFP8(mant []int16, exp []int8, w int) []float32 {
	out := make([]float32, len(mant))
	for i, v := range mant {
		out[i] = refMean(int64(v), int(exp[i/BFPBlock])-7, 1, w)
	}
	return out
}
