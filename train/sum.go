package train

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// sumScratch aggregates one parameter tensor under a summed format (INT8,
// BFP8) with the lowbit kernels directly, reusing its buffers across
// tensors: StepFormatCosines' diagnostics, which measure every format
// without mapping controller regions (training reads the same sums
// through the controller, ctrlPath). Each tensor is one bucket: a
// scaled format's agreement is one max per worker and tensor.
type sumScratch struct {
	q   [][]int8 // q[k]: worker k's codes (mantissas)
	e   [][]int8 // e[k]: worker k's block exponents (formats that have them)
	s   []int16  // lane sums
	se  []int8   // summed block exponents
	max []float32
}

// aggregate writes into dst the decoded mean of the workers' gradients
// g[k] (each len(dst)) under the summed format f, through f's registry
// kernels: for a Scaled format the scale agreement
// M = max_k lowbit.MaxAbs(g[k]) first, then f.EncodeCodes per worker,
// f.SumCodes and f.DecodeSums. A NaN or Inf is an error naming the
// worker.
func (s *sumScratch) aggregate(f lowbit.Format, dst []float32, g [][]float32) error {
	if !f.Sum() {
		return fmt.Errorf("format %v is not a summed format", f)
	}
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
	var scale float32
	if f.Scaled() {
		var m float32
		for k, gk := range g {
			a, err := lowbit.MaxAbs(gk)
			if err != nil {
				return fmt.Errorf("worker %d: %v scale agreement: %w", k, f, err)
			}
			m = max(m, a)
		}
		scale = f.AgreedScale(m)
	}
	for k, gk := range g {
		if err := f.EncodeCodes(s.q[k], s.e[k], gk, scale); err != nil {
			return fmt.Errorf("worker %d: %v: %w", k, f, err)
		}
	}
	f.SumCodes(sum, sexp, s.q, s.e)
	f.DecodeSums(dst, sum, sexp, scale, w)
	return nil
}
