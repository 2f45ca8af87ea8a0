package nn

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func TestGemmModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	tests := []struct{ m, n, k int }{
		{1, 1, 1}, {64, 192, 7}, {65, 193, 70}, {300, 257, 129}, {16, 1000, 300}, {700, 20, 64},
	}
	for _, tt := range tests {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			tA, tB := tr[0], tr[1]
			a := randTensor(rng, tt.m*tt.k).Data
			b := randTensor(rng, tt.k*tt.n).Data
			c0 := randTensor(rng, tt.m*tt.n).Data
			lda, ldb := tt.k, tt.n
			if tA {
				lda = tt.m
			}
			if tB {
				ldb = tt.k
			}
			par := append([]float32(nil), c0...)
			ser := append([]float32(nil), c0...)
			gemmMode(false, tA, tB, tt.m, tt.n, tt.k, 0.7, a, lda, b, ldb, 0.5, par, tt.n)
			gemmMode(true, tA, tB, tt.m, tt.n, tt.k, 0.7, a, lda, b, ldb, 0.5, ser, tt.n)
			var bp, bs bytes.Buffer
			binary.Write(&bp, binary.LittleEndian, par)
			binary.Write(&bs, binary.LittleEndian, ser)
			if !tB && !bytes.Equal(bp.Bytes(), bs.Bytes()) {
				// Without tB both paths accumulate axpy-style in k order.
				t.Errorf("gemm %dx%dx%d tA=%v tB=%v: serial tiles differ from gonum's parallel path", tt.m, tt.n, tt.k, tA, tB)
			}
			// Against a float64 reference.
			for i := 0; i < tt.m; i += 7 {
				for j := 0; j < tt.n; j += 5 {
					var s float64
					for l := 0; l < tt.k; l++ {
						var av, bv float32
						if tA {
							av = a[l*lda+i]
						} else {
							av = a[i*lda+l]
						}
						if tB {
							bv = b[j*ldb+l]
						} else {
							bv = b[l*ldb+j]
						}
						s += float64(av) * float64(bv)
					}
					want := 0.7*s + 0.5*float64(c0[i*tt.n+j])
					for _, c := range [][]float32{ser, par} {
						if d := want - float64(c[i*tt.n+j]); d > 1e-3 || d < -1e-3 {
							t.Fatalf("gemm %v (%d,%d) = %v; want %v", tt, i, j, c[i*tt.n+j], want)
						}
					}
				}
			}
		}
	}
}
