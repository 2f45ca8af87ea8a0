package gemm

import (
	"strings"
	"unsafe"
)

// kernel is one micro-kernel: fn computes the mr×nr tile
//
//	C = alpha·A·B + beta·C
//
// from kc steps of a packed A sliver (mr floats a step) and a packed B
// sliver (nr floats a step), C rows ldc floats apart, without reading C
// when beta is 0.
//
// edge, when set, holds for 0 < rows < mr the kernel computing only the
// first rows rows of the tile from the same slivers (the last sliver of a
// product whose m is not a multiple of mr), writing C directly; it gives
// the bits of fn.
type kernel struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c *float32, ldc int, alpha, beta float32)
	edge   []func(kc int, a, b, c *float32, ldc int, alpha, beta float32)
}

// rowsAsm, when set (amd64 with AVX2), lets packB copy the full slivers
// of a row-major B, and packA those of a transposed A, with packRows.
// Packing only moves values.
var rowsAsm bool

// maxTile bounds mr·nr and maxMR bounds mr over all kernels.
const (
	maxTile = 12 * 32
	maxMR   = 12
)

// portable is the Go micro-kernel, used under noasm, off amd64 and on CPUs
// without FMA.
var portable = &kernel{name: "go 6x16", mr: 6, nr: 16, fn: kernelGo}

// active lists the kernels Sgemm chooses from (see kernelFor); init
// functions in kernel_amd64.go replace it when the CPU has faster ones.
var active = []*kernel{portable}

// available lists every kernel this CPU can run, portable first.
var available = []*kernel{portable}

// KernelName names the micro-kernels in use, e.g. "avx2+fma 6x16" or
// "avx512f 12x32, avx512f 8x32".
func KernelName() string {
	names := make([]string, len(active))
	for i, kr := range active {
		names[i] = kr.name
	}
	return strings.Join(names, ", ")
}

// kernelFor returns the active kernel for a product with m rows: the one
// that pads m the least (a 16-row product wastes a third of a 12-row
// kernel's work and none of an 8-row one's), the first listed on a tie.
// All assembly kernels give the same bits, so the choice only changes
// speed.
func kernelFor(m int) *kernel {
	best := active[0]
	for _, kr := range active[1:] {
		if roundUp(m, kr.mr) < roundUp(m, best.mr) {
			best = kr
		}
	}
	return best
}

func kernelGo(kc int, a, b, c *float32, ldc int, alpha, beta float32) {
	const mr, nr = 6, 16
	as := unsafe.Slice(a, kc*mr)
	bs := unsafe.Slice(b, kc*nr)
	var acc [mr][nr]float32
	for l := 0; l < kc; l++ {
		bl := (*[nr]float32)(bs[l*nr:])
		al := (*[mr]float32)(as[l*mr:])
		for i, av := range al {
			row := &acc[i]
			for j, bv := range bl {
				row[j] += av * bv
			}
		}
	}
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	for i := range acc {
		row := (*[nr]float32)(cs[i*ldc:])
		for j, v := range acc[i] {
			t := alpha * v
			if beta != 0 {
				t += beta * row[j]
			}
			row[j] = t
		}
	}
}
