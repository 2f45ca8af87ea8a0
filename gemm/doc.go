// Package gemm is a single-precision general matrix multiply in the style
// of BLIS/GotoBLAS: packed panels, cache blocking and a register-blocked
// FMA micro-kernel. It computes
//
//	C = alpha·op(A)·op(B) + beta·C
//
// for row-major matrices with explicit strides: op(A) is m×k, op(B) is k×n
// and C is m×n; element (i, j) of C is c[i*ldc+j]; op(A)(i, l) is
// a[i*lda+l], or a[l*lda+i] when A is transposed; likewise for B. When
// beta is 0, C is not read (NaNs there do not propagate), and when alpha is
// 0 or k is 0, A and B are not read.
//
// # Blocking
//
// The loops are those of BLIS. For each block of NC columns of C, each
// block of KC rows of op(B) is packed into slivers of NR columns, and for
// each block of MC rows of C the matching KC columns of op(A) are packed
// into slivers of MR rows; the micro-kernel then multiplies one A sliver
// by one B sliver into an MR×NR tile of C held in vector registers. Edge
// tiles are padded with zeros in the panels and computed by the same
// kernel on a scratch tile. KC is 256 for every kernel; MC (144) and NC
// (2048) are multiples of every kernel's MR and NR. PackedA.MulB takes
// op(B) from a BPacker instead, which writes the same panels itself:
// Gathered, a matrix given by offset tables into a slice (a convolution's
// implicit im2col), is one, packed on amd64 with AVX2 gathers or, with
// AVX-512F, one masked load per run of consecutive offsets (a kernel per
// run count, runs16x1AVX512 .. runs16x6AVX512, with the runs in
// registers). With AVX2, packA interleaves eight rows of A by 8×8
// transposes in registers (transpose8AVX2, and transpose6AVX2 for the
// six-row slivers of the AVX2 kernel), packB packs a transposed B with
// the same transposes, and the slivers of a row-major B or a transposed A
// are copied one matrix row at a time (packRows6AVX2 .. packRows32AVX2).
// When a job's rows fit in one MC block, B is packed NB (256) columns at
// a time just before the kernels use them. The micro-kernels prefetch
// their C tile before the k loop. Packing only moves values: none of this
// changes a bit of C.
//
// # Kernels
//
// On amd64 the micro-kernel is assembly generated with avo (see asmgen/):
// 12×32 and 8×32 with AVX-512F where the CPU and OS support it, else 6×16
// with AVX2+FMA, chosen at start-up with golang.org/x/sys/cpu (GODEBUG=
// cpu.avx512f=off forces the AVX2 path). With two AVX-512 kernels each
// product takes the one that pads its m rows the least (a convolution
// with 16 or 64 filters fills 8-row tiles exactly and wastes a third or a
// ninth of 12-row ones). The 6×16 kernel has edge kernels for the first
// 1..5 rows of a tile (sgemm6x16FMARows1..5), so the last sliver of a
// 64-row product computes its 4 rows into C directly. Elsewhere, under the build tag noasm, and on
// amd64 CPUs without FMA, a portable Go kernel (6×16) runs. KernelName
// reports the choice; BenchmarkKernel measures each kernel.
//
// # Determinism
//
// Each element of C is computed by exactly one micro-kernel call per KC
// block, which sums over its KC products in ascending order with one
// fused multiply-add each, then sets C = fma(beta', C, alpha·sum) with
// beta' = beta for the first KC block and 1 afterwards. The KC blocks are
// visited in ascending order. Parallelism only decides which goroutine
// computes which tiles, so the result is the same bits for any worker
// count and any GOMAXPROCS, and the two assembly kernels agree with each
// other bit for bit. The portable kernel rounds the product and the sum
// separately (Go does not fuse them on amd64), so it is deterministic too
// but may differ from the assembly kernels in the last bits.
//
// # Parallelism
//
// Sgemm runs on the calling goroutine. ParallelSgemm splits C into
// rectangles of whole tiles and lets up to a given number of goroutines
// take them; callers that already run one GEMM per goroutine (the
// replicas of package nn) give each call its share of the cores instead
// of letting every call start GOMAXPROCS goroutines.
package gemm
