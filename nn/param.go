package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/neuronfabric/nfabric/gemm"
)

// Group is the layer group a parameter belongs to. The training package
// may aggregate the groups with different rules (paper Sec. 7.3: low-bit
// backbone, FP32 head).
type Group int

const (
	// Backbone is every parameter except the final classifier.
	Backbone Group = iota
	// Head is the final classifier (its weight and bias).
	Head
	// NumGroups is the number of groups: arrays indexed by Group have
	// this length, so a new group added above it reaches every policy,
	// accounting and diagnostic without further edits.
	NumGroups int = iota
)

// Groups lists the groups in index order.
func Groups() []Group {
	gs := make([]Group, NumGroups)
	for i := range gs {
		gs[i] = Group(i)
	}
	return gs
}

// String returns "backbone" or "head".
func (g Group) String() string {
	switch g {
	case Backbone:
		return "backbone"
	case Head:
		return "head"
	}
	return fmt.Sprintf("Group(%d)", int(g))
}

// Param is one named parameter tensor. Value is shared by every replica of
// the model; gradients live in the replicas.
type Param struct {
	Name  string // e.g. "layer2.0.conv1.weight"
	Group Group  // Backbone or Head
	Shape []int  // e.g. (F, C, KH, KW)
	Value []float32
}

// Len returns the number of elements of the parameter.
func (p *Param) Len() int { return len(p.Value) }

// Buffer is a named non-trainable state tensor, such as a BatchNorm running
// mean. The model holds the merged value; replicas hold copies.
type Buffer struct {
	Name  string
	Value []float32
}

// builder creates the layers of one network instance. The first instance
// of a model (create == true) allocates and initialises the parameters;
// later instances (replicas) bind to them in the same order.
type builder struct {
	m      *Model
	create bool
	rng    *rand.Rand
	group  Group
	rep    *Replica // nil while creating
	np, nb int      // next parameter and buffer index when binding
	npk    int      // next weight pack when binding
	// chanMajor makes the convolutions built channel-major (Conv2d).
	chanMajor bool
	ws        *workspace
}

// param returns the value and gradient slices of the named parameter.
// init fills the value when the parameter is created.
func (b *builder) param(name string, shape []int, init func(w []float32)) (w, g []float32) {
	if b.create {
		p := &Param{Name: name, Group: b.group, Shape: append([]int(nil), shape...), Value: make([]float32, numel(shape))}
		init(p.Value)
		b.m.Params = append(b.m.Params, p)
		return p.Value, make([]float32, len(p.Value))
	}
	p := b.m.Params[b.np]
	if p.Name != name || !sameShape(p.Shape, shape) {
		panic(fmt.Sprintf("nn: replica binds %s %v to parameter %s %v", name, shape, p.Name, p.Shape))
	}
	b.np++
	g = make([]float32, len(p.Value))
	b.rep.Grads = append(b.rep.Grads, g)
	b.rep.lazy = append(b.rep.lazy, false)
	return p.Value, g
}

// buffer returns the replica's copy of the named buffer, initialised to v.
func (b *builder) buffer(name string, n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	if b.create {
		b.m.Buffers = append(b.m.Buffers, &Buffer{Name: name, Value: append([]float32(nil), s...)})
		return s
	}
	bf := b.m.Buffers[b.nb]
	if bf.Name != name || len(bf.Value) != n {
		panic(fmt.Sprintf("nn: replica binds buffer %s to %s", name, bf.Name))
	}
	b.nb++
	copy(s, bf.Value)
	b.rep.buffers = append(b.rep.buffers, s)
	return s
}

// weightPack returns the model's next weightPack, created with the model
// and shared by its replicas.
func (b *builder) weightPack() *weightPack {
	if b.create {
		wp := &weightPack{}
		b.m.packs = append(b.m.packs, wp)
		return wp
	}
	wp := b.m.packs[b.npk]
	b.npk++
	return wp
}

// kaimingNormal fills w with N(0, 2/fan) samples (He et al., the ReLU gain),
// the initialisation torchvision uses for ResNet convolutions (fan = fan_out).
func (b *builder) kaimingNormal(fan int) func(w []float32) {
	return func(w []float32) {
		std := math.Sqrt(2 / float64(fan))
		for i := range w {
			w[i] = float32(b.rng.NormFloat64() * std)
		}
	}
}

// uniform fills w with U(-bound, bound) samples, PyTorch's default for
// Linear and Conv layers with bound = 1/sqrt(fan_in).
func (b *builder) uniform(bound float64) func(w []float32) {
	return func(w []float32) {
		for i := range w {
			w[i] = float32((2*b.rng.Float64() - 1) * bound)
		}
	}
}

func constant(v float32) func(w []float32) {
	return func(w []float32) {
		for i := range w {
			w[i] = v
		}
	}
}

// workspace is scratch memory shared by the layers of one replica, which
// run one at a time: a convolution's padded input and output grids.
type workspace struct {
	// pad holds a group's zero-padded input, dpad its padded dy;
	// grid and dgrid hold F × positions matrices (Y, dY, dx, dcol).
	pad, dpad, grid, dgrid []float32
	// workers is how many goroutines each of the replica's GEMMs may use;
	// 0 means GOMAXPROCS. runShards gives each of W replicas running at
	// once GOMAXPROCS/W (at least 1), so that the replicas' goroutines and
	// the GEMMs' together do not oversubscribe the cores. The GEMM's result
	// does not depend on it (see package gemm).
	workers int
	// pass is the runShards call the replica is running in (0: none).
	// During one call the parameters do not change, so the replicas share
	// their convolutions' packed weights (see weightPack).
	pass uint64
	// packed holds one layer's weights packed for repeated products (a
	// convolution's image groups), packedDY a group's dY for dW.
	packed, packedDY gemm.PackedA
}

func (ws *workspace) gemmWorkers() int {
	if ws.workers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return ws.workers
}

// gemm computes C = alpha·op(A)·op(B) + beta·C (row-major, see
// gemm.Sgemm) with the replica's share of the cores.
func (ws *workspace) gemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm.ParallelSgemm(ws.gemmWorkers(), tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// grow returns (*buf)[:n], reallocating *buf when it is too small.
func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}
