package lowbit

import "fmt"

// sumKernels are an integer-sum format's encode, read-side transform and
// decode, with the plain reference twin of its transform: the row of the
// format registry that lets every layer which moves such a payload (the
// controller model, the host runtime, payload files, training, the RTL's
// oracle) call one method instead of branching on the format.
//
// Every format of the family shares one payload shape: W workers' codes,
// one int8 per element; exps is a side plane of one int8 per BFPBlock
// elements, used by formats with BlockExponents (nil or ignored
// elsewhere); scale is the agreed scale of a Scaled format (ignored
// elsewhere).
type sumKernels struct {
	// scale, when set, turns the workers' largest |g| into their agreed
	// scale (Scaled), and checkScale accepts exactly the scales an
	// agreement produces; blockExps: the format writes the exps side plane
	// (BlockExponents).
	scale      func(maxAbs float32) float32
	checkScale func(scale float32) error
	blockExps  bool
	encode     func(codes, exps []int8, g []float32, scale float32) error
	sum        func(sums []int16, exps []int8, codes, wexps [][]int8)
	decode     func(dst []float32, sums []int16, exps []int8, scale float32, w int)
	refSum     func(codes, wexps [][]int8, n int) ([]int16, []int8)
}

var int8Kernels = sumKernels{
	scale:      Int8Scale,
	checkScale: CheckInt8Scale,
	encode:     func(codes, _ []int8, g []float32, scale float32) error { return EncodeInt8(codes, g, scale) },
	sum:        func(sums []int16, _ []int8, codes, _ [][]int8) { SumInt8(sums, codes) },
	decode:     func(dst []float32, sums []int16, _ []int8, scale float32, w int) { DecodeInt8(dst, sums, scale, w) },
	refSum: func(codes, _ [][]int8, n int) ([]int16, []int8) {
		if len(codes) == 0 {
			return make([]int16, n), nil
		}
		return RefSumInt8(codes), nil
	},
}

var bfp8Kernels = sumKernels{
	blockExps: true,
	encode:    func(codes, exps []int8, g []float32, _ float32) error { return EncodeBFP8(codes, exps, g) },
	sum:       SumBFP8,
	decode:    func(dst []float32, sums []int16, exps []int8, _ float32, w int) { DecodeBFP8(dst, sums, exps, w) },
	refSum:    RefSumBFP8,
}

// kernels returns f's sum kernels; f must be a sum format.
func (f Format) kernels() *sumKernels {
	if !f.Sum() {
		panic(fmt.Sprintf("lowbit: %v is not an integer-sum format", f))
	}
	return formatTraits[f].sum
}

// EncodeCodes writes one worker's payload of g under the integer-sum
// format f: len(g) codes into codes and, when f has BlockExponents,
// BFPBlocks(len(g)) exponents into exps. scale is the agreed scale of a
// Scaled format (Int8Scale of the workers' largest |g|) and is ignored
// otherwise. It is EncodeInt8 or EncodeBFP8; a NaN or Inf returns a
// *NonFiniteError. It panics when f is not a sum format.
func (f Format) EncodeCodes(codes, exps []int8, g []float32, scale float32) error {
	return f.kernels().encode(codes, exps, g, scale)
}

// SumCodes is f's read-side transform: it writes the saturated lane sums
// of the W workers' codes into sums (len(sums) elements; every codes[k]
// as long) and, when f has BlockExponents, the exponent each block was
// aligned to into exps (wexps[k] holding worker k's). It is SumInt8 or
// SumBFP8. It panics when f is not a sum format.
func (f Format) SumCodes(sums []int16, exps []int8, codes, wexps [][]int8) {
	f.kernels().sum(sums, exps, codes, wexps)
}

// DecodeSums writes the workers' mean, decoded from SumCodes's sums and
// exponents, into dst: DecodeInt8 at scale or DecodeBFP8. w is the
// number of workers summed, at least 1. It panics when f is not a sum
// format.
func (f Format) DecodeSums(dst []float32, sums []int16, exps []int8, scale float32, w int) {
	f.kernels().decode(dst, sums, exps, scale, w)
}

// RefSumCodes is SumCodes's plain reference twin (RefSumInt8,
// RefSumBFP8), written from the format's definition: the n lane sums and
// the block exponents (nil without BlockExponents). It panics when f is
// not a sum format.
func (f Format) RefSumCodes(codes, wexps [][]int8, n int) ([]int16, []int8) {
	return f.kernels().refSum(codes, wexps, n)
}
