package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// layerModel wraps a single layer built by mk into a model so the layer
// gets parameters through the normal builder path.
func layerModel(in []int, mk func(b *builder) Layer) *Replica {
	m := newModel("layer", in, 1, rand.New(rand.NewPCG(7, 7)), mk)
	// Non-default parameter values so that γ = 1, β = 0 are not special.
	rng := rand.New(rand.NewPCG(8, 8))
	for _, p := range m.Params {
		for i := range p.Value {
			p.Value[i] += float32(0.2 * rng.NormFloat64())
		}
	}
	return m.NewReplica()
}

func randTensor(rng *rand.Rand, shape ...int) *Tensor {
	t := NewTensor(shape...)
	for i := range t.Data {
		t.Data[i] = float32(rng.NormFloat64())
	}
	return t
}

// checkGrad compares the analytic gradient grad of f with respect to the
// float32 values v against central differences (f evaluated in float64):
//
//	num(h) = (f(v+h) - f(v-h)) / 2h,   |num - grad| <= atol + rtol·|grad|
//
// ReLU and max-pool make f piecewise smooth, and a kink within h of v
// spoils num(h). An entry passes if num(h) or num(h/4) matches; otherwise,
// if the one-sided slopes at h/4 disagree by more than the tolerance, a
// kink is assumed and the entry is skipped. Any mismatch with agreeing
// slopes, or more than one entry and more than a quarter of them skipped, fails the check.
// It checks at most maxN entries spread over v.
func checkGrad(t *testing.T, what string, v, grad []float32, f func() float64, h, atol, rtol float64, maxN int) {
	t.Helper()
	step := 1
	if len(v) > maxN {
		step = len(v)/maxN + 1
	}
	// slopes returns the forward, backward and central differences at h.
	slopes := func(i int, h float64) (fwd, bwd, cen float64) {
		old := v[i]
		f0 := f()
		v[i] = old + float32(h)
		fp := f()
		v[i] = old - float32(h)
		fm := f()
		v[i] = old
		hp := float64(old+float32(h)) - float64(old)
		hm := float64(old) - float64(old-float32(h))
		return (fp - f0) / hp, (f0 - fm) / hm, (fp - fm) / (hp + hm)
	}
	bad, skipped, n := 0, 0, 0
	for i := 0; i < len(v); i += step {
		n++
		ana := float64(grad[i])
		tol := atol + rtol*math.Abs(ana)
		if _, _, num := slopes(i, h); math.Abs(num-ana) <= tol {
			continue
		}
		fwd, bwd, num := slopes(i, h/4)
		if math.Abs(num-ana) <= tol {
			continue
		}
		if math.Abs(fwd-bwd) > tol {
			skipped++
			continue
		}
		if bad < 5 {
			t.Errorf("%s[%d]: analytic %.6g, numeric %.6g", what, i, ana, num)
		}
		bad++
	}
	if skipped > 1 && skipped*4 > n {
		t.Errorf("%s: %d of %d entries skipped at kinks", what, skipped, n)
	}
}

func TestLayerGradients(t *testing.T) {
	kinkFree := func(rng *rand.Rand, shape ...int) *Tensor {
		// Distinct values at least 0.05 apart and away from 0, so ReLU and
		// max-pool decisions do not change under a perturbation of 1e-2.
		x := NewTensor(shape...)
		perm := rng.Perm(len(x.Data))
		for i, p := range perm {
			x.Data[i] = float32(p-len(perm)/2)*0.05 + 0.025
		}
		return x
	}
	tests := []struct {
		name  string
		in    []int
		batch int
		mk    func(b *builder) Layer
		input func(rng *rand.Rand, shape ...int) *Tensor
	}{
		{"dense", []int{5}, 3, func(b *builder) Layer { return newDense(b, "fc", 5, 4) }, randTensor},
		{"dense-4d-input", []int{2, 2, 2}, 2, func(b *builder) Layer { return newDense(b, "fc", 8, 3) }, randTensor},
		{"conv3x3-pad1", []int{2, 5, 5}, 2, func(b *builder) Layer { return newConv(b, "c", 2, 3, 3, 1, 1, true) }, randTensor},
		{"conv3x3-stride2", []int{2, 6, 7}, 2, func(b *builder) Layer { return newConv(b, "c", 2, 3, 3, 2, 1, false) }, randTensor},
		{"conv1x1-stride2", []int{3, 5, 5}, 2, func(b *builder) Layer { return newConv(b, "c", 3, 2, 1, 2, 0, false) }, randTensor},
		{"conv3x3-pad1-9x9", []int{2, 9, 9}, 2, func(b *builder) Layer { return newConv(b, "c", 2, 3, 3, 1, 1, true) }, randTensor},
		{"conv3x3-stride2-17x16", []int{2, 17, 16}, 2, func(b *builder) Layer { return newConv(b, "c", 2, 3, 3, 2, 1, false) }, randTensor},
		{"conv1x1-pad1", []int{2, 4, 3}, 2, func(b *builder) Layer { return newConv(b, "c", 2, 3, 1, 1, 1, true) }, randTensor},
		{"conv5x5-pad2-stride3", []int{1, 7, 8}, 1, func(b *builder) Layer { return newConv(b, "c", 1, 2, 5, 3, 2, true) }, randTensor},
		{"batchnorm-4d", []int{3, 3, 2}, 4, func(b *builder) Layer { return newBatchNorm(b, "bn", 3) }, randTensor},
		{"batchnorm-2d", []int{3}, 5, func(b *builder) Layer { return newBatchNorm(b, "bn", 3) }, randTensor},
		{"relu", []int{2, 3, 3}, 2, func(b *builder) Layer { return &ReLU{} }, kinkFree},
		{"maxpool2", []int{2, 4, 5}, 2, func(b *builder) Layer { return &MaxPool2d{K: 2, S: 2} }, kinkFree},
		{"maxpool3-stride2", []int{1, 7, 7}, 2, func(b *builder) Layer { return &MaxPool2d{K: 3, S: 2} }, kinkFree},
		{"gap", []int{3, 3, 4}, 2, func(b *builder) Layer { return &GlobalAvgPool{} }, randTensor},
		{"basicblock-identity", []int{2, 4, 4}, 3, func(b *builder) Layer { return newBasicBlock(b, "blk", 2, 2, 1) }, randTensor},
		{"basicblock-downsample", []int{2, 5, 5}, 3, func(b *builder) Layer { return newBasicBlock(b, "blk", 2, 3, 2) }, randTensor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			r := layerModel(tt.in, tt.mk)
			x := tt.input(rng, append([]int{tt.batch}, tt.in...)...)
			// L = Σ r_i y_i with a fixed random projection r.
			y := r.net.Forward(x, true)
			proj := randTensor(rng, y.Shape...)
			loss := func() float64 {
				y := r.net.Forward(x, true)
				var s float64
				for i, v := range y.Data {
					s += float64(v) * float64(proj.Data[i])
				}
				return s
			}
			r.ZeroGrad()
			r.net.Forward(x, true)
			dx := r.net.Backward(proj)
			dxc := append([]float32(nil), dx.Data...)
			checkGrad(t, "x", x.Data, dxc, loss, 1e-2, 2e-3, 2e-3, 200)
			for i, p := range r.Model.Params {
				checkGrad(t, p.Name, p.Value, r.Grads[i], loss, 1e-2, 2e-3, 2e-3, 200)
			}
		})
	}
}

func TestModelGradients(t *testing.T) {
	tests := []struct {
		name  string
		m     func(rng *rand.Rand) *Model
		batch int
	}{
		{"mlp", func(rng *rand.Rand) *Model { return NewMLP(rng, 12, []int{7, 5}, 4) }, 5},
		{"smallcnn", func(rng *rand.Rand) *Model { return NewSmallCNN(rng, 2, 8, 8, 3) }, 3},
		{"resnet-tiny", func(rng *rand.Rand) *Model {
			m, err := NewResNet(rng, ResNetConfig{Blocks: []int{1, 1}, Width: 3, InChannels: 2, H: 6, W: 6, Classes: 3})
			if err != nil {
				panic(err)
			}
			return m
		}, 4},
		{"resnet-stem-stride2", func(rng *rand.Rand) *Model {
			m, err := NewResNet(rng, ResNetConfig{Blocks: []int{1, 1}, Width: 3, InChannels: 2, H: 9, W: 8, Classes: 3, StemStride: 2})
			if err != nil {
				panic(err)
			}
			return m
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			m := tt.m(rng)
			r := m.NewReplica()
			x := randTensor(rng, append([]int{tt.batch}, m.InShape...)...)
			labels := make([]int, tt.batch)
			for i := range labels {
				labels[i] = rng.IntN(m.Classes)
			}
			loss := func() float64 {
				l, _ := SoftmaxCrossEntropy(r.Forward(x, true), labels, nil)
				return l
			}
			r.TrainStep(x, labels)
			for i, p := range m.Params {
				checkGrad(t, fmt.Sprintf("%s %s", m.Name, p.Name), p.Value, r.Grads[i], loss, 3e-3, 1e-3, 3e-2, 40)
			}
		})
	}
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	z := randTensor(rng, 4, 6)
	labels := []int{0, 5, 2, 2}
	var d Tensor
	SoftmaxCrossEntropy(z, labels, &d)
	f := func() float64 { l, _ := SoftmaxCrossEntropy(z, labels, nil); return l }
	checkGrad(t, "logits", z.Data, d.Data, f, 1e-2, 1e-4, 1e-3, 100)

	// Uniform logits: loss = log K, arg-max ties go to index 0.
	u := NewTensor(2, 4)
	l, c := SoftmaxCrossEntropy(u, []int{0, 3}, nil)
	if math.Abs(l-math.Log(4)) > 1e-12 || c != 1 {
		t.Errorf("uniform logits: loss %v correct %d; want %v, 1", l, c, math.Log(4))
	}
}
