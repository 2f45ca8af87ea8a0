package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/nn"
)

// Performance notes (same-session ratios against PyTorch 1.13 CPU, Debian
// build, 2 threads; NOTES.md has the figures). The small CNN beats
// PyTorch: its shards hold 16 images, so PyTorch's per-operator overhead
// dominates while our per-step work is a few small GEMMs in preallocated
// buffers. ResNet-18 is GEMM-bound: package gemm (packed panels, FMA
// micro-kernel) on implicit im2col (the patch matrix is a gemm.Gathered
// whose panels are gathered from the padded input; dx of a stride-1
// convolution is the flipped convolution, no col2im). The replicas of a
// TrainShards call share each convolution's packed weights. The 10-class
// stand-in (BenchmarkStandInStep) spends about a fifth of a step in the
// micro-kernel and, on AVX-512, a sixth packing patches with masked loads
// (gathers on AVX2); what is left, biggest first: BatchNorm, padding, the
// strided convolutions' col2im and ReLU, each one pass over the
// activations. GODEBUG=cpu.avx512f=off benchmarks the AVX2 path.
//
// BenchmarkCNNEpochMNIST trains the small CNN for one epoch of MNIST
// (60,000 images, batch 128 split over W = 8 replicas, a separate backward
// per shard, mean gradient, SGD with momentum). The PyTorch twin is
// bench/peers/torch_cnn_epoch.py.
//
//	go test -run '^$' -bench CNNEpochMNIST -benchtime 1x ./nn
func BenchmarkCNNEpochMNIST(b *testing.B) {
	s := loadMNIST(b)
	m := nn.NewSmallCNN(rand.New(rand.NewPCG(1, 0)), 1, 28, 28, 10)
	reps := m.NewReplicas(8)
	opt := nn.NewSGD(m, 0.05, 0.9, 0)
	b.ReportAllocs()
	for b.Loop() {
		trainEpoch(m, reps, opt, s.Train, 128, 1)
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec, "s/epoch")
	b.ReportMetric(float64(s.Train.Len())/sec, "images/s")
	b.StopTimer()
	b.Logf("test accuracy after %d epoch(s): %.4f", b.N, accuracy(m, reps, s.Test))
}

// BenchmarkResNet18Step runs one forward and backward pass of CIFAR
// ResNet-18 (10 classes) on a batch of 128 random 3×32×32 images. W = 1
// is one replica with the whole batch; W = 8 splits it over 8 replicas
// (the paper's virtual workers). The PyTorch twin is
// bench/peers/torch_resnet18_step.py.
//
//	go test -run '^$' -bench ResNet18Step -benchtime 2x ./nn
func BenchmarkResNet18Step(b *testing.B) {
	for _, w := range []int{1, 8} {
		b.Run(map[int]string{1: "W=1", 8: "W=8"}[w], func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 0))
			m := nn.ResNet18(rng, 10)
			reps := m.NewReplicas(w)
			const batch = 128
			x := nn.NewTensor(batch, 3, 32, 32)
			for i := range x.Data {
				x.Data[i] = float32(rng.NormFloat64())
			}
			y := make([]int, batch)
			for i := range y {
				y[i] = rng.IntN(10)
			}
			res := make([]nn.ShardResult, w)
			nn.TrainShards(reps, x, y, res) // warm-up allocates the buffers
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for b.Loop() {
				nn.TrainShards(reps, x, y, res)
			}
			ips := float64(batch*b.N) / b.Elapsed().Seconds()
			b.ReportMetric(ips, "images/s")
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(float64(batch*b.N)/cpu, "images/cpu-s")
			}
			b.ReportMetric(50000/ips/60, "min/epoch")
		})
	}
}

// BenchmarkMLPStep is a fast smoke benchmark of the replica path.
func BenchmarkMLPStep(b *testing.B) {
	_ = data.Names
	rng := rand.New(rand.NewPCG(1, 0))
	m := nn.NewMLP(rng, 784, []int{256}, 10)
	reps := m.NewReplicas(8)
	x := nn.NewTensor(128, 784)
	y := make([]int, 128)
	res := make([]nn.ShardResult, 8)
	b.ReportAllocs()
	for b.Loop() {
		nn.TrainShards(reps, x, y, res)
	}
	b.ReportMetric(float64(128*b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkStandInStep runs one training step (forward, backward) of the
// training stand-ins (nn.StandInConfig) on a batch of 128 random 28×28
// images split over W = 8 replicas, as the reproduce blocks run them:
// 1 channel and 10 classes (Fashion-MNIST), 2 channels and 100 classes
// (fashion-stack100).
//
//	go test -run '^$' -bench StandInStep -benchtime 20x ./nn
func BenchmarkStandInStep(b *testing.B) {
	for _, tt := range []struct{ c, classes int }{{1, 10}, {2, 100}} {
		b.Run(fmt.Sprintf("C=%d/classes=%d", tt.c, tt.classes), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 0))
			m, err := nn.NewResNet(rng, nn.StandInConfig(tt.c, 28, 28, tt.classes))
			if err != nil {
				b.Fatal(err)
			}
			const batch, w = 128, 8
			reps := m.NewReplicas(w)
			x := nn.NewTensor(batch, tt.c, 28, 28)
			for i := range x.Data {
				x.Data[i] = float32(rng.NormFloat64())
			}
			y := make([]int, batch)
			for i := range y {
				y[i] = rng.IntN(tt.classes)
			}
			res := make([]nn.ShardResult, w)
			nn.TrainShards(reps, x, y, res)
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for b.Loop() {
				nn.TrainShards(reps, x, y, res)
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				// Robust on a shared machine, where wall time includes waiting.
				b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/step")
			}
		})
	}
}
