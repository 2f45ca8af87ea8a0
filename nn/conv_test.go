package nn

import (
	"fmt"
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
			if g := groupSize(x, tt.n, oh*ow); (tt.n+g-1)/g != tt.groups {
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

// refCol2im is col2im as a scatter over zero-padded planes through the
// convolution's tap table, the padding then dropped (the path col2im
// replaced): the oracle for its bits.
func refCol2im(dcol []float32, n, c, h, w, k, s, p, oh, ow int) []float32 {
	hp, wp := h+2*p, w+2*p
	var tp taps
	tp.build(c, hp*wp, k, s, wp, oh, ow, n, c, 1)
	padded := make([]float32, n*c*hp*wp)
	cols := tp.cols[:n*oh*ow]
	for r, base := range tp.rows {
		for q, v := range dcol[r*len(cols) : (r+1)*len(cols)] {
			padded[base+cols[q]] += v
		}
	}
	out := make([]float32, n*c*h*w)
	for pl := range n * c {
		for i := range h {
			copy(out[(pl*h+i)*w:(pl*h+i+1)*w], padded[pl*hp*wp+(i+p)*wp+p:])
		}
	}
	return out
}

// TestCol2imMatchesPadded checks col2im bit for bit against the scatter
// over padded planes on odd shapes, with -0, infinities, NaNs and
// subnormals among the terms: strides 1 to 3, padding 0 to 3 (3 with a
// 3×3 kernel leaves taps and outputs that see only padding), images
// smaller than the kernel, several images, and a ResNet's 3×3 stride 2
// padding 1 and 1×1 stride 2 on even and odd sizes.
func TestCol2imMatchesPadded(t *testing.T) {
	for _, tt := range []struct{ n, c, h, w, k, s, p int }{
		{2, 3, 7, 7, 1, 2, 0},
		{3, 2, 14, 14, 3, 2, 1},
		{2, 2, 7, 8, 3, 2, 1},
		{1, 3, 5, 6, 3, 2, 3},
		{2, 1, 9, 4, 3, 3, 2},
		{2, 2, 1, 1, 3, 2, 1},
		{1, 2, 2, 3, 3, 1, 3},
		{2, 2, 11, 10, 5, 2, 2},
		{1, 1, 4, 4, 1, 1, 1},
		{2, 3, 7, 7, 3, 2, 1},
		{1, 2, 8, 7, 3, 2, 1},
		{2, 2, 2, 2, 3, 2, 1},
		{2, 2, 8, 9, 1, 2, 0},
		{1, 1, 1, 1, 1, 2, 0},
	} {
		t.Run(fmt.Sprintf("%dx%dx%dx%d-k%d-s%d-p%d", tt.n, tt.c, tt.h, tt.w, tt.k, tt.s, tt.p), func(t *testing.T) {
			oh, ow := (tt.h+2*tt.p-tt.k)/tt.s+1, (tt.w+2*tt.p-tt.k)/tt.s+1
			rng := rand.New(rand.NewPCG(uint64(tt.h), uint64(tt.k)))
			dcol := kernelInput(rng, tt.c*tt.k*tt.k*tt.n*oh*ow, true)
			want := refCol2im(dcol, tt.n, tt.c, tt.h, tt.w, tt.k, tt.s, tt.p, oh, ow)
			got := make([]float32, len(want))
			for i := range got {
				got[i] = float32(i) // col2im sets every element
			}
			col2im(got, tt.c*tt.h*tt.w, tt.h*tt.w, dcol, tt.n, tt.c, tt.h, tt.w, tt.k, tt.s, tt.p, oh, ow)
			// Any two NaNs count as equal: which term's payload a sum of
			// several NaNs keeps is the compiler's choice of operand order.
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("dst[%d] = %g, want %g (scatter over padded planes)", i, got[i], want[i])
				}
			}
		})
	}
}

// TestConvChunkedSameBits checks that splitting a replica's products into
// column chunks (mulCols) leaves y, dW and dx bit for bit those of one
// product over all columns, on every convCases shape and chunks that are
// and are not multiples of the kernels' tile widths.
func TestConvChunkedSameBits(t *testing.T) {
	defer func(c int) { chunkCols = c }(chunkCols)
	for _, tt := range convCases {
		t.Run(tt.name, func(t *testing.T) {
			var want [3][]float32
			for _, chunk := range []int{1 << 30, 7, 32, 100, 256} {
				chunkCols = chunk
				rng := rand.New(rand.NewPCG(3, 4))
				r := layerModel([]int{tt.c, tt.h, tt.w}, func(b *builder) Layer {
					return newConv(b, "c", tt.c, tt.f, tt.k, tt.s, tt.p, tt.bias)
				})
				cv := r.net.(*Conv2d)
				cv.ws.workers = 1 // as in TrainShards, where chunking applies
				x := randTensor(rng, tt.n, tt.c, tt.h, tt.w)
				y := cv.Forward(x, true)
				dy := randTensor(rng, y.Shape...)
				dx := cv.Backward(dy)
				got := [3][]float32{append([]float32(nil), y.Data...), cv.dW, dx.Data}
				if want[0] == nil {
					want = got
					continue
				}
				for i, what := range []string{"y", "dW", "dx"} {
					if j := sameBits32(got[i], want[i]); j >= 0 {
						t.Fatalf("chunks of %d: %s[%d] = %g, one product gives %g", chunk, what, j, got[i][j], want[i][j])
					}
				}
			}
		})
	}
}
