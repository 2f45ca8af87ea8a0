package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// kernelInput returns l floats: normal values with, when special is set,
// the values where kernels most easily part from Go's semantics (±0,
// ±Inf, NaNs of both signs, subnormals, float32 extremes) scattered in.
func kernelInput(rng *rand.Rand, l int, special bool) []float32 {
	s := make([]float32, l)
	odd := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0xffc00001), 1e-45, -1e-45, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	for i := range s {
		s[i] = float32(rng.NormFloat64() * 3)
		if special && rng.IntN(4) == 0 {
			s[i] = odd[rng.IntN(len(odd))]
		}
	}
	return s
}

// refAddRelu sets y = max(a+b, 0), a residual block's end as two
// passes (the oracle of refBNNormalizeRelu's sum).
func refAddRelu(a, b, y []float32) {
	b, y = b[:len(a)], y[:len(a)]
	for i, v := range a {
		y[i] = max(v+b[i], 0)
	}
}

// planesOf returns the planes of s (planes of n floats, stride apart)
// one after another.
func planesOf(s []float32, stride, planes, n int) []float32 {
	var out []float32
	for i := range planes {
		out = append(out, s[i*stride:][:n]...)
	}
	return out
}

func sameBits32(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// sameBits64 is sameBits32 for the float64 sums, where any two NaNs
// count as equal (see kernels.go).
func sameBits64(a, b []float64) int {
	for i := range a {
		if math.IsNaN(a[i]) && math.IsNaN(b[i]) {
			continue
		}
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestKernelsMatchReference checks every pass in use (assembly on this
// CPU) against its reference loop bit for bit, over plane lengths around
// the kernels' 4- and 8-float steps, plane counts around their groups of
// four and two, strides wider than the planes, and special values.
func TestKernelsMatchReference(t *testing.T) {
	if kernelSet == "go" {
		t.Skip("no assembly kernels on this CPU or build: the passes are the reference loops")
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 49, 196} {
		for _, planes := range []int{0, 1, 2, 3, 4, 5, 7, 9} {
			for _, special := range []bool{false, true} {
				stride := n + rng.IntN(5)
				l := max(0, (planes-1)*stride+n) + rng.IntN(3)
				if planes == 0 {
					l = rng.IntN(3)
				}
				x, x2 := kernelInput(rng, l, special), kernelInput(rng, l, special)
				check := func(what string, i int) {
					t.Helper()
					if i >= 0 {
						t.Errorf("%s n=%d planes=%d stride=%d special=%v: element %d differs", what, n, planes, stride, special, i)
					}
				}
				got, want := make([]float64, planes), make([]float64, planes)
				got2, want2 := make([]float64, planes), make([]float64, planes)
				planeSums(x, stride, n, got)
				refPlaneSums(x, stride, n, want)
				check("planeSums", sameBits64(got, want))
				mean := rng.NormFloat64()
				planeSqDevs(x, stride, n, mean, got)
				refPlaneSqDevs(x, stride, n, mean, want)
				check("planeSqDevs", sameBits64(got, want))
				planeSumDots(x, x2, stride, n, got, got2)
				refPlaneSumDots(x, x2, stride, n, want, want2)
				check("planeSumDots sums", sameBits64(got, want))
				check("planeSumDots dots", sameBits64(got2, want2))

				// Elementwise: outputs start as different garbage, so a
				// kernel that writes outside its planes or skips one shows.
				p := [4]float32{float32(rng.NormFloat64()), float32(rng.Float64() + 0.1), float32(rng.NormFloat64()), float32(rng.NormFloat64())}
				h1, y1 := kernelInput(rng, l, false), kernelInput(rng, l, false)
				h2, y2 := append([]float32(nil), h1...), append([]float32(nil), y1...)
				bnNormalize(x, h1, y1, stride, planes, n, p[0], p[1], p[2], p[3])
				refBNNormalize(x, h2, y2, stride, planes, n, p[0], p[1], p[2], p[3])
				check("bnNormalize xh", sameBits32(h1, h2))
				check("bnNormalize y", sameBits32(y1, y2))
				// The fused BatchNorm+ReLU (and +sum+ReLU) against its
				// reference loop, and that against the two passes it fuses.
				for _, sc := range [][]float32{nil, kernelInput(rng, l, false)} {
					h3, y3 := kernelInput(rng, l, false), kernelInput(rng, l, false)
					h4, y4 := append([]float32(nil), h3...), append([]float32(nil), y3...)
					bnNormRelu(x, h3, sc, y3, stride, planes, n, p[0], p[1], p[2], p[3])
					refBNNormalizeRelu(x, h4, sc, y4, stride, planes, n, p[0], p[1], p[2], p[3])
					what := fmt.Sprintf("bnNormRelu (shortcut %v)", sc != nil)
					check(what+" xh", sameBits32(h3, h4))
					check(what+" y", sameBits32(y3, y4))
					two := append([]float32(nil), y1...) // garbage where no plane is
					refBNNormalize(x, h2, two, stride, planes, n, p[0], p[1], p[2], p[3])
					for i := range planes {
						pl := two[i*stride:][:n]
						if sc != nil {
							refAddRelu(pl, sc[i*stride:][:n], pl)
						} else {
							refRelu(pl, pl)
						}
					}
					check(what+" reference against BatchNorm then ReLU",
						sameBits32(planesOf(y4, stride, planes, n), planesOf(two, stride, planes, n)))
					check(what+" reference xh against BatchNorm's",
						sameBits32(planesOf(h4, stride, planes, n), planesOf(h2, stride, planes, n)))
				}
				d1 := kernelInput(rng, l, false)
				d2 := append([]float32(nil), d1...)
				bnBackward(x, x2, d1, stride, planes, n, p[0], p[1], p[2])
				refBNBackward(x, x2, d2, stride, planes, n, p[0], p[1], p[2])
				check("bnBackward", sameBits32(d1, d2))

				// b finite: a sum of two NaNs may keep either's payload
				// in Go (the operands of an addition commute).
				m := planes * n
				a, b := x[:min(m, l)], kernelInput(rng, min(m, l), false)
				o1, o2 := make([]float32, len(a)), make([]float32, len(a))
				reluOf(a, o1)
				refRelu(a, o2)
				check("relu", sameBits32(o1, o2))
				r1, r2 := make([]float32, len(a)), make([]float32, len(a))
				reluBackward(x2[:len(a)], o2, r1)
				refReluBackward(x2[:len(a)], o2, r2)
				check("reluBackward", sameBits32(r1, r2))
				addOf(a, b, o1)
				refAdd(a, b, o2)
				check("add", sameBits32(o1, o2))
			}
		}
	}
}

// TestPadPlanesMatchesReference checks every padPlanes this CPU runs
// against the reference loop, over plane widths around the kernels' 8- and
// 16-float steps (and past the AVX-512 kernel's 8 chunks) and the borders
// the convolutions use, on a destination full of garbage.
func TestPadPlanesMatchesReference(t *testing.T) {
	if len(padKernels) == 1 {
		t.Skip("no assembly kernels on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(4, 2))
	for name, pad := range padKernels {
		for _, h := range []int{1, 2, 4, 7, 14, 17} {
			for _, w := range []int{1, 2, 4, 7, 8, 9, 14, 15, 17, 28, 31, 32, 33, 126, 140} {
				for _, p := range []int{0, 1, 2, 3} {
					for _, planes := range []int{1, 3} {
						hp, wp := h+2*p, w+2*p
						src := kernelInput(rng, planes*h*w, true)
						got := kernelInput(rng, planes*hp*wp+2, false)
						want := append([]float32(nil), got...)
						pad(got, src, planes, h, w, p)
						refPadPlanes(want, src, planes, h, w, p)
						if i := sameBits32(got, want); i >= 0 {
							t.Fatalf("%s h=%d w=%d p=%d planes=%d: element %d is %v, want %v", name, h, w, p, planes, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestReferenceLoops checks the reference loops themselves on hand-worked
// cases: the tail of a plane goes into the first accumulator, ReLU maps
// -0 to +0 and keeps NaNs, and its backward passes dy only where y > 0.
func TestReferenceLoops(t *testing.T) {
	// 1e16 + 1 + ... : in float64 the four lanes hold 1e16+1 (lane 0,
	// rounded to 1e16), 1, 1, 1 before the tail adds 1 to lane 0 again.
	x := []float32{1e16, 1, 1, 1, 1}
	want := (float64(float32(1e16)) + 1 + 1) + (1 + 1) // (l0+l1)+(l2+l3) with l0 = 1e16 (+1 lost) (+1 lost)
	out := make([]float64, 1)
	refPlaneSums(x, 5, 5, out)
	if out[0] != want {
		t.Errorf("refPlaneSums = %v, want %v", out[0], want)
	}
	negZero := float32(math.Copysign(0, -1))
	nan := float32(math.NaN())
	in := []float32{-2, negZero, 0, 3, nan}
	y := make([]float32, len(in))
	refRelu(in, y)
	for i, w := range []float32{0, 0, 0, 3} {
		if math.Float32bits(y[i]) != math.Float32bits(w) {
			t.Errorf("relu(%v) = %v (bits %#x), want %v", in[i], y[i], math.Float32bits(y[i]), w)
		}
	}
	if !math.IsNaN(float64(y[4])) {
		t.Errorf("relu(NaN) = %v, want NaN", y[4])
	}
	dy := []float32{5, 5, 5, 5, 5}
	dx := make([]float32, len(dy))
	refReluBackward(dy, y, dx)
	for i, w := range []float32{0, 0, 0, 5, 5} {
		if dx[i] != w {
			t.Errorf("reluBackward at y=%v: %v, want %v", y[i], dx[i], w)
		}
	}
}
