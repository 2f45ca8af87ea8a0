package lowbit

import (
	"math"
	"math/rand/v2"
)

// EdgeGradient draws one gradient value so that the inputs whose sign
// encoding is most often wrong are common: 1/8 exact zeros, 1/8 -0, 1/8
// the smallest denormal times -1, 0 or +1, the rest N(0,1). It is the one
// test-vector distribution of the sign encoders' checks (lowbit, host and
// train tests, and cxl's functional tester).
func EdgeGradient(r *rand.Rand) float32 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return float32(math.Copysign(0, -1))
	case 2:
		return math.SmallestNonzeroFloat32 * float32(r.IntN(3)-1)
	}
	return float32(r.NormFloat64())
}

// EdgeGradients returns w workers of n EdgeGradient values, worker after
// worker.
func EdgeGradients(r *rand.Rand, w, n int) [][]float32 {
	g := make([][]float32, w)
	for k := range g {
		g[k] = make([]float32, n)
		for i := range g[k] {
			g[k][i] = EdgeGradient(r)
		}
	}
	return g
}
