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

// BenchmarkGathered reports the cost of packing the patch matrix of a 3×3
// stride-1 convolution (16 input channels, 16 images of 14×14, padded to
// 16×16) into B panels, per mode of Gathered.PackB: masked loads of the
// column runs with gathers for the rest, gathers alone, and the Go loop;
// and the same for its transpose (the weight gradient's B, runs of 3).
//
//	go test -run '^$' -bench Gathered -count 5 ./gemm
func BenchmarkGathered(b *testing.B) {
	const c, img, oh, k = 16, 16, 14, 3
	const wp, plane = oh + 2, (oh + 2) * (oh + 2)
	x := make([]float32, img*c*plane)
	var taps, pos []int32
	for ci := range c {
		for ki := range k {
			for kj := range k {
				taps = append(taps, int32(ci*plane+ki*wp+kj))
			}
		}
	}
	for n := range img {
		for i := range oh {
			for j := range oh {
				pos = append(pos, int32(n*c*plane+i*wp+j))
			}
		}
	}
	gathers, runs := gatherAsm, runsAsm
	defer func() { gatherAsm, runsAsm = gathers, runs }()
	for _, m := range []struct {
		name       string
		rows, cols []int32
	}{{"col", taps, pos}, {"colT", pos, taps}} {
		g := &Gathered{X: x, Rows: m.rows, Cols: m.cols}
		kr := kernelFor(16)
		dst := make([]float32, KC*NC)
		for _, mode := range []string{"runs+gathers", "gathers", "go"} {
			b.Run(m.name+"/"+mode, func(b *testing.B) {
				gatherAsm, runsAsm = gathers, runs
				switch mode {
				case "gathers":
					runsAsm = false
				case "go":
					gatherAsm, runsAsm = nil, false
				}
				if mode == "runs+gathers" && !runsAsm {
					b.Skip("skipped: no AVX-512F")
				}
				cpu0 := cpuSeconds()
				for b.Loop() {
					for pc := 0; pc < len(m.rows); pc += KC {
						kc := min(KC, len(m.rows)-pc)
						for jc := 0; jc < len(m.cols); jc += NC {
							nc := min(NC, len(m.cols)-jc)
							g.PackB(dst[:roundUp(nc, kr.nr)*kc], kr.nr, pc, kc, jc, nc)
						}
					}
				}
				if cpu := cpuSeconds() - cpu0; cpu > 0 {
					b.ReportMetric(cpu*1e9/float64(b.N*len(m.rows)*len(m.cols)), "cpu-ns/elem")
				}
			})
		}
	}
}
