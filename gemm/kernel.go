package gemm

import "unsafe"

// kernel is one micro-kernel: fn computes the mr×nr tile
//
//	C = alpha·A·B + beta·C
//
// from kc steps of a packed A sliver (mr floats a step) and a packed B
// sliver (nr floats a step), C rows ldc floats apart, without reading C
// when beta is 0.
type kernel struct {
	name   string
	mr, nr int
	fn     func(kc int, a, b, c *float32, ldc int, alpha, beta float32)
}

// maxTile bounds mr·nr and maxMR bounds mr over all kernels.
const (
	maxTile = 12 * 32
	maxMR   = 12
)

// portable is the Go micro-kernel, used under noasm, off amd64 and on CPUs
// without FMA.
var portable = &kernel{name: "go 6x16", mr: 6, nr: 16, fn: kernelGo}

// active is the kernel Sgemm uses; init functions in kernel_amd64.go
// replace it when the CPU has a faster one.
var active = portable

// available lists every kernel this CPU can run, portable first.
var available = []*kernel{portable}

// KernelName names the micro-kernel in use, e.g. "avx2+fma 6x16".
func KernelName() string { return active.name }

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
