package lowbit

import (
	"encoding/binary"
	"fmt"
	"math"
)

// This file holds the conservative formats, Int8 and BFP8, which go beyond
// the paper (Sec. 1: "more conservative formats are compatible with the
// same admission framework"). Both are summed, not voted: the controller
// adds integer lanes and the host decodes the sum to the workers' mean.
//
// # Int8
//
// The W workers first agree on one scale per bucket, s = M / 127 with M
// the largest |g| any worker holds (a max-reduce of one float32 each,
// ScaleBits of traffic). Then, in float32 arithmetic,
//
//	q[k,i] = clamp(roundHalfEven(g[k,i] / s), -127, 127)   s = 0 gives q = 0
//	S[i]   = clamp(sum_k q[k,i], -32768, 32767)            exact for W <= MaxSumWorkers = 258
//	mean   = float32(clamp(float64(S[i]) * float64(s) / float64(W), ±MaxFloat32))
//
// -128 is never written, so the code is symmetric. The clamp only matters
// at the top of the range: s = Int8Scale(MaxFloat32) rounds up, so 127 s
// lies a hair above the largest float32, and the mean of finite gradients
// must not read back as Inf. A scale above MaxInt8Scale, or one that is
// negative (-0 too) or not finite, is refused wherever one is read
// (CheckInt8Scale).
//
// # BFP8
//
// Each worker picks its own exponent per block of BFPBlock elements: with
// M the block's largest |g|, e = the frexp exponent of M (M = f 2^e,
// f in [0.5, 1)), clamped to [BFPMinExp, BFPMaxExp], and BFPMinExp for an
// all-zero block. Then
//
//	m[k,i] = clamp(roundHalfEven(g[k,i] 2^(7-e[k])), -127, 127)    exact in float64
//	E      = max_k e[k]
//	a[k,i] = m[k,i]                            if E = e[k]
//	       = (m[k,i] + 2^(d-1)) >> d           d = min(E - e[k], 8), arithmetic shift
//	S[i]   = clamp(sum_k a[k,i], -32768, 32767)
//	mean   = float32(float64(S[i]) 2^(E-7) / float64(W))
//
// The shift rounds to nearest with ties toward +inf; capping d at 8
// changes nothing, because every m in [-127, 127] shifts to 0 for d >= 8.
//
// # Lines
//
// A worker's Int8 or BFP8 mantissa payload is 64 int8 per line (byte i =
// element i, two's complement); BFP8 adds exponent lines of
// BFPExponentsPerLine exponents. A sum view line holds SumViewElements
// int16 sums, little endian (PutInt16s), so one payload line reads back as
// two view lines.

const (
	// Int8Max is the largest Int8 or BFP8 mantissa code; the smallest is
	// -Int8Max.
	Int8Max = 127
	// ScaleBits is the traffic of Int8's scale agreement: one float32 per
	// worker and bucket.
	ScaleBits = 32
	// BFPBlock is how many elements share one BFP8 exponent: one line.
	BFPBlock = LineBytes
	// BFPExponentsPerLine is how many block exponents one line holds.
	BFPExponentsPerLine = LineBytes
	// BFPMinExp and BFPMaxExp bound a BFP8 block exponent.
	BFPMinExp, BFPMaxExp = -127, 127
	// SumViewElements is how many int16 lane sums one view line returns.
	SumViewElements = LineBytes / 2
	// SumMin and SumMax are the saturation bounds of a lane sum.
	SumMin, SumMax = math.MinInt16, math.MaxInt16
	// MaxSumWorkers is the most workers an integer-sum format (Int8,
	// BFP8) aggregates exactly: W codes in [-127, 127] sum to at most
	// 127 W in magnitude, which fits an int16 lane for W <= 32767/127 =
	// 258. More workers could saturate a lane and return a wrong mean
	// without a sign of it (300 workers of all-ones read back 0.860), so
	// every layer refuses them through CheckSumWorkers rather than
	// saturating.
	MaxSumWorkers = SumMax / Int8Max
)

// CheckSumWorkers returns nil when w workers can write an integer-sum
// format f (Int8 or BFP8) and every lane sum is exact, 1 <= w <=
// MaxSumWorkers; otherwise an error naming f, w and the bound. A format
// that is not summed returns nil (its own layout bounds its workers). It
// is the one rule payload specs, controller regions, training policies,
// the format ladder and the service apply.
func CheckSumWorkers(f Format, w int) error {
	if !f.Sum() {
		return nil
	}
	if w < 1 || w > MaxSumWorkers {
		return fmt.Errorf("format %v sums 1 to %d workers exactly (an int16 lane holds 127 x %d), not %d; g-binary and g-ternary carry up to %d workers worker-major", f, MaxSumWorkers, MaxSumWorkers, w, MaxWorkers)
	}
	return nil
}

// BFPBlocks returns how many BFP8 blocks (and exponents) n elements need:
// ceil(n / BFPBlock).
func BFPBlocks(n int) int { return (n + BFPBlock - 1) / BFPBlock }

// MaxAbs returns max_i |g[i]| (0 for an empty g), the value a worker
// contributes to Int8's scale agreement. A NaN or Inf returns a
// *NonFiniteError for the first one.
func MaxAbs(g []float32) (float32, error) {
	m, bad := maxAbs(g)
	if bad >= 0 {
		return 0, &NonFiniteError{Index: bad, Value: g[bad]}
	}
	return m, nil
}

// maxAbs returns max_i |g[i]| and -1, or the index of the first NaN or
// Inf in g.
func maxAbs(g []float32) (float32, int) {
	var m float32
	for i, v := range g {
		a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		if !(a <= math.MaxFloat32) {
			return 0, i
		}
		m = max(m, a)
	}
	return m, -1
}

// Int8Scale returns the Int8 scale for an agreed maximum |g|: maxAbs/127
// in float32, and 0 for maxAbs = 0. maxAbs is MaxAbs's result, the largest
// over all workers of the bucket.
func Int8Scale(maxAbs float32) float32 {
	if maxAbs <= 0 {
		return 0
	}
	return maxAbs / Int8Max
}

// MaxInt8Scale is the largest scale an agreement produces:
// Int8Scale(math.MaxFloat32).
const MaxInt8Scale float32 = math.MaxFloat32 / Int8Max

// CheckInt8Scale returns nil for a scale some agreement can produce: +0
// (every gradient zero) or a positive float32 up to MaxInt8Scale.
// Anything else, a negative scale (-0 included: Int8Scale never returns
// it), NaN, Inf or a finite value above MaxInt8Scale (3e38 would decode a
// full code to Inf), is an error; it is the one rule payload headers,
// payloads and the encoder apply.
func CheckInt8Scale(scale float32) error {
	switch {
	case scale != scale || math.Signbit(float64(scale)):
		return fmt.Errorf("int8 scale %v is not a number >= +0 (an agreement gives max |g| / 127)", scale)
	case scale > MaxInt8Scale:
		return fmt.Errorf("int8 scale %v exceeds %v, the largest an agreement gives (max |g| = %v over 127)", scale, MaxInt8Scale, float32(math.MaxFloat32))
	}
	return nil
}

// checkScale reports a scale no agreement can produce.
func checkScale(scale float32) error { return CheckInt8Scale(scale) }

// EncodeInt8 writes q[i] = clamp(roundHalfEven(g[i] / scale), -127, 127)
// into dst, dividing in float32; scale 0 writes zeros. dst must hold
// len(g) codes. A NaN or Inf in g returns a *NonFiniteError for the first
// one (dst is then unspecified); a negative or non-finite scale is an
// error.
func EncodeInt8(dst []int8, g []float32, scale float32) error {
	if len(dst) < len(g) {
		panic("lowbit: EncodeInt8: dst too short")
	}
	if err := checkScale(scale); err != nil {
		return err
	}
	if scale == 0 {
		if err := CheckFinite(g); err != nil {
			return err
		}
		clear(dst[:len(g)])
		return nil
	}
	for i, v := range g {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return &NonFiniteError{Index: i, Value: v}
		}
		dst[i] = clampRound(float64(v / scale))
	}
	return nil
}

// clampRound clamps x to [-127, 127] and rounds it half to even. Clamping
// first is exact: the bounds are integers and rounding is monotone.
func clampRound(x float64) int8 {
	x = max(-Int8Max, min(Int8Max, x))
	return int8(math.RoundToEven(x))
}

// SumInt8 writes dst[i] = clamp(sum_k src[k][i], -32768, 32767), the
// read-side transform of Int8 and (after alignment) BFP8. Every src[k]
// must hold len(dst) codes.
func SumInt8(dst []int16, src [][]int8) {
	var acc [BFPBlock]int32
	for lo := 0; lo < len(dst); lo += BFPBlock {
		n := min(BFPBlock, len(dst)-lo)
		clear(acc[:n])
		for _, s := range src {
			s := s[lo : lo+n]
			for i, q := range s {
				acc[i] += int32(q)
			}
		}
		saturate(dst[lo:lo+n], acc[:n])
	}
}

// saturate writes clamp(acc[i], -32768, 32767) into dst.
func saturate(dst []int16, acc []int32) {
	for i, a := range acc {
		dst[i] = int16(max(SumMin, min(SumMax, a)))
	}
}

// DecodeInt8 writes the workers' mean, float32(float64(sum[i]) *
// float64(scale) / float64(w)) clamped to ±math.MaxFloat32, into dst. w
// must be at least 1.
func DecodeInt8(dst []float32, sum []int16, scale float32, w int) {
	s, fw := float64(scale), float64(w)
	for i, v := range sum {
		dst[i] = float32(max(-math.MaxFloat32, min(math.MaxFloat32, float64(v)*s/fw)))
	}
}

// blockExponent returns the BFP8 exponent of a block whose largest |g| is
// m: frexp's exponent clamped to [BFPMinExp, BFPMaxExp], BFPMinExp for 0.
func blockExponent(m float32) int8 {
	if m == 0 {
		return BFPMinExp
	}
	_, e := math.Frexp(float64(m))
	return int8(max(BFPMinExp, min(BFPMaxExp, e)))
}

// EncodeBFP8 writes the BFP8 mantissas of g into mant (len(g) codes) and
// one exponent per BFPBlock elements into exp (BFPBlocks(len(g))). A NaN
// or Inf returns a *NonFiniteError for the first one; mant and exp are
// then unspecified.
func EncodeBFP8(mant []int8, exp []int8, g []float32) error {
	if len(mant) < len(g) || len(exp) < BFPBlocks(len(g)) {
		panic("lowbit: EncodeBFP8: dst too short")
	}
	for b := range BFPBlocks(len(g)) {
		lo := b * BFPBlock
		blk := g[lo:min(lo+BFPBlock, len(g))]
		m, bad := maxAbs(blk)
		if bad >= 0 {
			return &NonFiniteError{Index: lo + bad, Value: blk[bad]}
		}
		e := blockExponent(m)
		exp[b] = e
		sh := 7 - int(e)
		for i, v := range blk {
			mant[lo+i] = clampRound(math.Ldexp(float64(v), sh))
		}
	}
	return nil
}

// SumBFP8 aligns and sums W workers' BFP8 payloads: for each block, exp
// gets E = max_k srcExp[k][b] and mant[i] = clamp(sum_k a[k,i], -32768,
// 32767), with a the mantissas shifted right by min(E - e[k], 8), rounding
// to nearest, ties toward +inf (see the file comment). len(mant) is the
// element count; exp must hold BFPBlocks(len(mant)) exponents, and every
// worker's srcMant and srcExp as many.
func SumBFP8(mant []int16, exp []int8, srcMant [][]int8, srcExp [][]int8) {
	var acc [BFPBlock]int32
	MaxExponents(exp[:BFPBlocks(len(mant))], srcExp)
	for b := range BFPBlocks(len(mant)) {
		lo := b * BFPBlock
		n := min(BFPBlock, len(mant)-lo)
		e := exp[b]
		clear(acc[:n])
		for k, sm := range srcMant {
			d := min(int32(e)-int32(srcExp[k][b]), 8)
			sm := sm[lo : lo+n]
			if d == 0 {
				for i, q := range sm {
					acc[i] += int32(q)
				}
				continue
			}
			half := int32(1) << (d - 1)
			for i, q := range sm {
				acc[i] += (int32(q) + half) >> d
			}
		}
		saturate(mant[lo:lo+n], acc[:n])
	}
}

// MaxExponents writes dst[b] = max(BFPMinExp, max_k src[k][b]), the
// exponent E that SumBFP8 aligns block b to: the controller's BFP8
// exponent view. Every src[k] must hold len(dst) exponents.
func MaxExponents(dst []int8, src [][]int8) {
	for b := range dst {
		e := int8(BFPMinExp)
		for _, se := range src {
			e = max(e, se[b])
		}
		dst[b] = e
	}
}

// DecodeBFP8 writes the workers' mean, float32(float64(mant[i]) 2^(E-7) /
// float64(w)) with E the element's block exponent, into dst. w must be at
// least 1.
func DecodeBFP8(dst []float32, mant []int16, exp []int8, w int) {
	fw := float64(w)
	for i, v := range mant {
		dst[i] = float32(math.Ldexp(float64(v), int(exp[i/BFPBlock])-7) / fw)
	}
}

// PutInt16s writes v little endian into dst (2 len(v) bytes): the bytes
// of a sum view line.
func PutInt16s(dst []byte, v []int16) {
	for i, x := range v {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(x))
	}
}

// Int16s reads len(dst) little-endian int16 from src, PutInt16s's inverse.
func Int16s(dst []int16, src []byte) {
	for i := range dst {
		dst[i] = int16(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// Int8Bytes views codes as the bytes a worker writes (two's complement),
// without copying.
func Int8Bytes(codes []int8) []byte { return int8sAsBytes(codes) }

// BytesInt8 views payload bytes as codes, without copying.
func BytesInt8(b []byte) []int8 { return unsafeInt8s(b) }
