package nn

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/neuronfabric/nfabric/gemm"
)

// standInBatch returns batch number step of random 1×28×28 images with
// labels in [0, classes), the stand-ins' input size.
func standInBatch(step, n, classes int) (*Tensor, []int) {
	rng := rand.New(rand.NewPCG(uint64(step), 7))
	x := randTensor(rng, n, 1, 28, 28)
	y := make([]int, n)
	for i := range y {
		y[i] = rng.IntN(classes)
		x.Data[i*784+y[i]] += 3
	}
	return x, y
}

// standInState trains the stand-in for classes (StandInConfig) from a
// fixed seed for three steps of 48 images over W = 8 replicas and returns
// its checkpoint (parameters, running statistics, momentum).
//
// In TrainShards the replicas share the model's weight packs, and
// TrainStep writes the convolutions' dW over whatever they held (filled
// with NaN before each step here, to show it is never read). With
// sequential set the replicas run one after another outside TrainShards,
// each convolution packing its own weights and every GEMM free to use
// GOMAXPROCS goroutines, and each step is ZeroGrad, Forward and Backward,
// which add dW into zeros. With nchw set the ResNet keeps its activations
// in NCHW order, regrouping every convolution's GEMM result, instead of
// channel-major (resnetChannelMajor).
func standInState(t *testing.T, classes int, sequential, nchw bool) []byte {
	defer func(v bool) { resnetChannelMajor = v }(resnetChannelMajor)
	resnetChannelMajor = !nchw
	m, err := NewResNet(rand.New(rand.NewPCG(5, 1)), StandInConfig(1, 28, 28, classes))
	if err != nil {
		t.Fatal(err)
	}
	r := &run{m: m, reps: m.NewReplicas(8), opt: NewSGD(m, 0.05, 0.9, 5e-4), agg: m.NewGrads(), res: make([]ShardResult, 8)}
	nan := float32(math.NaN())
	for s := range 3 {
		x, y := standInBatch(s, 48, classes)
		if sequential {
			for k, rep := range r.reps {
				lo, hi := Shard(48, len(r.reps), k)
				view := &Tensor{Shape: []int{hi - lo, 1, 28, 28}, Data: x.Data[lo*784 : hi*784]}
				rep.ZeroGrad()
				logits := rep.Forward(view, true)
				SoftmaxCrossEntropy(logits, y[lo:hi], &rep.dlogits)
				rep.Backward(&rep.dlogits)
			}
			SyncBuffers(r.reps)
		} else {
			for _, rep := range r.reps {
				for _, g := range rep.Grads {
					for i := range g {
						g[i] = nan
					}
				}
			}
			TrainShards(r.reps, x, y, r.res)
		}
		MeanGrads(r.agg, r.reps)
		r.opt.Step(r.agg)
	}
	return r.state(t)
}

// TestStandInBitsAcrossEngines checks that training the stand-ins gives
// the same bytes whatever the engine does underneath: replicas sharing
// packed weights in TrainShards or packing their own one after another;
// convolution weight gradients written by the step's first product or
// zeroed and added into; channel-major activations or NCHW ones;
// GOMAXPROCS 1 or 4; and the micro-kernels, packers and activation passes
// this CPU selects against the AVX2 path (a child process with
// GODEBUG=cpu.avx512f=off, which on an AVX-512 host swaps the 12×32 and
// 8×32 kernels, the masked-load packer and padding for the 6×16 kernel,
// gathers and AVX2 padding); and nn's passes (kernels.go) against their
// reference loops.
func TestStandInBitsAcrossEngines(t *testing.T) {
	if out := os.Getenv("NN_STANDIN_STATE"); out != "" {
		// The child: write the states for the parent to compare.
		var all []byte
		for _, classes := range []int{10, 100} {
			all = append(all, standInState(t, classes, false, false)...)
		}
		if err := os.WriteFile(out, all, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var all []byte
	for _, classes := range []int{10, 100} {
		t.Run(fmt.Sprintf("classes=%d", classes), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			one := standInState(t, classes, false, false)
			runtime.GOMAXPROCS(4)
			four := standInState(t, classes, false, false)
			seq := standInState(t, classes, true, false)
			nchw := standInState(t, classes, false, true)
			if !bytes.Equal(one, four) {
				t.Errorf("GOMAXPROCS=1 and GOMAXPROCS=4 give different states")
			}
			if !bytes.Equal(four, seq) {
				t.Errorf("TrainShards (shared weight packs, dW overwritten) and sequential replicas (own packs, dW zeroed and added into) give different states")
			}
			if !bytes.Equal(four, nchw) {
				t.Errorf("channel-major and NCHW activations give different states")
			}
			all = append(all, four...)
		})
	}
	out := filepath.Join(t.TempDir(), "state")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStandInBitsAcrossEngines$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NN_STANDIN_STATE="+out, "GODEBUG=cpu.avx512f=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child with GODEBUG=cpu.avx512f=off: %v\n%s", err, msg)
	}
	avx2, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(all, avx2) {
		t.Errorf("kernels %q (passes %s) and the AVX2 path (GODEBUG=cpu.avx512f=off) give different states", gemm.KernelName(), kernelSet)
	}
	// nn's passes as their reference loops, the GEMMs unchanged.
	restore := useReferencePasses()
	defer restore()
	var ref []byte
	for _, classes := range []int{10, 100} {
		ref = append(ref, standInState(t, classes, false, false)...)
	}
	if !bytes.Equal(all, ref) {
		t.Errorf("passes %s and their reference loops give different states", kernelSet)
	}
}

// useReferencePasses installs the reference loops of kernels.go as the
// passes in use and returns the function that puts the previous ones back.
func useReferencePasses() (restore func()) {
	a, b, c, d, e, f, g, i, j := planeSums, planeSqDevs, planeSumDots, bnNormalize, bnBackward, reluOf, reluBackward, addOf, padPlanes
	k := bnNormRelu
	planeSums, planeSqDevs, planeSumDots, bnNormalize, bnBackward = refPlaneSums, refPlaneSqDevs, refPlaneSumDots, refBNNormalize, refBNBackward
	reluOf, reluBackward, addOf, padPlanes = refRelu, refReluBackward, refAdd, refPadPlanes
	bnNormRelu = refBNNormalizeRelu
	return func() {
		planeSums, planeSqDevs, planeSumDots, bnNormalize, bnBackward = a, b, c, d, e
		reluOf, reluBackward, addOf, padPlanes = f, g, i, j
		bnNormRelu = k
	}
}
