package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// convCases cover both dx paths (the flipped convolution for stride 1 with
// P < K, dcol and col2im otherwise), padding or none, one group, several
// groups of one image, and uneven groups (see groupSize).
var convCases = []struct {
	name       string
	n, c, h, w int
	f, k, s, p int
	bias       bool
	groups     int // ceil(n / groupSize)
}{
	{"3x3-one-group", 3, 2, 5, 6, 4, 3, 1, 1, true, 1},
	{"1x1-stride2", 2, 3, 7, 7, 5, 1, 2, 0, false, 1},
	{"3x3-stride2", 3, 2, 17, 18, 4, 3, 2, 1, false, 1},
	{"5x5-pad2", 1, 1, 12, 11, 3, 5, 1, 2, true, 1},
	{"1x1-pad1-col2im", 2, 2, 5, 5, 3, 1, 1, 1, true, 1},
	{"3x3-stride3-pad2", 2, 2, 10, 11, 3, 3, 3, 2, false, 1},
	{"3x3-groups-of-one", 2, 2, 48, 47, 3, 3, 1, 1, false, 2},
	{"3x3-uneven-groups", 3, 2, 40, 40, 3, 3, 1, 1, true, 2},
	{"3x3-stride2-uneven-groups", 3, 2, 80, 79, 2, 3, 2, 1, false, 2},
}

// TestConvDirect compares Conv2d.Forward and Backward (y, dW, db, dx)
// with the defining sums evaluated directly in float64.
func TestConvDirect(t *testing.T) {
	for _, tt := range convCases {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			r := layerModel([]int{tt.c, tt.h, tt.w}, func(b *builder) Layer {
				return newConv(b, "c", tt.c, tt.f, tt.k, tt.s, tt.p, tt.bias)
			})
			cv := r.net.(*Conv2d)
			x := randTensor(rng, tt.n, tt.c, tt.h, tt.w)
			y := cv.Forward(x, true)
			oh, ow := (tt.h+2*tt.p-tt.k)/tt.s+1, (tt.w+2*tt.p-tt.k)/tt.s+1
			if g := groupSize(tt.n, oh*ow); (tt.n+g-1)/g != tt.groups {
				t.Fatalf("case runs %d groups, want %d", (tt.n+g-1)/g, tt.groups)
			}
			dy := randTensor(rng, tt.n, tt.f, oh, ow)
			dx := cv.Backward(dy)
			xs := func(n, c, i, j int) int { return ((n*tt.c+c)*tt.h+i)*tt.w + j }
			wi := func(f, c, p, q int) int { return ((f*tt.c+c)*tt.k+p)*tt.k + q }
			wantDW := make([]float64, len(cv.W))
			wantDX := make([]float64, len(x.Data))
			wantDB := make([]float64, tt.f)
			for n := 0; n < tt.n; n++ {
				for f := 0; f < tt.f; f++ {
					for i := 0; i < oh; i++ {
						for j := 0; j < ow; j++ {
							var s float64
							if tt.bias {
								s = float64(cv.B[f])
							}
							g := float64(dy.Data[((n*tt.f+f)*oh+i)*ow+j])
							wantDB[f] += g
							for c := 0; c < tt.c; c++ {
								for p := 0; p < tt.k; p++ {
									for q := 0; q < tt.k; q++ {
										hi, wj := tt.s*i+p-tt.p, tt.s*j+q-tt.p
										if hi < 0 || hi >= tt.h || wj < 0 || wj >= tt.w {
											continue
										}
										s += float64(cv.W[wi(f, c, p, q)]) * float64(x.Data[xs(n, c, hi, wj)])
										wantDW[wi(f, c, p, q)] += g * float64(x.Data[xs(n, c, hi, wj)])
										wantDX[xs(n, c, hi, wj)] += g * float64(cv.W[wi(f, c, p, q)])
									}
								}
							}
							got := y.Data[((n*tt.f+f)*oh+i)*ow+j]
							if math.Abs(float64(got)-s) > 1e-4 {
								t.Fatalf("y[%d,%d,%d,%d] = %g, want %g", n, f, i, j, got, s)
							}
						}
					}
				}
			}
			near := func(what string, got []float32, want []float64) {
				t.Helper()
				for i, w := range want {
					if math.Abs(float64(got[i])-w) > 1e-4*(1+math.Abs(w)) {
						t.Fatalf("%s[%d] = %g, want %g", what, i, got[i], w)
					}
				}
			}
			near("dW", cv.dW, wantDW)
			near("dx", dx.Data, wantDX)
			if tt.bias {
				near("db", cv.dB, wantDB)
			}
		})
	}
}
