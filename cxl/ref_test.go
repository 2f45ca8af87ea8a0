package cxl

import (
	"errors"

	"github.com/neuronfabric/nfabric/lowbit"
)

// refModel is an independent reference model of the controller, written
// from the package documentation with no code shared with Core: plain
// per-worker loops, the lowbit Ref* oracles, and address decoding by
// search rather than arithmetic on slab sizes.
type refModel struct {
	capacity uint64
	mem      map[uint64][64]byte // by address
	regions  []refRegion
	seq      uint64
	inflight []refPending
}

type refRegion struct {
	r      Region
	mode   Mode
	mapped bool
}

type refPending struct {
	req  Req
	data [64]byte
	seq  uint64
	mode Mode
	reg  int // -1: plain memory
	rr   Region
	err  error // sentinel
}

func newRefModel(capacity uint64) *refModel {
	return &refModel{capacity: capacity, mem: map[uint64][64]byte{}}
}

func (m *refModel) mapRegion(r Region) int {
	m.regions = append(m.regions, refRegion{r: r, mode: r.Mode, mapped: true})
	return len(m.regions) - 1
}

// roles: what an address means inside region r.
type refRole struct {
	kind   int // 0 sign (or code) data, 1 gate data, 2 view, 3 exponent data, 4 exponent view
	worker int
	line   int
	part   int
}

// refSumLines returns, for a Sum region, the mantissa (code) lines and
// the exponent lines each worker writes, by counting: the smallest l
// whose lines fill the data window. ok is false for other regions.
func refSumLines(r Region) (code, exp int, ok bool) {
	if r.Sum == lowbit.FP32 {
		return 0, 0, false
	}
	per := int(r.Size / 64 / uint64(r.Workers))
	for code = 1; ; code++ {
		exp = 0
		if r.Sum.BlockExponents() {
			for e := 0; e*64 < code; e++ {
				exp++
			}
		}
		if code+exp >= per {
			return code, exp, true
		}
	}
}

// refSumLocate finds the role of addr in a Sum region by walking its
// lines in the documented order: W code slabs, W exponent slabs, the sum
// view (two lines per payload line), the exponent view.
func refSumLocate(r Region, addr uint64) (refRole, bool) {
	code, exp, _ := refSumLines(r)
	a := r.Base
	for k := range r.Workers {
		for l := range code {
			if a == addr {
				return refRole{kind: 0, worker: k, line: l}, true
			}
			a += 64
		}
	}
	for k := range r.Workers {
		for x := range exp {
			if a == addr {
				return refRole{kind: 3, worker: k, line: x}, true
			}
			a += 64
		}
	}
	for l := range code {
		for part := range 2 {
			if a == addr {
				return refRole{kind: 2, line: l, part: part}, true
			}
			a += 64
		}
	}
	for x := range exp {
		if a == addr {
			return refRole{kind: 4, line: x}, true
		}
		a += 64
	}
	return refRole{}, false
}

// refSumAddr is refSumLocate's inverse for data lines (kind 0 or 3).
func refSumAddr(r Region, kind, worker, line int) uint64 {
	code, exp, _ := refSumLines(r)
	if kind == 0 {
		return r.Base + uint64(worker*code+line)*64
	}
	return r.Base + uint64(r.Workers*code+worker*exp+line)*64
}

// refAggregates says whether a view read of r in mode is transformed: a
// Sum region in its own format's mode only, a sign-plane region in the
// paper's two vote modes.
func refAggregates(r Region, mode Mode) bool {
	if r.Sum != lowbit.FP32 {
		return mode == Aggregate(r.Sum)
	}
	return mode == Aggregate(lowbit.Binary) || mode == Aggregate(lowbit.Ternary)
}

// expectSum is the oracle of a Sum region's view line: the Ref sums of
// what the workers wrote, or the aligned exponents.
func (m *refModel) expectSum(r Region, role refRole) (out [64]byte) {
	mem := func(a uint64) []int8 {
		l := m.mem[a]
		codes := make([]int8, 64)
		for i, b := range l {
			codes[i] = int8(b)
		}
		return codes
	}
	if role.kind == 4 { // exponent view: max over workers, floor -127
		for b := range 64 {
			e := -127
			for k := range r.Workers {
				e = max(e, int(mem(refSumAddr(r, 3, k, role.line))[b]))
			}
			out[b] = byte(int8(e))
		}
		return out
	}
	src := make([][]int8, r.Workers)
	exps := make([][]int8, r.Workers)
	for k := range r.Workers {
		src[k] = mem(refSumAddr(r, 0, k, role.line))
		exps[k] = mem(refSumAddr(r, 3, k, role.line/64))[role.line%64 : role.line%64+1]
	}
	if !r.Sum.BlockExponents() {
		exps = nil
	}
	sums, _ := r.Sum.RefSumCodes(src, exps, 64) // lowbit's Ref twin of the format
	for i := range 32 {
		v := uint16(sums[32*role.part+i])
		out[2*i], out[2*i+1] = byte(v), byte(v>>8)
	}
	return out
}

func refSlabs(r Region) (signSlabs, gateSlabs int) {
	signSlabs = 1
	if r.Layout == lowbit.WorkerMajor {
		signSlabs = r.Workers
	}
	if r.Gate.Kind == lowbit.GateWorker {
		gateSlabs = signSlabs
	}
	return
}

// refLocate finds the role of addr by walking the region's lines.
func refLocate(r Region, addr uint64) (refRole, bool) {
	if r.Sum != lowbit.FP32 {
		return refSumLocate(r, addr)
	}
	ss, gs := refSlabs(r)
	lines := int(r.Size/64) / (ss + gs)
	a := r.Base
	for s := 0; s < ss+gs; s++ {
		for l := 0; l < lines; l++ {
			if a == addr {
				if s < ss {
					return refRole{kind: 0, worker: s, line: l}, true
				}
				return refRole{kind: 1, worker: s - ss, line: l}, true
			}
			a += 64
		}
	}
	if r.Layout == lowbit.WorkerMajor {
		for l := 0; l < lines; l++ {
			for part := 0; part < 2; part++ {
				if a == addr {
					return refRole{kind: 2, line: l, part: part}, true
				}
				a += 64
			}
		}
	}
	return refRole{}, false
}

func (m *refModel) regionOf(addr uint64) int {
	for i, rr := range m.regions {
		if !rr.mapped {
			continue
		}
		if _, ok := refLocate(rr.r, addr); ok {
			return i
		}
	}
	return -1
}

func (m *refModel) setMode(id int, mode Mode) { m.regions[id].mode = mode }

func (m *refModel) accept(req Req) {
	m.seq++
	p := refPending{req: req, seq: m.seq, reg: -1}
	switch {
	case req.Op != MemRd && req.Op != MemWr:
		p.err = ErrBadOpcode
	case req.Op == MemWr && len(req.Data) != 64, req.Op == MemRd && req.Data != nil && len(req.Data) > 0:
		p.err = ErrBadLength
	case req.Addr%64 != 0:
		p.err = ErrUnaligned
	case req.Addr >= m.capacity:
		p.err = ErrOutOfRange
	}
	if p.err == nil {
		if id := m.regionOf(req.Addr); id >= 0 {
			p.reg, p.rr, p.mode = id, m.regions[id].r, m.regions[id].mode
			role, _ := refLocate(p.rr, req.Addr)
			if role.kind == 2 || role.kind == 4 {
				if req.Op == MemWr {
					p.err = ErrReadOnlyView
				} else if !refAggregates(p.rr, p.mode) {
					p.err = ErrUnmappedView
				}
			}
		}
		if req.Op == MemWr {
			copy(p.data[:], req.Data)
		}
	}
	m.inflight = append(m.inflight, p)
}

// complete returns the expected response of the oldest transaction.
func (m *refModel) complete() (want Resp, wantErr error) {
	p := m.inflight[0]
	m.inflight = m.inflight[1:]
	want = Resp{Kind: DRS, Tag: p.req.Tag, Seq: p.seq, Addr: p.req.Addr, Mode: p.mode, Region: RegionID(p.reg)}
	if p.req.Op != MemRd {
		want.Kind = NDR
	}
	if p.err != nil {
		return want, p.err
	}
	if p.req.Op == MemWr {
		m.mem[p.req.Addr] = p.data
		return want, nil
	}
	if p.reg < 0 || !refAggregates(p.rr, p.mode) {
		want.Data = m.mem[p.req.Addr]
		return want, nil
	}
	r := p.rr
	role, _ := refLocate(r, p.req.Addr)
	if r.Sum != lowbit.FP32 {
		if role.kind != 2 && role.kind != 4 {
			want.Data = m.mem[p.req.Addr]
			return want, nil
		}
		want.Transformed = true
		want.Data = m.expectSum(r, role)
		return want, nil
	}
	inPlaceView := r.Layout == lowbit.ElementMajor && role.kind == 0
	if !inPlaceView && role.kind != 2 {
		want.Data = m.mem[p.req.Addr]
		return want, nil
	}
	want.Transformed = true
	want.Data = m.expectAggregate(r, p.mode, role.line, role.part)
	return want, nil
}

// addrOf returns the address of (kind, worker, line) by walking, the
// inverse of refLocate.
func refAddrOf(r Region, kind, worker, line int) uint64 {
	ss, gs := refSlabs(r)
	lines := int(r.Size/64) / (ss + gs)
	slab := worker
	if kind == 1 {
		slab = ss + worker
	}
	return r.Base + uint64(slab*lines+line)*64
}

// expectAggregate computes the aggregate response with the lowbit
// reference loops.
func (m *refModel) expectAggregate(r Region, mode Mode, line, part int) (out [64]byte) {
	spec := lowbit.Spec{Workers: r.Workers, Layout: r.Layout, Format: lowbit.Binary, Gate: r.Gate}
	if mode == Aggregate(lowbit.Ternary) {
		spec.Format = lowbit.Ternary
	}
	gated := spec.GateBits()
	if r.Layout == lowbit.ElementMajor {
		signs := m.mem[refAddrOf(r, 0, 0, line)]
		if mode == Aggregate(lowbit.Binary) {
			for i, c := range lowbit.RefCountPacket(signs[:], r.Workers) {
				out[i] = byte(c)
			}
			return out
		}
		var gates []byte
		if gated {
			g := m.mem[refAddrOf(r, 1, 0, line)]
			gates = g[:]
		}
		for i, v := range lowbit.RefAggregatePacket(signs[:], gates, spec, r.Element0+64*line) {
			out[i] = byte(v)
		}
		return out
	}
	signs := make([][]byte, r.Workers)
	gates := make([][]byte, r.Workers)
	for k := range r.Workers {
		s := m.mem[refAddrOf(r, 0, k, line)]
		signs[k] = s[:]
		if gated {
			g := m.mem[refAddrOf(r, 1, k, line)]
			gates[k] = g[:]
		}
	}
	u := lowbit.RefAggregatePlanes(signs, gates, 512, spec, r.Element0+512*line)
	for i, v := range u {
		bit := byte(1) << (i % 8)
		switch {
		case part == 0 && v > 0:
			out[i/8] |= bit
		case part == 1 && v != 0:
			out[i/8] |= bit
		}
	}
	return out
}

// sameErrKind reports whether got is an *Error of the sentinel want (or
// both are nil).
func sameErrKind(got, want error) bool {
	if want == nil {
		return got == nil
	}
	var e *Error
	return errors.As(got, &e) && errors.Is(got, want)
}
