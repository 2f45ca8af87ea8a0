package train

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// ctrlPath is the aggregator's controller side: one host bucket (one
// controller region) per parameter tensor aggregated through the
// controller. Each step the workers encode their payloads, the host
// runtime writes the lines, reads the aggregate and decodes it (package
// host, the code path the functional tester checks on the controller).
//
// A bucket's Element0 is the tensor's offset in the model's flattened
// parameter vector (Params in order), so the paper's positional 2-of-3
// gate sees the flattened element index.
type ctrlPath struct {
	dev    *host.Device
	w      int
	ts     []ctrlTensor // by parameter index
	active []*host.Bucket
	idx    []int // parameter index of active[j]
}

type ctrlTensor struct {
	b    *host.Bucket // nil: the tensor has no region
	on   bool
	spec RuleSpec
	// Latched aggregator only: the tensor's integer-sum buckets, indexed
	// by format, mapped when a latch first selects the format. b is the
	// sign-plane region whose latch the control plane writes; a sum latch
	// reads its format's bucket instead.
	sums     [lowbit.NumFormats]*host.Bucket
	name     string
	n, elem0 int
}

// newCtrlPath maps a bucket for every parameter whose group's rule goes
// through the controller. It returns nil when none does.
func newCtrlPath(m *nn.Model, p Policy, w int, layout lowbit.Layout) (*ctrlPath, error) {
	if !p.Cxl() {
		return nil, nil
	}
	return mapCtrlPath(m, p, w, layout, nil)
}

// mapCtrlPath maps the buckets. With latched == nil a bucket is mapped
// for every tensor whose group's rule goes through the controller, with
// the rule's mode latched for good. With latched != nil every tensor gets
// a bucket, mapped in FP32 bypass with gate *latched, and the mode latches
// decide each step which tensors go through the controller (see
// NewLatchedAggregator). An Int8 or BFP8 rule's bucket is an integer-sum
// bucket (host.BucketConfig.Format: worker-major whatever layout says).
func mapCtrlPath(m *nn.Model, p Policy, w int, layout lowbit.Layout, latched *lowbit.Gate) (*ctrlPath, error) {
	if layout == lowbit.ElementMajor && w > lowbit.MaxPacketWorkers && (latched != nil || p.packets()) {
		return nil, fmt.Errorf("element-major packets carry at most %d workers, not %d", lowbit.MaxPacketWorkers, w)
	}
	if latched == nil && !p.packets() {
		layout = lowbit.WorkerMajor // integer-sum regions only: no packets
	}
	dev, err := host.Open(host.Config{Workers: w, Layout: layout})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c := &ctrlPath{dev: dev, w: w, ts: make([]ctrlTensor, len(m.Params))}
	flat := 0
	for i, prm := range m.Params {
		spec := p[prm.Group]
		n := prm.Len()
		if (latched != nil || spec.Rule.ViaController()) && n > 0 {
			mode := spec.Rule.Mode()
			if latched != nil {
				mode, spec = cxl.FP32Bypass, RuleSpec{Rule: FormatRule(lowbit.Ternary), Gate: *latched}
			}
			var gate lowbit.Gate
			if spec.Rule == FormatRule(lowbit.Ternary) {
				gate = spec.Gate
			}
			var f lowbit.Format // sign-plane bucket
			if spec.Rule.Sum() {
				f = spec.Rule.Format()
			}
			b, err := dev.Map(host.BucketConfig{Name: prm.Name, Elements: n, Element0: flat, Mode: mode, Gate: &gate, Format: f})
			if err != nil {
				return nil, fmt.Errorf("controller region for %s: %w", prm.Name, err)
			}
			c.ts[i] = ctrlTensor{b: b, on: latched == nil, spec: spec, name: prm.Name, n: n, elem0: flat}
		}
		flat += n
	}
	return c, nil
}

// workerTau is worker k's gate threshold for one tensor: GateTau (default
// 1) times the mean absolute value of its payload.
func workerTau(s RuleSpec, v []float32) float32 {
	tau := s.GateTau
	if tau == 0 {
		tau = 1
	}
	var sum float64
	for _, x := range v {
		sum += math.Abs(float64(x))
	}
	if len(v) == 0 {
		return 0
	}
	return float32(float64(tau) * sum / float64(len(v)))
}

// aggregate computes the controller update of every controller tensor
// that is on: dst[i] = u or m*u. in[k][i] is worker k's payload source for
// parameter i.
func (c *ctrlPath) aggregate(in [][][]float32, dst [][]float32) error {
	c.active, c.idx = c.active[:0], c.idx[:0]
	for i := range c.ts {
		if t := &c.ts[i]; t.b != nil && t.on {
			b, err := c.bucket(t)
			if err != nil {
				return err
			}
			c.active = append(c.active, b)
			c.idx = append(c.idx, i)
		}
	}
	err := host.EncodeWorkers(c.active, c.w,
		func(k, j int) []float32 { return in[k][c.idx[j]] },
		func(k, j int, g []float32) float32 { return workerTau(c.ts[c.idx[j]].spec, g) })
	if err != nil {
		return err
	}
	for j, b := range c.active {
		if err := b.Write(); err != nil {
			return fmt.Errorf("controller region %s: %w", b.Region().Name, err)
		}
		if _, err := b.Read(); err != nil {
			return fmt.Errorf("controller region %s: %w", b.Region().Name, err)
		}
		if err := b.Decode(dst[c.idx[j]]); err != nil {
			return fmt.Errorf("controller region %s: %w", b.Region().Name, err)
		}
	}
	return nil
}

// bucket is the bucket tensor t aggregates through: its own, or for a
// latched tensor whose latch selects a summed format's mode, its
// integer-sum bucket of that format (mapped at first use, latched in that mode).
func (c *ctrlPath) bucket(t *ctrlTensor) (*host.Bucket, error) {
	if !t.spec.Rule.Sum() || t.b.Region().Sum != lowbit.FP32 {
		return t.b, nil
	}
	f := t.spec.Rule.Format()
	if t.sums[f] == nil {
		b, err := c.dev.Map(host.BucketConfig{Name: t.name + "/" + f.String(), Elements: t.n, Element0: t.elem0, Mode: t.spec.Rule.Mode(), Format: f})
		if err != nil {
			return nil, fmt.Errorf("controller %v region for %s: %w", f, t.name, err)
		}
		t.sums[f] = b
	}
	return t.sums[f], nil
}

// transactions returns how many controller transactions the path issued.
func (c *ctrlPath) transactions() int { return int(c.dev.Stats().Host.Transactions) }
