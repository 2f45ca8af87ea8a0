package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvForwardDirect compares Conv2d.Forward, on both its per-image and
// its batched path, with the defining sum evaluated directly in float64.
func TestConvForwardDirect(t *testing.T) {
	tests := []struct {
		name             string
		n, c, h, w       int
		f, k, s, p       int
		bias, perImageOK bool
	}{
		{"batched-3x3", 3, 2, 5, 6, 4, 3, 1, 1, true, false},
		{"batched-1x1-stride2", 2, 3, 7, 7, 5, 1, 2, 0, false, false},
		{"per-image-3x3", 2, 3, 10, 9, 5, 3, 1, 1, true, true},
		{"per-image-3x3-stride2", 3, 2, 17, 18, 4, 3, 2, 1, false, true},
		{"per-image-5x5-pad2", 1, 1, 12, 11, 3, 5, 1, 2, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			r := layerModel([]int{tt.c, tt.h, tt.w}, func(b *builder) Layer {
				return newConv(b, "c", tt.c, tt.f, tt.k, tt.s, tt.p, tt.bias)
			})
			cv := r.net.(*Conv2d)
			x := randTensor(rng, tt.n, tt.c, tt.h, tt.w)
			y := cv.Forward(x, true)
			oh, ow := (tt.h+2*tt.p-tt.k)/tt.s+1, (tt.w+2*tt.p-tt.k)/tt.s+1
			if got := oh*ow >= perImageMin; got != tt.perImageOK {
				t.Fatalf("case exercises per-image=%v, want %v", got, tt.perImageOK)
			}
			for n := 0; n < tt.n; n++ {
				for f := 0; f < tt.f; f++ {
					for i := 0; i < oh; i++ {
						for j := 0; j < ow; j++ {
							var s float64
							if tt.bias {
								s = float64(cv.B[f])
							}
							for c := 0; c < tt.c; c++ {
								for p := 0; p < tt.k; p++ {
									for q := 0; q < tt.k; q++ {
										hi, wj := tt.s*i+p-tt.p, tt.s*j+q-tt.p
										if hi < 0 || hi >= tt.h || wj < 0 || wj >= tt.w {
											continue
										}
										s += float64(cv.W[((f*tt.c+c)*tt.k+p)*tt.k+q]) * float64(x.Data[((n*tt.c+c)*tt.h+hi)*tt.w+wj])
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
		})
	}
}
