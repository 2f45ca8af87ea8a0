package train

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// sumScratch aggregates one parameter tensor under a summed format (Int8,
// BFP8) with the lowbit kernels directly, reusing its buffers across
// tensors: StepFormatCosines' diagnostics, which measure every format
// without mapping controller regions (training reads the same sums
// through the controller, ctrlPath). Each tensor is one bucket: Int8's scale agreement is one max per
// worker and tensor.
type sumScratch struct {
	q   [][]int8 // q[k]: worker k's codes (mantissas)
	e   [][]int8 // e[k]: worker k's BFP8 block exponents
	s   []int16  // lane sums
	se  []int8   // summed block exponents
	max []float32
}

// aggregate writes into dst the decoded mean of the workers' gradients
// g[k] (each len(dst)) under format f: for Int8, scale agreement
// M = max_k lowbit.MaxAbs(g[k]), lowbit.EncodeInt8, lowbit.SumInt8,
// lowbit.DecodeInt8; for BFP8, lowbit.EncodeBFP8, lowbit.SumBFP8,
// lowbit.DecodeBFP8. A NaN or Inf is an error naming the worker.
func (s *sumScratch) aggregate(f lowbit.Format, dst []float32, g [][]float32) error {
	n, w := len(dst), len(g)
	if len(s.q) != w {
		s.q, s.e, s.max = make([][]int8, w), make([][]int8, w), make([]float32, w)
	}
	nb := lowbit.BFPBlocks(n)
	for k := range s.q {
		if cap(s.q[k]) < n {
			s.q[k] = make([]int8, n)
		}
		s.q[k] = s.q[k][:n]
		if cap(s.e[k]) < nb {
			s.e[k] = make([]int8, nb)
		}
		s.e[k] = s.e[k][:nb]
	}
	if cap(s.s) < n {
		s.s = make([]int16, n)
	}
	if cap(s.se) < nb {
		s.se = make([]int8, nb)
	}
	sum, sexp := s.s[:n], s.se[:nb]
	switch f {
	case lowbit.Int8:
		var m float32
		for k, gk := range g {
			a, err := lowbit.MaxAbs(gk)
			if err != nil {
				return fmt.Errorf("worker %d: int8 scale agreement: %w", k, err)
			}
			m = max(m, a)
		}
		scale := lowbit.Int8Scale(m)
		for k, gk := range g {
			if err := lowbit.EncodeInt8(s.q[k], gk, scale); err != nil {
				return fmt.Errorf("worker %d: int8: %w", k, err)
			}
		}
		lowbit.SumInt8(sum, s.q)
		lowbit.DecodeInt8(dst, sum, scale, w)
	case lowbit.BFP8:
		for k, gk := range g {
			if err := lowbit.EncodeBFP8(s.q[k], s.e[k], gk); err != nil {
				return fmt.Errorf("worker %d: bfp8: %w", k, err)
			}
		}
		lowbit.SumBFP8(sum, sexp, s.q, s.e)
		lowbit.DecodeBFP8(dst, sum, sexp, w)
	default:
		return fmt.Errorf("format %v is not a summed format", f)
	}
	return nil
}
