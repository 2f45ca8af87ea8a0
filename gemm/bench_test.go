package gemm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// resnetShapes are the GEMMs of one CIFAR ResNet-18 3×3 convolution per
// stage for a shard of 16 images (batch 128 over W = 8 replicas), in the
// im2col form nn uses per image group: forward Y = W·col (F × C·9 times
// C·9 × N·OH·OW), weight gradient dW = dY·colᵀ and input gradient
// dcol = Wᵀ·dY.
var resnetShapes = []struct {
	name    string
	tA, tB  bool
	m, n, k int
}{
	{"fwd/64x16384x576", false, false, 64, 16384, 576},
	{"fwd/128x4096x1152", false, false, 128, 4096, 1152},
	{"fwd/256x1024x2304", false, false, 256, 1024, 2304},
	{"fwd/512x256x4608", false, false, 512, 256, 4608},
	{"dW/64x576x16384", false, true, 64, 576, 16384},
	{"dW/256x2304x1024", false, true, 256, 2304, 1024},
	{"dcol/576x16384x64", true, false, 576, 16384, 64},
	{"dcol/2304x1024x256", true, false, 2304, 1024, 256},
}

// BenchmarkResNetShapes reports GFLOP/s (2·m·n·k per call) of Sgemm on
// one goroutine and of ParallelSgemm with 2 workers, at the shapes above,
// per wall-clock second and per CPU-second of the process (on a shared
// machine the latter, with one worker, is the per-core figure).
//
//	go test -run '^$' -bench ResNetShapes -benchtime 3x ./gemm
func BenchmarkResNetShapes(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range resnetShapes {
		a := make([]float32, s.m*s.k)
		bb := make([]float32, s.k*s.n)
		c := make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range bb {
			bb[i] = float32(rng.NormFloat64())
		}
		lda, ldb := s.k, s.n
		if s.tA {
			lda = s.m
		}
		if s.tB {
			ldb = s.k
		}
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", s.name, w), func(b *testing.B) {
				cpu0 := cpuSeconds()
				for b.Loop() {
					ParallelSgemm(w, s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
				}
				flop := 2 * float64(s.m*s.n*s.k) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := cpuSeconds() - cpu0; cpu > 0 {
					// Per core when other processes share the cores.
					b.ReportMetric(flop/cpu/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}

// BenchmarkKernel reports GFLOP/s of each micro-kernel this CPU runs
// (2·MR·NR·KC per call, one KC-deep tile in cache, beta = 1), per
// CPU-second of the process: the kernels' own speed, without packing.
//
//	go test -run '^$' -bench Kernel -count 5 ./gemm
func BenchmarkKernel(b *testing.B) {
	for _, kr := range available {
		b.Run(strings.ReplaceAll(kr.name, " ", "-"), func(b *testing.B) {
			a := make([]float32, kr.mr*KC)
			bb := make([]float32, kr.nr*KC)
			c := make([]float32, kr.mr*kr.nr)
			for i := range a {
				a[i] = float32(i%7) * 0.25
			}
			for i := range bb {
				bb[i] = float32(i%5) * 0.5
			}
			cpu0 := cpuSeconds()
			for b.Loop() {
				for range 64 {
					kr.fn(KC, &a[0], &bb[0], &c[0], kr.nr, 1, 1)
				}
			}
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(2*float64(kr.mr*kr.nr*KC*64)*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
			}
		})
	}
}
