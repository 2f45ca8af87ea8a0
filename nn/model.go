package nn

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

// Model is a network architecture with its parameter values and merged
// BatchNorm running statistics. Compute happens in Replicas.
type Model struct {
	Name    string
	InShape []int // shape of one input sample, e.g. (3, 32, 32) or (784)
	Classes int
	Params  []*Param  // in a fixed construction order
	Buffers []*Buffer // running statistics, in construction order
	build   func(b *builder) Layer
	bufGen  int // bumped when Buffers are replaced from outside (Restore)
	// packs holds each convolution's weights packed for the GEMM, shared by
	// the replicas within one runShards call (see weightPack), in
	// construction order.
	packs []*weightPack
}

func newModel(name string, in []int, classes int, rng *rand.Rand, build func(b *builder) Layer) *Model {
	m := &Model{Name: name, InShape: append([]int(nil), in...), Classes: classes, build: build}
	build(&builder{m: m, create: true, rng: rng, ws: &workspace{}})
	return m
}

// NumParams returns the total number of parameter elements.
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.Params {
		n += p.Len()
	}
	return n
}

// GroupParams returns the number of parameter elements in group g.
func (m *Model) GroupParams(g Group) int {
	n := 0
	for _, p := range m.Params {
		if p.Group == g {
			n += p.Len()
		}
	}
	return n
}

// ParamIndex returns the index in Params of the named parameter, or -1.
func (m *Model) ParamIndex(name string) int {
	for i, p := range m.Params {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// NewGrads returns zeroed slices shaped like the parameters, e.g. to hold
// an aggregated gradient.
func (m *Model) NewGrads() [][]float32 {
	g := make([][]float32, len(m.Params))
	for i, p := range m.Params {
		g[i] = make([]float32, p.Len())
	}
	return g
}

// Replica is one virtual worker: a network instance bound to the model's
// parameter values with its own activations, gradients and running
// statistics. A Replica is not safe for concurrent use; distinct replicas
// are.
type Replica struct {
	Model *Model
	// Grads[i] is this worker's gradient of Model.Params[i], accumulated by
	// Backward since the last ZeroGrad.
	Grads   [][]float32
	buffers [][]float32
	bufGen  int
	// convs are the replica's convolutions, and lazy[i] reports whether
	// Grads[i] is one of their weight gradients, which TrainStep leaves
	// to the backward pass to overwrite (see TrainStep).
	convs   []*Conv2d
	lazy    []bool
	net     Layer
	ws      *workspace
	dlogits Tensor
	view    Tensor
}

// NewReplica returns a new replica whose running statistics are copies of
// the model's.
func (m *Model) NewReplica() *Replica {
	r := &Replica{Model: m, ws: &workspace{}, bufGen: m.bufGen}
	b := &builder{m: m, rep: r, ws: r.ws}
	r.net = m.build(b)
	if b.np != len(m.Params) || b.nb != len(m.Buffers) {
		panic("nn: replica did not bind every parameter")
	}
	return r
}

// NewReplicas returns w replicas of the model.
func (m *Model) NewReplicas(w int) []*Replica {
	rs := make([]*Replica, w)
	for i := range rs {
		rs[i] = m.NewReplica()
	}
	return rs
}

// Forward runs the network on x (N, InShape...) and returns the logits
// (N, Classes), owned by the replica. train selects batch statistics and
// running-statistic updates in BatchNorm.
func (r *Replica) Forward(x *Tensor, train bool) *Tensor {
	if numel(x.Shape[1:]) != numel(r.Model.InShape) {
		panic(fmt.Sprintf("nn: %s expects samples of shape %v, got %v", r.Model.Name, r.Model.InShape, x))
	}
	if r.bufGen != r.Model.bufGen {
		r.LoadBuffers()
	}
	return r.net.Forward(x, train)
}

// Backward propagates dlogits (N, Classes) for the last Forward and adds
// the parameter gradients into Grads.
func (r *Replica) Backward(dlogits *Tensor) { r.net.Backward(dlogits) }

// ZeroGrad sets every gradient to zero.
func (r *Replica) ZeroGrad() {
	for _, g := range r.Grads {
		zero(g)
	}
}

// TrainStep zeroes the gradients, runs Forward in training mode and
// Backward of the mean softmax cross-entropy, and returns the mean loss and
// the number of correct predictions. Afterwards Grads holds the gradient of
// the mean loss over x.
//
// A convolution's weight gradient is not zeroed first: its first product
// of the step writes dW (beta = 0) instead of adding into zeros, which
// saves a pass over most of a ResNet's gradients (zeroing, then reading
// them back) and gives the same values: the kernel adds C as fma(1, 0,
// acc) = acc, except that an acc of -0 (every product underflowing) would
// have become +0. A convolution that Backward did not reach is zeroed
// afterwards.
func (r *Replica) TrainStep(x *Tensor, labels []int) (loss float64, correct int) {
	for i, g := range r.Grads {
		if !r.lazy[i] {
			zero(g)
		}
	}
	for _, cv := range r.convs {
		cv.overwrite = true
	}
	logits := r.Forward(x, true)
	loss, correct = SoftmaxCrossEntropy(logits, labels, &r.dlogits)
	r.Backward(&r.dlogits)
	for _, cv := range r.convs {
		if cv.overwrite {
			zero(cv.dW)
			cv.overwrite = false
		}
	}
	return loss, correct
}

// Eval runs Forward in inference mode and returns the mean loss and the
// number of correct predictions.
func (r *Replica) Eval(x *Tensor, labels []int) (loss float64, correct int) {
	return SoftmaxCrossEntropy(r.Forward(x, false), labels, nil)
}

// LoadBuffers copies the model's running statistics into the replica.
func (r *Replica) LoadBuffers() {
	for i, b := range r.Model.Buffers {
		copy(r.buffers[i], b.Value)
	}
	r.bufGen = r.Model.bufGen
}

// ShardResult is what one replica reports for its shard.
type ShardResult struct {
	N       int     // samples in the shard
	Loss    float64 // mean loss over the shard (0 if N == 0)
	Correct int
}

// Shard returns the row range [lo, hi) of shard k when n rows are split
// into w contiguous shards: lo = k*n/w. Sizes differ by at most one.
func Shard(n, w, k int) (lo, hi int) { return k * n / w, (k + 1) * n / w }

// TrainShards splits the batch x (N, ...) with labels into len(reps)
// contiguous shards (see Shard), runs TrainStep of shard k on reps[k], all
// replicas in parallel goroutines, and writes each shard's result to
// res[k]. It then merges the running statistics with SyncBuffers. A replica
// whose shard is empty gets zero gradients.
func TrainShards(reps []*Replica, x *Tensor, labels []int, res []ShardResult) {
	runShards(reps, x, labels, res, true)
	SyncBuffers(reps)
}

// EvalShards is TrainShards in inference mode: no gradients, no change to
// running statistics.
func EvalShards(reps []*Replica, x *Tensor, labels []int, res []ShardResult) {
	runShards(reps, x, labels, res, false)
}

func runShards(reps []*Replica, x *Tensor, labels []int, res []ShardResult, train bool) {
	n, d := x.rows()
	if len(labels) != n || len(res) < len(reps) {
		panic("nn: runShards: labels or results do not match the batch")
	}
	// Several replicas already keep the cores busy: each one's GEMMs get
	// an equal share of them rather than GOMAXPROCS goroutines apiece.
	workers := max(1, runtime.GOMAXPROCS(0)/len(reps))
	pass := passes.Add(1)
	var wg sync.WaitGroup
	for k, r := range reps {
		lo, hi := Shard(n, len(reps), k)
		if hi == lo {
			r.ZeroGrad()
			res[k] = ShardResult{}
			continue
		}
		r.ws.workers = workers
		r.ws.pass = pass
		r.view.Shape = append(r.view.Shape[:0], x.Shape...)
		r.view.Shape[0] = hi - lo
		r.view.Data = x.Data[lo*d : hi*d]
		wg.Go(func() {
			var l float64
			var c int
			if train {
				l, c = r.TrainStep(&r.view, labels[lo:hi])
			} else {
				l, c = r.Eval(&r.view, labels[lo:hi])
			}
			res[k] = ShardResult{N: hi - lo, Loss: l, Correct: c}
		})
	}
	wg.Wait()
	for _, r := range reps {
		r.view.Data = nil // do not keep the caller's batch alive
		r.ws.workers = 0
		r.ws.pass = 0
	}
}

// passes numbers the runShards calls, so that a weightPack knows whether
// it holds the packs of the current call's weights.
var passes atomic.Uint64

// SyncBuffers sets each model running statistic to the mean of the
// replicas' values, summed in float64 in replica order 0..W-1, and copies
// the result back into every replica.
func SyncBuffers(reps []*Replica) {
	if len(reps) == 0 {
		return
	}
	m := reps[0].Model
	inv := 1 / float64(len(reps))
	for i, b := range m.Buffers {
		for j := range b.Value {
			var s float64
			for _, r := range reps {
				s += float64(r.buffers[i][j])
			}
			b.Value[j] = float32(s * inv)
		}
		for _, r := range reps {
			copy(r.buffers[i], b.Value)
		}
	}
}

// MeanGrads writes the mean over replicas of their gradients into dst
// (shaped like the parameters, see Model.NewGrads), summing in float32 in
// replica order 0..W-1 and multiplying by 1/W. This is the FP32 data-
// parallel aggregate.
func MeanGrads(dst [][]float32, reps []*Replica) {
	inv := 1 / float32(len(reps))
	for i := range dst {
		d := dst[i]
		copy(d, reps[0].Grads[i])
		for _, r := range reps[1:] {
			for j, v := range r.Grads[i] {
				d[j] += v
			}
		}
		for j := range d {
			d[j] *= inv
		}
	}
}

// NewMLP returns a multilayer perceptron on inputs of in features:
// Dense layers "fc1".."fcL" with ReLU between them; the last one (the
// classifier) is in group Head.
func NewMLP(rng *rand.Rand, in int, hidden []int, classes int) *Model {
	name := "mlp"
	for _, h := range hidden {
		name += fmt.Sprintf("-%d", h)
	}
	return newModel(name, []int{in}, classes, rng, func(b *builder) Layer {
		var s Sequential
		prev := in
		for i, h := range hidden {
			s = append(s, newDense(b, fmt.Sprintf("fc%d", i+1), prev, h), &ReLU{})
			prev = h
		}
		b.group = Head
		return append(s, newDense(b, fmt.Sprintf("fc%d", len(hidden)+1), prev, classes))
	})
}

// NewSmallCNN returns a small convolutional network for c×h×w images:
//
//	conv1 3×3 c→16 pad 1, ReLU, MaxPool 2
//	conv2 3×3 16→32 pad 1, ReLU, MaxPool 2
//	fc1 32·(h/4)·(w/4)→128, ReLU, fc2 128→classes (Head)
//
// Convolutions have biases and no BatchNorm. The PyTorch twin is
// bench/peers/torch_cnn_epoch.py.
func NewSmallCNN(rng *rand.Rand, c, h, w, classes int) *Model {
	return newModel("smallcnn", []int{c, h, w}, classes, rng, func(b *builder) Layer {
		c1 := newConv(b, "conv1", c, 16, 3, 1, 1, true)
		c1.NoInputGrad = true
		s := Sequential{
			c1, &ReLU{}, &MaxPool2d{K: 2, S: 2},
			newConv(b, "conv2", 16, 32, 3, 1, 1, true), &ReLU{}, &MaxPool2d{K: 2, S: 2},
			newDense(b, "fc1", 32*(h/2/2)*(w/2/2), 128), &ReLU{},
		}
		b.group = Head
		return append(s, newDense(b, "fc2", 128, classes))
	})
}

// ResNetConfig describes a CIFAR-style ResNet of BasicBlocks.
type ResNetConfig struct {
	// Blocks per stage; stage s has Width·2^s channels (or Widths[s]) and
	// stride 2 except stage 0. ResNet-18 is {2, 2, 2, 2}.
	Blocks []int
	Width  int // channels of the stem and stage 0; 64 for ResNet-18
	// Widths, if set, gives each stage's channels instead of Width·2^s
	// (one per stage; the stem keeps Width), e.g. a wide last stage.
	Widths     []int
	InChannels int // 3 for CIFAR
	H, W       int // input size, 32×32 for CIFAR
	Classes    int
	// StemStride is the stride of the stem convolution: 1 (or 0) for
	// CIFAR ResNet-18; 2 halves the resolution before stage 0, which makes
	// the 28×28 stand-ins (StandInConfig) about four times cheaper.
	StemStride int
}

// StandInConfig returns the CPU-sized ResNet the training stand-ins use
// for c×h×w images (28×28 for the MNIST family), shaped like the paper's
// ResNet-18 in where its parameters sit. A stride-2 stem, then:
//
//   - up to 10 classes: one BasicBlock per stage at widths 16, 32, 64
//     (77,754 parameters for one channel and 10 classes, the head 0.84%);
//   - more classes: one BasicBlock at widths 8, 16, 32 and a wide last
//     stage of three BasicBlocks at 256 channels on a 2×2 grid (3,079,876
//     parameters for two channels and 100 classes, the head 0.83%, the
//     last stage 99%).
//
// ResNet-18 keeps 75% of its parameters in its 512-wide last stage at
// 4×4 and its head holds 0.046% (10 classes) or 0.46% (100 classes, the
// paper's figure). A wide stage on a 2×2 grid costs 4 multiply-adds per
// parameter and image (ResNet-18's 16), which is what makes a head under
// 1% affordable; three blocks rather than ResNet-18's two because two
// would need 330 channels for the same share. SmallStandInConfig is the
// earlier 100-class stand-in.
func StandInConfig(c, h, w, classes int) ResNetConfig {
	cfg := ResNetConfig{Blocks: []int{1, 1, 1}, Width: 16, InChannels: c, H: h, W: w, Classes: classes, StemStride: 2}
	if classes > 10 {
		cfg.Blocks, cfg.Width, cfg.Widths = []int{1, 1, 1, 3}, 8, []int{8, 16, 32, 256}
	}
	return cfg
}

// SmallStandInConfig is the first stand-in (model "resnet-standin-small"):
// StandInConfig's 16, 32, 64 network up to 10 classes and, for more, a
// fourth stage of one BasicBlock at 128 channels (320,292 parameters for
// two channels and 100 classes, the head 4.0%, nine times the paper's
// share).
func SmallStandInConfig(c, h, w, classes int) ResNetConfig {
	cfg := ResNetConfig{Blocks: []int{1, 1, 1}, Width: 16, InChannels: c, H: h, W: w, Classes: classes, StemStride: 2}
	if classes > 10 {
		cfg.Blocks = []int{1, 1, 1, 1}
	}
	return cfg
}

// ResNet18Config returns the paper's workload: CIFAR ResNet-18 for 3×32×32
// images (11,173,962 parameters for 10 classes, 11,220,132 for 100).
func ResNet18Config(classes int) ResNetConfig {
	return ResNetConfig{Blocks: []int{2, 2, 2, 2}, Width: 64, InChannels: 3, H: 32, W: 32, Classes: classes}
}

// Validate reports the first invalid field.
func (c ResNetConfig) Validate() error {
	switch {
	case len(c.Blocks) == 0 || len(c.Blocks) > 4:
		return fmt.Errorf("resnet: Blocks has %d stages, want 1..4", len(c.Blocks))
	case c.Width < 1:
		return fmt.Errorf("resnet: Width %d < 1", c.Width)
	case c.InChannels < 1 || c.H < 1 || c.W < 1:
		return fmt.Errorf("resnet: input %dx%dx%d is empty", c.InChannels, c.H, c.W)
	case c.Classes < 2:
		return fmt.Errorf("resnet: Classes %d < 2", c.Classes)
	case c.StemStride < 0 || c.StemStride > 4:
		return fmt.Errorf("resnet: StemStride %d outside 0..4", c.StemStride)
	}
	for i, n := range c.Blocks {
		if n < 1 {
			return fmt.Errorf("resnet: Blocks[%d] = %d < 1", i, n)
		}
	}
	if c.Widths != nil && len(c.Widths) != len(c.Blocks) {
		return fmt.Errorf("resnet: %d Widths for %d stages", len(c.Widths), len(c.Blocks))
	}
	for i, w := range c.Widths {
		if w < 1 {
			return fmt.Errorf("resnet: Widths[%d] = %d < 1", i, w)
		}
	}
	return nil
}

// stageWidth returns the channels of stage s.
func (c ResNetConfig) stageWidth(s int) int {
	if c.Widths != nil {
		return c.Widths[s]
	}
	return c.Width << s
}

// NewResNet returns a CIFAR-style ResNet: a 3×3 stem convolution (stride
// cfg.StemStride, 1 by default)
// "conv1" (no bias) with BatchNorm "bn1" and ReLU and no max-pool, stages
// "layer1".."layer4" of BasicBlocks, global average pooling, and the
// classifier "fc" (group Head). Every convolution is bias-free; BatchNorm
// layers carry weight (γ) and bias (β).
// resnetChannelMajor builds ResNets whose convolutions write channel-major
// activations (see Conv2d), which every layer up to the pooling keeps; the
// tests turn it off to compare with the NCHW path.
var resnetChannelMajor = true

func NewResNet(rng *rand.Rand, cfg ResNetConfig) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	depth := 2
	for _, n := range cfg.Blocks {
		depth += 2 * n
	}
	name := fmt.Sprintf("resnet%d", depth)
	if cfg.Width != 64 {
		name += fmt.Sprintf("-w%d", cfg.Width)
	}
	stemStride := max(cfg.StemStride, 1)
	if stemStride != 1 {
		name += fmt.Sprintf("-s%d", stemStride)
	}
	cfg.Blocks = append([]int(nil), cfg.Blocks...)
	if cfg.Widths != nil {
		cfg.Widths = append([]int(nil), cfg.Widths...)
		name += "-x" + joinInts(cfg.Widths, ".")
	}
	return newModel(name, []int{cfg.InChannels, cfg.H, cfg.W}, cfg.Classes, rng, func(b *builder) Layer {
		b.chanMajor = resnetChannelMajor
		stem := newConv(b, "conv1", cfg.InChannels, cfg.Width, 3, stemStride, 1, false)
		stem.NoInputGrad = true
		s := Sequential{stem, &bnReLU{BN: newBatchNorm(b, "bn1", cfg.Width)}}
		in := cfg.Width
		for st, nb := range cfg.Blocks {
			out := cfg.stageWidth(st)
			for i := 0; i < nb; i++ {
				stride := 1
				if i == 0 && st > 0 {
					stride = 2
				}
				s = append(s, newBasicBlock(b, fmt.Sprintf("layer%d.%d", st+1, i), in, out, stride))
				in = out
			}
		}
		s = append(s, &GlobalAvgPool{})
		b.group = Head
		return append(s, newDense(b, "fc", in, cfg.Classes))
	}), nil
}

// ResNet18 returns NewResNet(rng, ResNet18Config(classes)); it panics if
// classes < 2.
func ResNet18(rng *rand.Rand, classes int) *Model {
	m, err := NewResNet(rng, ResNet18Config(classes))
	if err != nil {
		panic(err)
	}
	return m
}
