package train

import (
	"fmt"
	"math"
	"sync"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// ctrlPath is the runtime side of G-Binary and G-Ternary: one controller
// region per parameter tensor aggregated through the controller, mapped
// once with the group's mode latched. Each step the workers encode their
// payload (in parallel, one goroutine per worker), the payload lines are
// written into the region through cxl.Core transactions, and the update is
// decoded from the controller's aggregate read — the code path the
// functional tester (cxl.Verify) checks.
//
// A region's Element0 is the tensor's offset in the model's flattened
// parameter vector (Params in order), so the paper's positional 2-of-3 gate
// sees the flattened element index.
type ctrlPath struct {
	core   *cxl.Core
	layout lowbit.Layout
	w      int
	ts     []ctrlTensor // by parameter index
	planes [][]byte     // worker-major: worker k's sign lines of every tensor, line aligned
	gates  [][]byte     // worker-major gate lines (worker gate only)
	packet []byte       // element-major: one tensor's sign packets
	gpack  []byte       // element-major gate packets
	resp   []byte       // response lines: pos (worker-major) or the aggregate packet
	nz     []byte       // worker-major nz plane
	view   [][]byte     // per-worker plane views of one tensor
	errs   []error
	tag    uint16
	reqs   int // transactions issued, for accounting
}

type ctrlTensor struct {
	on    bool
	spec  RuleSpec
	reg   cxl.Region
	id    cxl.RegionID
	n     int
	lines int // aggregate lines
	off   int // worker-major: byte offset in planes[k]
}

// newCtrlPath maps a region for every parameter whose group's rule goes
// through the controller. It returns nil when none does.
func newCtrlPath(m *nn.Model, p Policy, w int, layout lowbit.Layout) (*ctrlPath, error) {
	if !p.Cxl() {
		return nil, nil
	}
	return mapCtrlPath(m, p, w, layout, nil)
}

// mapCtrlPath maps the regions. With latched == nil a region is mapped for
// every tensor whose group's rule goes through the controller, with the
// rule's mode latched for good. With latched != nil every tensor gets a
// region, mapped in FP32 bypass with gate *latched, and the mode latches
// decide each step which tensors go through the controller (see
// NewLatchedAggregator).
func mapCtrlPath(m *nn.Model, p Policy, w int, layout lowbit.Layout, latched *lowbit.Gate) (*ctrlPath, error) {
	if layout == lowbit.ElementMajor && w > lowbit.MaxPacketWorkers {
		return nil, fmt.Errorf("element-major packets carry at most %d workers, not %d", lowbit.MaxPacketWorkers, w)
	}
	c := &ctrlPath{layout: layout, w: w, ts: make([]ctrlTensor, len(m.Params))}
	var regions []cxl.Region
	base, flat, off, maxLines := uint64(0), 0, 0, 0
	for i, prm := range m.Params {
		spec := p[prm.Group]
		n := prm.Len()
		if (latched != nil || spec.Rule.ViaController()) && n > 0 {
			mode := cxl.GBinary
			if spec.Rule == GTernary {
				mode = cxl.GTernary
			}
			if latched != nil {
				mode, spec = cxl.FP32Bypass, RuleSpec{Rule: GTernary, Gate: *latched}
			}
			lines := (n + layout.ElementsPerLine() - 1) / layout.ElementsPerLine()
			r := cxl.Region{Name: prm.Name, Base: base, Mode: mode, Workers: w, Layout: layout, Element0: flat}
			if spec.Rule == GTernary {
				r.Gate = spec.Gate
			}
			r.Size = uint64(r.Slabs()) * uint64(lines) * cxl.LineBytes
			if err := r.Validate(); err != nil {
				return nil, fmt.Errorf("controller region for %s: %w", prm.Name, err)
			}
			c.ts[i] = ctrlTensor{on: latched == nil, spec: spec, reg: r, n: n, lines: lines, off: off}
			regions = append(regions, r)
			base = r.End()
			off += lines * cxl.LineBytes
			maxLines = max(maxLines, lines)
		}
		flat += n
	}
	core, err := cxl.NewCore(cxl.Config{Capacity: max(base, cxl.LineBytes)})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.core = core
	k := 0
	for i := range c.ts {
		if c.ts[i].reg.Size == 0 {
			continue // no region: the tensor is empty or not aggregated here
		}
		id, err := core.Map(regions[k])
		if err != nil {
			return nil, fmt.Errorf("controller region for %s: %w", m.Params[i].Name, err)
		}
		c.ts[i].id = id
		k++
	}
	c.errs = make([]error, w)
	// Every worker encodes its own bit-planes (worker-major: written as
	// they are; element-major: gathered into the paper's packets by the
	// runtime, lowbit.PlanesToPacket).
	c.planes = make([][]byte, w)
	for k := range c.planes {
		c.planes[k] = make([]byte, off)
	}
	if p.usesWorkerGate() {
		c.gates = make([][]byte, w)
		for k := range c.gates {
			c.gates[k] = make([]byte, off)
		}
	}
	c.resp = make([]byte, maxLines*cxl.LineBytes)
	c.view = make([][]byte, w)
	if layout == lowbit.WorkerMajor {
		c.nz = make([]byte, maxLines*cxl.LineBytes)
	} else {
		c.packet = make([]byte, maxLines*cxl.LineBytes)
		if p.usesWorkerGate() {
			c.gpack = make([]byte, maxLines*cxl.LineBytes)
		}
	}
	return c, nil
}

func (p Policy) usesWorkerGate() bool {
	for _, s := range p {
		if s.Rule == GTernary && s.Gate.Kind == lowbit.GateWorker {
			return true
		}
	}
	return false
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

// aggregate computes the controller update of every controller tensor:
// dst[i] = u (worker-major: decoded from the pos/nz view planes;
// element-major: sgn(2c - W) from the count bytes, or the int8 G-Ternary
// value). in[k][i] is worker k's payload source for parameter i.
func (c *ctrlPath) aggregate(in [][][]float32, dst [][]float32) error {
	if err := c.encodePlanes(in); err != nil {
		return err
	}
	for i := range c.ts {
		t := &c.ts[i]
		if !t.on {
			continue
		}
		var err error
		if c.layout == lowbit.WorkerMajor {
			err = c.tensorPlanes(t, dst[i])
		} else {
			err = c.tensorPacket(t, dst[i])
		}
		if err != nil {
			return fmt.Errorf("controller region %s: %w", t.reg.Name, err)
		}
	}
	return nil
}

// encodePlanes has every worker encode its sign (and gate) planes of every
// controller tensor, one goroutine per worker.
func (c *ctrlPath) encodePlanes(in [][][]float32) error {
	var wg sync.WaitGroup
	for k := 0; k < c.w; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			c.errs[k] = nil
			for i := range c.ts {
				t := &c.ts[i]
				if !t.on {
					continue
				}
				g := in[k][i]
				seg := c.planes[k][t.off : t.off+t.lines*cxl.LineBytes]
				pb := lowbit.PlaneBytes(t.n)
				if err := lowbit.EncodeSigns(seg[:pb], g); err != nil {
					c.errs[k] = fmt.Errorf("worker %d parameter %s: %w", k, t.reg.Name, err)
					return
				}
				clear(seg[pb:])
				if t.reg.Gate.Kind == lowbit.GateWorker && t.spec.Rule == GTernary {
					gs := c.gates[k][t.off : t.off+t.lines*cxl.LineBytes]
					if err := lowbit.EncodeGates(gs[:pb], g, workerTau(t.spec, g)); err != nil {
						c.errs[k] = fmt.Errorf("worker %d parameter %s: %w", k, t.reg.Name, err)
						return
					}
					clear(gs[pb:])
				}
			}
		}(k)
	}
	wg.Wait()
	for _, err := range c.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *ctrlPath) do(req cxl.Req) (cxl.Resp, error) {
	c.tag++
	req.Tag = c.tag
	c.reqs++
	resp, err := c.core.Do(req)
	if err != nil {
		return resp, err
	}
	return resp, nil
}

// tensorPlanes writes every worker's plane lines of t into its region and
// reads the pos and nz view lines back.
func (c *ctrlPath) tensorPlanes(t *ctrlTensor, dst []float32) error {
	gated := t.reg.Gate.Kind == lowbit.GateWorker && t.spec.Rule == GTernary
	for k := 0; k < c.w; k++ {
		seg := c.planes[k][t.off:]
		for l := 0; l < t.lines; l++ {
			if _, err := c.do(cxl.Write(0, t.reg.SignAddr(k, l), seg[l*cxl.LineBytes:(l+1)*cxl.LineBytes])); err != nil {
				return err
			}
		}
		if gated {
			gs := c.gates[k][t.off:]
			for l := 0; l < t.lines; l++ {
				if _, err := c.do(cxl.Write(0, t.reg.GateAddr(k, l), gs[l*cxl.LineBytes:(l+1)*cxl.LineBytes])); err != nil {
					return err
				}
			}
		}
	}
	for l := 0; l < t.lines; l++ {
		pos, err := c.do(cxl.Read(0, t.reg.ViewAddr(l, 0)))
		if err != nil {
			return err
		}
		nz, err := c.do(cxl.Read(0, t.reg.ViewAddr(l, 1)))
		if err != nil {
			return err
		}
		if !pos.Transformed || !nz.Transformed {
			return fmt.Errorf("aggregate view line %d read untransformed in mode %v", l, pos.Mode)
		}
		copy(c.resp[l*cxl.LineBytes:], pos.Data[:])
		copy(c.nz[l*cxl.LineBytes:], nz.Data[:])
	}
	lowbit.DecodePlanes(dst, c.resp, c.nz, t.n, 1)
	return nil
}

// tensorPacket gathers the workers' sign planes of t into the paper's
// element-major packets (bit k of byte i = worker k's sign of element i),
// writes them and reads the aggregate bytes back.
func (c *ctrlPath) tensorPacket(t *ctrlTensor, dst []float32) error {
	nb := t.lines * cxl.LineBytes
	pb := lowbit.PlaneBytes(t.n)
	for k := range c.view {
		c.view[k] = c.planes[k][t.off : t.off+pb]
	}
	lowbit.PlanesToPacket(c.packet[:t.n], c.view, t.n)
	clear(c.packet[t.n:nb])
	gated := t.reg.Gate.Kind == lowbit.GateWorker && t.spec.Rule == GTernary
	if gated {
		for k := range c.view {
			c.view[k] = c.gates[k][t.off : t.off+pb]
		}
		lowbit.PlanesToPacket(c.gpack[:t.n], c.view, t.n)
		clear(c.gpack[t.n:nb])
	}
	for l := 0; l < t.lines; l++ {
		if _, err := c.do(cxl.Write(0, t.reg.SignAddr(0, l), c.packet[l*cxl.LineBytes:(l+1)*cxl.LineBytes])); err != nil {
			return err
		}
		if gated {
			if _, err := c.do(cxl.Write(0, t.reg.GateAddr(0, l), c.gpack[l*cxl.LineBytes:(l+1)*cxl.LineBytes])); err != nil {
				return err
			}
		}
	}
	for l := 0; l < t.lines; l++ {
		r, err := c.do(cxl.Read(0, t.reg.ViewAddr(l, 0)))
		if err != nil {
			return err
		}
		if !r.Transformed {
			return fmt.Errorf("aggregate line %d read untransformed in mode %v", l, r.Mode)
		}
		copy(c.resp[l*cxl.LineBytes:], r.Data[:])
	}
	if t.spec.Rule == GBinary {
		// The G-Binary response is the count c per element; u = sgn(2c - W).
		var vote [lowbit.MaxPacketWorkers + 1]float32
		for n := 0; n <= c.w; n++ {
			vote[n] = float32(lowbit.RefSign(2*n - c.w))
		}
		for j, n := range c.resp[:t.n] {
			if int(n) > c.w {
				return fmt.Errorf("count %d at element %d exceeds %d workers", n, j, c.w)
			}
			dst[j] = vote[n]
		}
		return nil
	}
	for j := 0; j < t.n; j++ {
		dst[j] = float32(int8(c.resp[j]))
	}
	return nil
}
