package train

import (
	"fmt"
	"math"
	"sync"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// Aggregator turns the W workers' per-parameter FP32 gradients into the
// update direction of every parameter under a Policy. It owns the
// controller model (for G-Binary, G-Ternary, Int8 and BFP8) and the error-feedback
// residuals.
type Aggregator struct {
	model  *nn.Model
	policy Policy
	w      int
	ctrl   *ctrlPath
	// latched: the policy follows the controller's mode latches (see
	// NewLatchedAggregator); gate is G-Ternary's gate then.
	latched bool
	gate    lowbit.Gate
	mean    [][]float32   // FP32 mean of the raw gradients
	ef      [][][]float32 // ef[k][i]: worker k's residual of parameter i (EF groups only)
	in      [][][]float32 // in[k][i]: worker k's payload source (g, or g + e with EF)
	pin     [][]float32   // per-worker view for software majority
	last    [][][]float32 // the gradients of the last Aggregate
	meanOK  []bool        // meanOK[i]: mean[i] holds the mean of last's parameter i
}

// NewAggregator returns an aggregator for w workers of m under p. layout
// is the payload layout of the controller regions (lowbit.WorkerMajor:
// each worker writes its own bit-plane lines; lowbit.ElementMajor: the
// paper's packet, gathered by the runtime, w <= 8).
func NewAggregator(m *nn.Model, p Policy, w int, layout lowbit.Layout) (*Aggregator, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if w < 1 || w > lowbit.MaxWorkers {
		return nil, fmt.Errorf("workers %d out of range [1, %d]", w, lowbit.MaxWorkers)
	}
	if layout != lowbit.ElementMajor && layout != lowbit.WorkerMajor {
		return nil, fmt.Errorf("unknown layout %v", layout)
	}
	a := &Aggregator{model: m, policy: p, w: w, mean: m.NewGrads(), meanOK: make([]bool, len(m.Params)), pin: make([][]float32, w)}
	ctrl, err := newCtrlPath(m, p, w, layout)
	if err != nil {
		return nil, err
	}
	a.ctrl = ctrl
	a.in = make([][][]float32, w)
	for k := range a.in {
		a.in[k] = make([][]float32, len(m.Params))
	}
	if p.any(func(s RuleSpec) bool { return s.EF }) {
		a.ef = make([][][]float32, w)
		for k := range a.ef {
			a.ef[k] = make([][]float32, len(m.Params))
			for i, prm := range m.Params {
				if p[prm.Group].EF {
					a.ef[k][i] = make([]float32, prm.Len())
					a.in[k][i] = make([]float32, prm.Len())
				}
			}
		}
	}
	return a, nil
}

// Mean returns the FP32 mean of the gradients passed to the last
// Aggregate, computing it if that call did not need it. It reads those
// gradients, so call it before they change.
func (a *Aggregator) Mean() [][]float32 {
	if a.last != nil {
		for i := range a.mean {
			a.meanOf(i)
		}
	}
	return a.mean
}

// meanOf sets mean[i] to the FP32 mean of the last gradients of parameter
// i unless it holds it already.
func (a *Aggregator) meanOf(i int) {
	if !a.meanOK[i] {
		meanGrad(a.mean[i], a.last, i)
		a.meanOK[i] = true
	}
}

// Aggregate writes the update direction of every parameter into dst
// (shaped like the parameters): the FP32 mean, its Int8 or BFP8
// approximation, or a vector in {-1, 0, +1} for sign rules. grads[k][i] is worker k's gradient of parameter i.
// A NaN or Inf in a gradient that a sign or summed rule would encode is an error
// naming the worker and parameter.
func (a *Aggregator) Aggregate(grads [][][]float32, dst [][]float32) error {
	if len(grads) != a.w {
		return fmt.Errorf("aggregate: %d workers' gradients, want %d", len(grads), a.w)
	}
	a.last = grads
	clear(a.meanOK)
	if a.latched {
		if err := a.readLatches(); err != nil {
			return err
		}
	}
	// The mean of the parameters whose rule reads it: FP32 groups average
	// straight into dst below, SignOfMean ones into a.mean here. Mean
	// forms the rest only if asked (the diagnostics), so a policy whose
	// FP32 group is the head does not average the backbone's gradients
	// every step.
	for i, prm := range a.model.Params {
		if a.policy[prm.Group].Rule == SignOfMean {
			a.meanOf(i)
		}
	}
	if err := a.prepare(grads); err != nil {
		return err
	}
	if a.ctrl != nil {
		if err := a.ctrl.aggregate(a.in, dst); err != nil {
			return err
		}
	}
	for i, prm := range a.model.Params {
		switch a.policy[prm.Group].Rule {
		case FormatRule(lowbit.FP32):
			meanGrad(dst[i], grads, i)
		case SignOfMean:
			if err := lowbit.CheckFinite(a.mean[i]); err != nil {
				return fmt.Errorf("parameter %s: mean gradient: %w", prm.Name, err)
			}
			for j, v := range a.mean[i] {
				dst[i][j] = signf(v)
			}
		case MajoritySign:
			for k := range a.pin {
				a.pin[k] = a.in[k][i]
			}
			majority(dst[i], a.pin)
		}
	}
	return nil
}

// meanGrads is nn.MeanGrads on raw slices: for every parameter i,
// meanGrad(dst[i], grads, i).
func meanGrads(dst [][]float32, grads [][][]float32) {
	for i := range dst {
		meanGrad(dst[i], grads, i)
	}
}

// meanChunk is how many floats of a parameter meanGrad averages at once
// (4 KB, so that the partial sums stay in L1 while every worker's
// gradient is added into them).
const meanChunk = 1024

// meanGrad sets d to the mean of the W workers' gradients of parameter i,
//
//	d[j] = (((g₀[j] + g₁[j]) + g₂[j]) + … + g_{W−1}[j]) · (1/W)
//
// in float32, the workers added in order 0..W−1 and the sum then scaled,
// as nn.MeanGrads computes it. Eight workers (the studies' W) are summed
// element by element in a register; other counts meanChunk elements at a
// time, all workers' terms into each chunk before the next. Either way d
// is written once instead of once per worker, and each element's sum is
// the same sequence of float32 operations, so the bits are the same.
func meanGrad(d []float32, grads [][][]float32, i int) {
	inv := 1 / float32(len(grads))
	if len(grads) == 8 {
		n := len(d)
		g0, g1, g2, g3 := grads[0][i][:n], grads[1][i][:n], grads[2][i][:n], grads[3][i][:n]
		g4, g5, g6, g7 := grads[4][i][:n], grads[5][i][:n], grads[6][i][:n], grads[7][i][:n]
		for j := range d {
			s := g0[j] + g1[j]
			s += g2[j]
			s += g3[j]
			s += g4[j]
			s += g5[j]
			s += g6[j]
			s += g7[j]
			d[j] = s * inv
		}
		return
	}
	for j0 := 0; j0 < len(d); j0 += meanChunk {
		dc := d[j0:min(j0+meanChunk, len(d))]
		copy(dc, grads[0][i][j0:])
		for _, g := range grads[1:] {
			gc := g[i][j0 : j0+len(dc)]
			for j, v := range gc {
				dc[j] += v
			}
		}
		for j := range dc {
			dc[j] *= inv
		}
	}
}

// prepare fills a.in: the raw gradients, or for error-feedback groups
// p = g + e, updating each worker's residual e ← p − s·(2b − 1) with
// s = mean |p| over the tensor and b = 1{p > 0}. Workers run in parallel.
// Sign rules' inputs are checked for NaN and Inf.
func (a *Aggregator) prepare(grads [][][]float32) error {
	work := false
	for i, prm := range a.model.Params {
		s := a.policy[prm.Group]
		if !s.EF {
			for k := range grads {
				a.in[k][i] = grads[k][i]
			}
		}
		work = work || s.EF || s.Rule == MajoritySign
	}
	if !work {
		// Controller rules check for NaN and Inf when they encode.
		return nil
	}
	errs := make([]error, a.w)
	var wg sync.WaitGroup
	for k := 0; k < a.w; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i, prm := range a.model.Params {
				s := a.policy[prm.Group]
				g := grads[k][i]
				if s.Rule == MajoritySign && !s.EF {
					if err := lowbit.CheckFinite(g); err != nil {
						errs[k] = fmt.Errorf("worker %d parameter %s: %w", k, prm.Name, err)
						return
					}
				}
				if !s.EF {
					continue
				}
				p, e := a.in[k][i], a.ef[k][i]
				var sum float64
				for j, v := range g {
					p[j] = v + e[j]
					sum += math.Abs(float64(p[j]))
				}
				sc := float32(sum / float64(max(len(p), 1)))
				for j, v := range p {
					// e = p - s·(2b - 1), b = 1{p > 0}, without a branch.
					e[j] = v - sc*float32(2*positive(v)-1)
				}
				if err := lowbit.CheckFinite(p); err != nil {
					errs[k] = fmt.Errorf("worker %d parameter %s (with error feedback): %w", k, prm.Name, err)
					return
				}
			}
		}(k)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// majority is MajoritySignSGD in software: dst[j] = sgn(#{k: g[k][j] > 0}
// − #{k: g[k][j] <= 0}), 0 on a tie. It counts in blocks of 512 elements,
// worker after worker, so each worker's gradient is read contiguously, and
// without branches on the (random) signs.
func majority(dst []float32, g [][]float32) {
	w := len(g)
	var cnt [512]int32
	var vote [lowbit.MaxWorkers + 1]float32 // vote[c] = sgn(2c - W)
	for c := 0; c <= w && c < len(vote); c++ {
		vote[c] = float32(lowbit.RefSign(2*c - w))
	}
	for lo := 0; lo < len(dst); lo += len(cnt) {
		hi := min(lo+len(cnt), len(dst))
		c := cnt[:hi-lo]
		clear(c)
		for k := 0; k < w; k++ {
			gk := g[k][lo:hi]
			c := c[:len(gk)]
			for j, v := range gk {
				c[j] += positive(v)
			}
		}
		d := dst[lo:hi]
		for j, n := range c[:len(d)] {
			d[j] = vote[n]
		}
	}
}

// positive returns 1 when v > 0 (positive, not NaN) and 0 otherwise,
// without a branch: the bit patterns of 0 < v <= +Inf are 1 ... 0x7F800000.
func positive(v float32) int32 {
	d := math.Float32bits(v) - 1
	return int32(uint64(int64(d)-0x7F800000) >> 63)
}

func signf(v float32) float32 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// Residuals returns the error-feedback residuals, ef[k][i] (nil entries
// for groups without error feedback; nil without any).
func (a *Aggregator) Residuals() [][][]float32 { return a.ef }

// ControllerTransactions returns how many controller transactions the
// aggregator has issued.
func (a *Aggregator) ControllerTransactions() int {
	if a.ctrl == nil {
		return 0
	}
	return a.ctrl.transactions()
}
