package cxl

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// MaxCapacity is the largest device the model accepts: 2^52 bytes.
const MaxCapacity = 1 << 52

// Config configures a controller.
type Config struct {
	// Capacity is the device's size in bytes: a positive multiple of 64,
	// at most MaxCapacity. Memory is sparse, so only lines written cost
	// host memory.
	Capacity uint64
	// LinesHint is how many distinct lines the caller expects to write;
	// the line store is sized for them up front. 0 means no hint. It
	// changes speed, never behaviour.
	LinesHint int
	// Fault injects a deliberate bug into every response (tests only:
	// the functional tester must catch each of Faults). FaultNone, the
	// zero value, is the correct controller.
	Fault Fault
}

// Validate returns an error naming the bad field.
func (c Config) Validate() error {
	if c.Capacity == 0 || c.Capacity%LineBytes != 0 || c.Capacity > MaxCapacity {
		return fmt.Errorf("cxl config: capacity %d is not a positive multiple of 64 up to %d", c.Capacity, uint64(MaxCapacity))
	}
	if c.LinesHint < 0 || c.LinesHint > 1<<28 {
		return fmt.Errorf("cxl config: lines hint %d out of range [0, %d]", c.LinesHint, 1<<28)
	}
	return validFault(c.Fault)
}

// Core is the deterministic functional model of the controller: no
// goroutines, clocks or I/O, and not safe for concurrent use (Controller
// wraps it for that).
//
// A transaction is accepted (Accept) and later completed (Complete), in
// order. Acceptance validates the request, gives it the next sequence
// number and latches its region's mode; completion touches memory and
// builds the response. So a mode change between the two does not affect
// a transaction already accepted: mode changes take effect at a
// transaction boundary. Reads see every write accepted before them and
// none after.
type Core struct {
	capacity uint64
	// mem holds the stored lines by line index (addr / 64). Invariant: a
	// line never written reads as 64 zero bytes. Only a completed MemWr
	// changes mem; reads never do.
	mem     store
	regions []regionState
	last    int // index of the region that matched last (a lookup cache)
	seq     uint64
	queue   []pending // accepted, not completed; queue[0] completes next
	qhead   int
	stats   Stats
	changes []ModeChange

	// fault (Config.Fault, tests only) corrupts completed responses.
	fault Fault

	// gen counts completed writes; it versions the aggregate cache.
	gen uint64
	// The last worker-major aggregate (both result planes), so that
	// reading its pos and nz lines costs one vote. Valid while gen,
	// region, line and mode match.
	agg struct {
		valid  bool
		gen    uint64
		region RegionID
		line   int
		mode   Mode
	}

	// scratch for the aggregate transform
	signs, gates [][]byte
	sbuf, gbuf   []byte
	sline, gline Line
	res          Line
	votes        [LineBytes]int8
	pos, nz      Line
	// scratch for the integer-sum transforms
	codes, exps [][]int8
	ebuf        []byte
	eplanes     [][]byte
	sums        [lowbit.LineBytes]int16
	blockExp    [lowbit.BFPExponentsPerLine]int8
	// scratch for DoRun's aggregate view runs
	run runScratch
}

type regionState struct {
	Region
	mapped bool
}

// pending is an accepted transaction.
type pending struct {
	req    Req
	data   Line
	seq    uint64
	mode   Mode
	region RegionID
	reg    Region // the region table row at acceptance
	tgt    target
	err    *Error
}

// NewCore returns an empty controller with no regions.
func NewCore(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Core{capacity: cfg.Capacity, mem: newStore(cfg.LinesHint), last: -1, fault: cfg.Fault}, nil
}

// Capacity returns the device size in bytes.
func (c *Core) Capacity() uint64 { return c.capacity }

// Map adds a region to the table and returns its id. The region must be
// valid, inside the device, and must not overlap a mapped region's
// footprint. Stored bytes are not touched.
func (c *Core) Map(r Region) (RegionID, error) {
	if err := r.Validate(); err != nil {
		return NoRegion, err
	}
	if r.End() > c.capacity {
		return NoRegion, fmt.Errorf("region %q: footprint [%#x, %#x) beyond capacity %#x", r.Name, r.Base, r.End(), c.capacity)
	}
	for i, o := range c.regions {
		if o.mapped && r.Base < o.End() && o.Base < r.End() {
			return NoRegion, fmt.Errorf("region %q: footprint [%#x, %#x) overlaps region %d %q [%#x, %#x)", r.Name, r.Base, r.End(), i, o.Name, o.Base, o.End())
		}
	}
	c.regions = append(c.regions, regionState{Region: r, mapped: true})
	return RegionID(len(c.regions) - 1), nil
}

// Unmap removes a region from the table; its addresses become plain
// memory and its stored bytes stay. Transactions already accepted
// complete as accepted.
func (c *Core) Unmap(id RegionID) error {
	if _, err := c.region(id); err != nil {
		return err
	}
	c.regions[id].mapped = false
	c.last = -1
	return nil
}

func (c *Core) region(id RegionID) (*regionState, error) {
	if id < 0 || int(id) >= len(c.regions) || !c.regions[id].mapped {
		return nil, fmt.Errorf("cxl: region %d is not mapped", id)
	}
	return &c.regions[id], nil
}

// Region returns the region's table row, with its current mode.
func (c *Core) Region(id RegionID) (Region, error) {
	r, err := c.region(id)
	if err != nil {
		return Region{}, err
	}
	return r.Region, nil
}

// Regions returns the mapped regions' ids in table order.
func (c *Core) Regions() []RegionID {
	var ids []RegionID
	for i, r := range c.regions {
		if r.mapped {
			ids = append(ids, RegionID(i))
		}
	}
	return ids
}

// SetMode writes a region's mode latch: the control path. It takes effect
// for transactions accepted from now on (Seq > the current Seq); ones
// already accepted complete under their latched mode. A real change is
// counted and recorded with the caller's timestamp ts; writing the mode
// the latch already holds is a no-op.
func (c *Core) SetMode(id RegionID, m Mode, ts int64) error {
	r, err := c.region(id)
	if err != nil {
		return err
	}
	if !m.Valid() {
		return fmt.Errorf("cxl: region %d: %v is not a mode", id, m)
	}
	if r.Mode == m {
		return nil
	}
	c.changes = append(c.changes, ModeChange{Region: id, From: r.Mode, To: m, AfterSeq: c.seq, Time: ts})
	c.stats.ModeChanges++
	r.Mode = m
	return nil
}

// Mode returns the region's current mode latch.
func (c *Core) Mode(id RegionID) (Mode, error) {
	r, err := c.region(id)
	if err != nil {
		return 0, err
	}
	return r.Mode, nil
}

// ModeChanges returns a copy of the mode-change log, oldest first.
func (c *Core) ModeChanges() []ModeChange { return append([]ModeChange(nil), c.changes...) }

// Stats returns a copy of the counters.
func (c *Core) Stats() Stats { return c.stats }

// Seq returns the sequence number of the last accepted transaction.
func (c *Core) Seq() uint64 { return c.seq }

// Pending returns the number of accepted, not yet completed transactions.
func (c *Core) Pending() int { return len(c.queue) - c.qhead }

// Peek returns the stored bytes of the line at addr without a
// transaction: no counters move, no transform applies. It is the
// debugger's (and the tester's) view of storage.
func (c *Core) Peek(addr uint64) (Line, error) {
	if addr%LineBytes != 0 {
		return Line{}, fmt.Errorf("cxl: peek %#x: %w", addr, ErrUnaligned)
	}
	if addr >= c.capacity {
		return Line{}, fmt.Errorf("cxl: peek %#x: %w", addr, ErrOutOfRange)
	}
	return c.mem.load(addr / LineBytes), nil
}

// StoredLines returns the addresses of every line ever written, sorted.
func (c *Core) StoredLines() []uint64 {
	return c.mem.addrs()
}

// find returns the mapped region whose footprint holds addr.
func (c *Core) find(addr uint64) RegionID {
	if c.last >= 0 {
		r := &c.regions[c.last]
		if r.mapped && addr >= r.Base && addr < r.End() {
			return RegionID(c.last)
		}
	}
	for i := range c.regions {
		r := &c.regions[i]
		if r.mapped && addr >= r.Base && addr < r.End() {
			c.last = i
			return RegionID(i)
		}
	}
	return NoRegion
}

// Accept validates req, gives it the next sequence number and queues it
// for completion; the caller must later call Complete. Every request is
// accepted, valid or not: an invalid one returns an *Error (which its
// response will carry too) and will change nothing. Accept copies
// req.Data.
func (c *Core) Accept(req Req) (uint64, error) {
	c.seq++
	p := pending{req: req, seq: c.seq, mode: Identity, region: NoRegion}
	p.req.Data = nil
	fail := func(kind error, format string, args ...any) {
		p.err = &Error{Op: req.Op, Tag: req.Tag, Seq: p.seq, Addr: req.Addr, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.Op != MemRd && req.Op != MemWr:
		fail(ErrBadOpcode, "opcode %d", uint8(req.Op))
	case req.Op == MemWr && len(req.Data) != LineBytes:
		fail(ErrBadLength, "MemWr carries %d bytes, want %d", len(req.Data), LineBytes)
	case req.Op == MemRd && len(req.Data) != 0:
		fail(ErrBadLength, "MemRd carries %d bytes, want none", len(req.Data))
	case req.Addr%LineBytes != 0:
		fail(ErrUnaligned, "offset %d into a line", req.Addr%LineBytes)
	case req.Addr >= c.capacity:
		fail(ErrOutOfRange, "capacity %#x", c.capacity)
	}
	if p.err == nil {
		if id := c.find(req.Addr); id != NoRegion {
			r := c.regions[id].Region
			p.region, p.reg, p.mode = id, r, r.Mode
			p.tgt = r.locate(req.Addr)
			if r.Layout == lowbit.WorkerMajor && p.tgt.view {
				if req.Op == MemWr {
					fail(ErrReadOnlyView, "region %d %q view line %d", id, r.Name, p.tgt.line)
				} else if !r.Aggregates(p.mode) {
					fail(ErrUnmappedView, "region %d %q is in mode %v", id, r.Name, p.mode)
				}
			}
		}
		if req.Op == MemWr {
			copy(p.data[:], req.Data)
		}
	}
	switch {
	case c.qhead > 0 && c.qhead == len(c.queue):
		c.queue, c.qhead = c.queue[:0], 0
	case c.qhead >= 64 && 2*c.qhead >= len(c.queue):
		n := copy(c.queue, c.queue[c.qhead:])
		c.queue, c.qhead = c.queue[:n], 0
	}
	c.queue = append(c.queue, p)
	c.stats.Transactions = c.seq
	if p.err != nil {
		return p.seq, p.err
	}
	return p.seq, nil
}

// Complete completes the oldest accepted transaction and returns its
// response; ok is false when nothing is in flight.
func (c *Core) Complete() (resp Resp, ok bool) {
	if c.qhead == len(c.queue) {
		return Resp{}, false
	}
	p := &c.queue[c.qhead]
	c.qhead++
	c.complete(p, &resp)
	if c.fault != FaultNone {
		r := resp // a separate variable, so resp itself stays on the stack
		c.inject(p, &r)
		resp = r
	}
	return resp, true
}

// Do accepts req and completes it. It is for callers that keep nothing in
// flight; with transactions pending it returns an error and accepts
// nothing. The returned error is resp.Err.
func (c *Core) Do(req Req) (Resp, error) {
	if n := c.Pending(); n > 0 {
		return Resp{}, fmt.Errorf("cxl: Do with %d transactions in flight", n)
	}
	c.Accept(req) //nolint:errcheck // the response carries the error
	resp, _ := c.Complete()
	return resp, resp.Err
}

func (c *Core) complete(p *pending, r *Resp) {
	c.stats.Completed++
	r.Tag, r.Seq, r.Addr, r.Mode, r.Region = p.req.Tag, p.seq, p.req.Addr, p.mode, p.region
	r.Kind = DRS
	if p.req.Op != MemRd {
		r.Kind = NDR
	}
	if p.err != nil {
		r.Err = p.err
		c.stats.Errors[errIndex(p.err)]++
		return
	}
	ms := &c.stats.Modes[p.mode]
	key := p.req.Addr / LineBytes
	if p.req.Op == MemWr {
		c.mem.put(key, &p.data)
		c.gen++
		ms.WriteLines++
		ms.WriteBytes += LineBytes
		return
	}
	ms.ReadLines++
	ms.ReadBytes += LineBytes
	if p.region == NoRegion || !p.reg.Aggregates(p.mode) || !p.tgt.view {
		r.Data = c.mem.load(key)
		ms.MediaLinesRead++
		return
	}
	ms.MediaLinesRead += uint64(c.aggregate(p.region, &p.reg, p.mode, p.tgt))
	r.Data = c.res
	ms.TransformedLines++
	r.Transformed = true
}

// aggregate computes the response line of an aggregate view read and
// returns how many stored lines it read (the media traffic the hardware
// would fetch, whether or not the model's cache served it).
// The response is left in c.res.
func (c *Core) aggregate(id RegionID, r *Region, m Mode, t target) int {
	out := &c.res
	if m.Sum() {
		return c.sum(id, r, m, t)
	}
	spec := r.Spec(m)
	gated := spec.GateBits()
	if r.Layout == lowbit.ElementMajor {
		c.sline = c.mem.load(r.SignAddr(0, t.line) / LineBytes)
		base := r.Element0 + t.line*lowbit.PacketElements
		if m == Aggregate(lowbit.Binary) {
			lowbit.CountPacket(out[:], c.sline[:], r.Workers)
			return 1
		}
		n := 1
		c.gline = Line{}
		if gated {
			c.gline = c.mem.load(r.GateAddr(0, t.line) / LineBytes)
			n = 2
		}
		if err := lowbit.VotePacket(c.votes[:], c.sline[:], c.gline[:], spec, base); err != nil {
			panic("cxl: region validated but VotePacket failed: " + err.Error())
		}
		for i, v := range c.votes {
			out[i] = byte(v)
		}
		return n
	}
	w := r.Workers
	n := w
	if gated {
		n += w
	}
	a := &c.agg
	if a.valid && a.gen == c.gen && a.region == id && a.line == t.line && a.mode == m {
		c.planeOut(t.part, out)
		return n
	}
	c.signs = c.gatherPlanes(c.signs, &c.sbuf, w, func(k int) uint64 { return r.SignAddr(k, t.line) })
	var gates [][]byte
	if gated {
		c.gates = c.gatherPlanes(c.gates, &c.gbuf, w, func(k int) uint64 { return r.GateAddr(k, t.line) })
		gates = c.gates
	}
	base := r.Element0 + t.line*lowbit.PlaneElements
	if err := lowbit.VotePlanes(c.pos[:], c.nz[:], c.signs, gates, lowbit.PlaneElements, spec, base); err != nil {
		panic("cxl: region validated but VotePlanes failed: " + err.Error())
	}
	a.valid, a.gen, a.region, a.line, a.mode = true, c.gen, id, t.line, m
	c.planeOut(t.part, out)
	return n
}

func (c *Core) planeOut(part int, out *Line) {
	if part == 0 {
		*out = c.pos
	} else {
		*out = c.nz
	}
}

// gatherPlanes copies w stored lines into buf and returns slices of them.
func (c *Core) gatherPlanes(planes [][]byte, buf *[]byte, w int, addr func(k int) uint64) [][]byte {
	if cap(*buf) < w*LineBytes {
		*buf = make([]byte, w*LineBytes)
	}
	b := (*buf)[:w*LineBytes]
	planes = planes[:0]
	for k := range w {
		p := b[k*LineBytes : (k+1)*LineBytes : (k+1)*LineBytes]
		c.mem.loadInto(p, addr(k)/LineBytes)
		planes = append(planes, p)
	}
	return planes
}

// sum computes the response line of an integer-sum view read (the INT8
// and BFP8 modes) into c.res and returns how many stored lines it read: W
// code lines for a sum view line (and W exponent lines with block
// exponents), W exponent lines for an exponent view line.
func (c *Core) sum(id RegionID, r *Region, m Mode, t target) int {
	w := r.Workers
	if t.exp { // exponent view line t.line: E of its 64 blocks
		c.eplanes = c.gatherPlanes(c.eplanes, &c.ebuf, w, func(k int) uint64 { return r.ExpAddr(k, t.line) })
		lowbit.MaxExponents(c.blockExp[:], c.int8s(&c.exps, c.eplanes, 0, lowbit.BFPExponentsPerLine))
		c.res = Line(lowbit.Int8Bytes(c.blockExp[:]))
		return w
	}
	n := w
	if m.ExpPlane() {
		n += w
	}
	a := &c.agg
	if !(a.valid && a.gen == c.gen && a.region == id && a.line == t.line && a.mode == m) {
		c.signs = c.gatherPlanes(c.signs, &c.sbuf, w, func(k int) uint64 { return r.CodeAddr(k, t.line) })
		codes := c.int8s(&c.codes, c.signs, 0, lowbit.LineBytes)
		var exps [][]int8
		if m.ExpPlane() {
			x, b := t.line/lowbit.BFPExponentsPerLine, t.line%lowbit.BFPExponentsPerLine
			c.eplanes = c.gatherPlanes(c.eplanes, &c.ebuf, w, func(k int) uint64 { return r.ExpAddr(k, x) })
			exps = c.int8s(&c.exps, c.eplanes, b, 1)
		}
		m.Format().SumCodes(c.sums[:], c.blockExp[:1], codes, exps)
		a.valid, a.gen, a.region, a.line, a.mode = true, c.gen, id, t.line, m
	}
	lo := t.part * lowbit.SumViewElements
	lowbit.PutInt16s(c.res[:], c.sums[lo:lo+lowbit.SumViewElements])
	return n
}

// int8s returns, in *dst, each line's bytes [lo, lo+n) as int8 codes.
func (c *Core) int8s(dst *[][]int8, lines [][]byte, lo, n int) [][]int8 {
	s := (*dst)[:0]
	for _, l := range lines {
		s = append(s, lowbit.BytesInt8(l[lo:lo+n]))
	}
	*dst = s
	return s
}
