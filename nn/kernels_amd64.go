//go:build amd64 && !noasm

package nn

import "golang.org/x/sys/cpu"

//go:generate go run -C asmgen . -out ../kernels_amd64.s -stubs ../kernels_amd64_stubs.go -pkg nn

func init() {
	if cpu.X86.HasAVX2 {
		useAVX2()
	}
}

// useAVX2 installs the AVX2 kernels (kernels_amd64.s), each behind the
// bounds check its reference loop gets from Go.
func useAVX2() {
	kernelSet = "avx2"
	planeSums = func(x []float32, stride, n int, out []float64) {
		planeSpan(len(x), stride, len(out), n)
		if len(out) > 0 {
			planeSums64AVX2(&x[0], stride, len(out), n, &out[0])
		}
	}
	planeSqDevs = func(x []float32, stride, n int, mean float64, out []float64) {
		planeSpan(len(x), stride, len(out), n)
		if len(out) > 0 {
			planeSqDevs64AVX2(&x[0], stride, len(out), n, mean, &out[0])
		}
	}
	planeSumDots = func(a, b []float32, stride, n int, sa, sab []float64) {
		planeSpan(len(a), stride, len(sa), n)
		planeSpan(len(b), stride, len(sa), n)
		if len(sab) != len(sa) {
			panic("nn: planeSumDots: sa and sab differ in length")
		}
		if len(sa) > 0 {
			planeSumDots64AVX2(&a[0], &b[0], stride, len(sa), n, &sa[0], &sab[0])
		}
	}
	bnNormalize = func(x, xh, y []float32, stride, planes, n int, mu, is, g, b float32) {
		planeSpan(len(x), stride, planes, n)
		planeSpan(len(xh), stride, planes, n)
		planeSpan(len(y), stride, planes, n)
		if planes > 0 && n > 0 {
			bnNormalizeAVX2(&x[0], &xh[0], &y[0], stride, planes, n, mu, is, g, b)
		}
	}
	bnBackward = func(dy, xh, dx []float32, stride, planes, n int, k, mdy, mdyx float32) {
		planeSpan(len(dy), stride, planes, n)
		planeSpan(len(xh), stride, planes, n)
		planeSpan(len(dx), stride, planes, n)
		if planes > 0 && n > 0 {
			bnBackwardAVX2(&dy[0], &xh[0], &dx[0], stride, planes, n, k, mdy, mdyx)
		}
	}
	reluOf = func(x, y []float32) {
		y = y[:len(x)]
		if len(x) > 0 {
			reluAVX2(&x[0], &y[0], len(x))
		}
	}
	reluBackward = func(dy, y, dx []float32) {
		y, dx = y[:len(dy)], dx[:len(dy)]
		if len(dy) > 0 {
			reluBackwardAVX2(&dy[0], &y[0], &dx[0], len(dy))
		}
	}
	addReluOf = func(a, b, y []float32) {
		b, y = b[:len(a)], y[:len(a)]
		if len(a) > 0 {
			addReluAVX2(&a[0], &b[0], &y[0], len(a))
		}
	}
	padPlanes = func(dst, src []float32, planes, h, w, p int) {
		if planes <= 0 || h <= 0 || w <= 0 || p < 0 {
			return
		}
		hp, wp := h+2*p, w+2*p
		_, _ = dst[planes*hp*wp-1], src[planes*h*w-1]
		padPlanesAVX2(&dst[0], &src[0], planes, h, w, p)
	}
	addOf = func(a, b, y []float32) {
		b, y = b[:len(a)], y[:len(a)]
		if len(a) > 0 {
			addAVX2(&a[0], &b[0], &y[0], len(a))
		}
	}
}
