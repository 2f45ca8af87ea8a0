//go:build amd64 && !noasm

package nn

import "golang.org/x/sys/cpu"

//go:generate go run -C asmgen . -out ../kernels_amd64.s -stubs ../kernels_amd64_stubs.go -pkg nn

func init() {
	if cpu.X86.HasAVX2 {
		useAVX2()
	}
	if cpu.X86.HasAVX512F {
		kernelSet = "avx2, padding avx512f"
		padPlanes = padAVX512
		padKernels["avx512f"] = padAVX512
		col2imTap = col2imTapAVX512
	}
}

// col2imTapAVX512 is refCol2imTap through col2imS2AVX512 at stride 2,
// the reference loop otherwise.
func col2imTapAVX512(dst, src []float32, s, n, dImg, sImg, rows, dRow, sRow, cnt int) {
	if s != 2 || n <= 0 || rows <= 0 || cnt <= 0 {
		refCol2imTap(dst, src, s, n, dImg, sImg, rows, dRow, sRow, cnt)
		return
	}
	if dImg < 0 || sImg < 0 || dRow < 0 || sRow < 0 {
		panic("nn: col2imTap: negative stride")
	}
	// The last element each side touches; the strides are non-negative.
	_ = dst[(n-1)*dImg+(rows-1)*dRow+2*(cnt-1)]
	_ = src[(n-1)*sImg+(rows-1)*sRow+cnt-1]
	tail := 0
	for t := range cnt % 8 {
		tail |= 1 << (2 * t)
	}
	col2imS2AVX512(&dst[0], &src[0], n, dImg, sImg, rows, dRow, sRow, cnt/8, tail)
}

// padAVX2 is padPlanes through padPlanesAVX2.
func padAVX2(dst, src []float32, planes, h, w, p int) {
	if !padSpan(dst, src, planes, h, w, p) {
		return
	}
	padPlanesAVX2(&dst[0], &src[0], planes, h, w, p)
}

// padAVX512 is padPlanes through padPlanesAVX512, for padded rows of up
// to 8 chunks of 16 columns (wider ones go to padAVX2): the mask table
// holds, for chunk c, the lanes whose padded column 16c+j is a source
// column (p <= 16c+j < p+w) and the lanes inside the row (16c+j < w+2p).
// Padded planes of at most 16 floats (the 2×2 planes of the stand-ins'
// last stage, 4×4 padded) go to padSmallAVX512, one expanding load and
// one store a plane instead of a masked load and store a row: expand has
// the bit of every padded position (i+p)·wp + j+p of a source float.
func padAVX512(dst, src []float32, planes, h, w, p int) {
	if !padSpan(dst, src, planes, h, w, p) {
		return
	}
	wp := w + 2*p
	if np := (h + 2*p) * wp; np <= 16 {
		var expand uint16
		for i := range h {
			for j := range w {
				expand |= 1 << ((i+p)*wp + j + p)
			}
		}
		padSmallAVX512(&dst[0], &src[0], planes, h*w, np, expand, uint16(1<<np-1))
		return
	}
	chunks := (wp + 15) / 16
	if chunks > 8 {
		padPlanesAVX2(&dst[0], &src[0], planes, h, w, p)
		return
	}
	var masks [16]int32
	for c := range chunks {
		for j := range 16 {
			col := 16*c + j
			if col >= p && col < p+w {
				masks[2*c] |= 1 << j
			}
			if col < wp {
				masks[2*c+1] |= 1 << j
			}
		}
	}
	padPlanesAVX512(&dst[0], &src[0], planes, h, w, p, &masks[0], chunks)
}

// padSpan checks padPlanes' slices and reports whether there is work.
func padSpan(dst, src []float32, planes, h, w, p int) bool {
	if planes <= 0 || h <= 0 || w <= 0 || p < 0 {
		return false
	}
	hp, wp := h+2*p, w+2*p
	_, _ = dst[planes*hp*wp-1], src[planes*h*w-1]
	return true
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
	bnNormRelu = func(x, xh, s, y []float32, stride, planes, n int, mu, is, g, b float32) {
		planeSpan(len(x), stride, planes, n)
		planeSpan(len(xh), stride, planes, n)
		planeSpan(len(y), stride, planes, n)
		if planes == 0 || n == 0 {
			return
		}
		if s == nil {
			bnNormalizeReluAVX2(&x[0], &xh[0], &y[0], stride, planes, n, mu, is, g, b)
			return
		}
		planeSpan(len(s), stride, planes, n)
		bnNormalizeAddReluAVX2(&x[0], &xh[0], &s[0], &y[0], stride, planes, n, mu, is, g, b)
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
	padPlanes = padAVX2
	padKernels["avx2"] = padAVX2
	addOf = func(a, b, y []float32) {
		b, y = b[:len(a)], y[:len(a)]
		if len(a) > 0 {
			addAVX2(&a[0], &b[0], &y[0], len(a))
		}
	}
}
