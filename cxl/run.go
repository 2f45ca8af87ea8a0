package cxl

import (
	"fmt"
	"math/bits"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Run is Lines line transactions of one opcode at consecutive addresses:
// transaction k is Op at Addr + 64k with tag Tag + k (mod 2^16). A MemWr
// run's line k carries Data[64k : 64k+64], clipped to Data (so a short
// final line fails as a bad length, as it would alone); a MemRd run puts
// line k's response bytes at Dst[64k : 64k+64], and Dst must hold them.
type Run struct {
	Op    Opcode
	Tag   uint16
	Addr  uint64
	Lines int
	Data  []byte
	Dst   []byte
}

// Span is the outcome of consecutive transactions of a run that completed
// alike: under one region (NoRegion for plain memory) and latched mode,
// all transformed or none. A failed transaction is a span of its own
// (Lines 1) whose Err is its response's *Error. Each transaction's
// response is what Do would have returned: Tag, Seq and Addr follow from
// its position in the run, Kind from the opcode, Data is in Dst.
type Span struct {
	Lines       int
	Region      RegionID
	Mode        Mode
	Transformed bool
	Err         error
}

// DoRun runs r's transactions in order as r.Lines calls of Do would, with
// the same sequence numbers, responses, counters, stored bytes and errors
// (a bad line fails alone and the others complete), and appends their
// outcome to spans. It validates a stretch of lines that fall alike (one
// region window or one stretch of plain memory, aligned, inside the
// device, whole lines of data, a mode it knows) once and then moves it
// with one copy per storage page, or, for the element-major G-Binary
// aggregate view, one lowbit.CountPacket per page, or, for a worker-major
// aggregate view (sign planes or integer sums), one lowbit.VotePlanes,
// SumInt8 or SumBFP8 per 32 aggregate lines. Anything else (bad lines,
// G-Ternary element-major views, BFP8 exponent view lines, modes added
// after it) goes through Do one line at a time, so the per-line path stays
// the one definition of the semantics (and the tests' oracle).
//
// Like Do it needs no transactions in flight; it returns an error and
// runs nothing with some in flight, a negative Lines or a MemRd Dst too
// short.
func (c *Core) DoRun(r Run, spans []Span) ([]Span, error) {
	if n := c.Pending(); n > 0 {
		return spans, fmt.Errorf("cxl: DoRun with %d transactions in flight", n)
	}
	if r.Lines < 0 {
		return spans, fmt.Errorf("cxl: DoRun of %d lines", r.Lines)
	}
	if r.Op == MemRd && len(r.Dst) < r.Lines*LineBytes {
		return spans, fmt.Errorf("cxl: DoRun reads %d lines into %d bytes", r.Lines, len(r.Dst))
	}
	for k := 0; k < r.Lines; {
		addr := r.Addr + uint64(k)*LineBytes
		m, how := c.stretch(r, k, addr)
		if m == 0 {
			spans = append(spans, c.doLine(r, k, addr))
			k++
			continue
		}
		spans = append(spans, c.doStretch(r, k, addr, m, how))
		k += m
	}
	return spans, nil
}

// stretchKind is how a stretch of lines completes.
type stretchKind struct {
	region RegionID
	mode   Mode
	count  int  // > 0: element-major G-Binary view, CountPacket with this many workers
	view   bool // worker-major aggregate view lines (planes or sums)
}

// stretch returns how many of r's lines from line k (at addr) can complete
// as one stretch, and how; 0 when line k must go through Do. Every line
// of a stretch passes each check Accept makes and completes the same way.
func (c *Core) stretch(r Run, k int, addr uint64) (int, stretchKind) {
	how := stretchKind{region: NoRegion, mode: Identity}
	if c.fault != FaultNone || addr%LineBytes != 0 || addr >= c.capacity || (r.Op != MemRd && r.Op != MemWr) {
		return 0, how
	}
	m := r.Lines - k
	if r.Op == MemWr {
		whole := (len(r.Data) - k*LineBytes) / LineBytes
		if whole <= 0 {
			return 0, how
		}
		m = min(m, whole)
	}
	end := c.capacity // the stretch stays below end
	id := c.find(addr)
	if id == NoRegion {
		for i := range c.regions {
			if g := &c.regions[i]; g.mapped && g.Base > addr {
				end = min(end, g.Base)
			}
		}
	} else {
		g := &c.regions[id].Region
		if !g.Mode.Valid() {
			return 0, how
		}
		how.region, how.mode = id, g.Mode
		t := g.locate(addr)
		switch {
		case g.Layout == lowbit.WorkerMajor && t.view:
			// A read-only view: writes fail, and so do reads in a mode
			// it does not aggregate; BFP8's exponent view lines are
			// few (one per 64 aggregate lines) and stay per line.
			if r.Op != MemRd || t.exp || !g.Aggregates(g.Mode) {
				return 0, how
			}
			how.view = true
			end = g.Base + g.Size + uint64(2*g.PayloadLines())*LineBytes
		case g.Layout == lowbit.WorkerMajor:
			end = g.Base + g.Size
		case t.sign: // element-major sign slab: the in-place aggregate view
			end = g.Base + g.SlabBytes()
			if r.Op == MemRd && g.Mode.LowBit() {
				if g.Mode != Aggregate(lowbit.Binary) {
					return 0, how
				}
				how.count = g.Workers
			}
		default: // element-major gate slab
			end = g.End()
		}
	}
	return min(m, int((end-addr)/LineBytes)), how
}

// doStretch completes m lines of r from line k (at addr) that stretch
// found alike, and returns their span.
func (c *Core) doStretch(r Run, k int, addr uint64, m int, how stretchKind) Span {
	c.seq += uint64(m)
	c.stats.Transactions = c.seq
	c.stats.Completed += uint64(m)
	ms := &c.stats.Modes[how.mode]
	n := uint64(m)
	line := addr / LineBytes
	if r.Op == MemWr {
		c.mem.putRun(line, r.Data[k*LineBytes:(k+m)*LineBytes])
		c.gen += n
		ms.WriteLines += n
		ms.WriteBytes += n * LineBytes
		return Span{Lines: m, Region: how.region, Mode: how.mode}
	}
	dst := r.Dst[k*LineBytes : (k+m)*LineBytes]
	ms.ReadLines += n
	ms.ReadBytes += n * LineBytes
	if how.view {
		g := &c.regions[how.region].Region
		ms.MediaLinesRead += n * uint64(c.viewRun(dst, g, how.mode, int((addr-g.Base-g.Size)/LineBytes)))
		ms.TransformedLines += n
		return Span{Lines: m, Region: how.region, Mode: how.mode, Transformed: true}
	}
	ms.MediaLinesRead += n
	if how.count == 0 {
		c.mem.loadRun(dst, line)
		return Span{Lines: m, Region: how.region, Mode: how.mode}
	}
	c.mem.countRun(dst, line, how.count)
	ms.TransformedLines += n
	return Span{Lines: m, Region: how.region, Mode: how.mode, Transformed: true}
}

// viewChunk is how many aggregate lines viewRun computes at a time: a
// divisor of lowbit.BFPExponentsPerLine, so a chunk's BFP8 block
// exponents lie in one exponent line of each worker.
const viewChunk = 32

// viewRun writes into dst the len(dst)/64 worker-major aggregate view
// lines of region g in mode m from view line v (line 2l is aggregate line
// l's pos plane or first 32 sums, line 2l+1 its nz plane or last 32 sums;
// no exponent view lines), as aggregate would a line at a time, and
// returns the stored lines each view line reads (aggregate's count). It
// gathers a chunk of aggregate lines of every worker, then runs one
// VotePlanes or the format's lowbit SumCodes over the chunk.
func (c *Core) viewRun(dst []byte, g *Region, m Mode, v int) int {
	w := g.Workers
	per := w
	sum := m.Sum()
	gated := !sum && g.Spec(m).GateBits()
	if gated || sum && m.ExpPlane() {
		per += w
	}
	rb := &c.run
	l0, l1 := v/2, (v+len(dst)/LineBytes-1)/2 // aggregate lines [l0, l1]
	for la := l0 / viewChunk * viewChunk; la <= l1; la += viewChunk {
		a, b := max(la, l0), min(la+viewChunk, l1+1)
		nl := b - a
		out := rb.out[:2*nl*LineBytes]
		if sum {
			codes := c.gatherRun(&rb.codes, &rb.cbuf, w, nl, func(k int) uint64 { return g.CodeAddr(k, a) })
			sums := rb.sums[:nl*LineBytes]
			var exps [][]int8
			if m.ExpPlane() {
				x, o := a/lowbit.BFPExponentsPerLine, a%lowbit.BFPExponentsPerLine
				eb := c.gatherRun(&rb.exps, &rb.ebuf, w, 1, func(k int) uint64 { return g.ExpAddr(k, x) })
				for k := range eb {
					eb[k] = eb[k][o : o+nl]
				}
				exps = int8Rows(&rb.exps8, eb)
			}
			m.Format().SumCodes(sums, rb.blockExp[:nl], int8Rows(&rb.codes8, codes), exps)
			lowbit.PutInt16s(out, sums) // line 2l, 2l+1: sums of elements 64l+0..31, 64l+32..63
		} else {
			signs := c.gatherRun(&rb.codes, &rb.cbuf, w, nl, func(k int) uint64 { return g.SignAddr(k, a) })
			var gates [][]byte
			if gated {
				gates = c.gatherRun(&rb.gates, &rb.gbuf, w, nl, func(k int) uint64 { return g.GateAddr(k, a) })
			}
			pos, nz := rb.pos[:nl*LineBytes], rb.nz[:nl*LineBytes]
			base := g.Element0 + a*lowbit.PlaneElements
			if err := lowbit.VotePlanes(pos, nz, signs, gates, nl*lowbit.PlaneElements, g.Spec(m), base); err != nil {
				panic("cxl: region validated but VotePlanes failed: " + err.Error())
			}
			for i := range nl {
				copy(out[2*i*LineBytes:], pos[i*LineBytes:(i+1)*LineBytes])
				copy(out[(2*i+1)*LineBytes:], nz[i*LineBytes:(i+1)*LineBytes])
			}
		}
		// The view lines of aggregate lines [a, b) that dst asks for.
		lo, hi := max(2*a, v), min(2*b, v+len(dst)/LineBytes)
		copy(dst[(lo-v)*LineBytes:(hi-v)*LineBytes], out[(lo-2*a)*LineBytes:(hi-2*a)*LineBytes])
	}
	return per
}

// runScratch is viewRun's scratch, kept across runs.
type runScratch struct {
	codes, gates, exps [][]byte // per worker: its lines of the chunk
	cbuf, gbuf, ebuf   []byte
	codes8, exps8      [][]int8
	pos, nz            [viewChunk * LineBytes]byte
	out                [2 * viewChunk * LineBytes]byte
	sums               [viewChunk * LineBytes]int16
	blockExp           [viewChunk]int8
}

// gatherRun copies lines [addr(k), addr(k) + 64 lines) of each of w
// workers into buf and returns them as w slices (a never-written line is
// zero).
func (c *Core) gatherRun(rows *[][]byte, buf *[]byte, w, lines int, addr func(k int) uint64) [][]byte {
	nb := lines * LineBytes
	if cap(*buf) < w*nb {
		*buf = make([]byte, w*viewChunk*LineBytes)
	}
	b := (*buf)[:w*nb]
	r := (*rows)[:0]
	for k := range w {
		p := b[k*nb : (k+1)*nb : (k+1)*nb]
		c.mem.loadRun(p, addr(k)/LineBytes)
		r = append(r, p)
	}
	*rows = r
	return r
}

// int8Rows views each row as int8 codes, in *dst.
func int8Rows(dst *[][]int8, rows [][]byte) [][]int8 {
	s := (*dst)[:0]
	for _, r := range rows {
		s = append(s, lowbit.BytesInt8(r))
	}
	*dst = s
	return s
}

// doLine runs r's line k (at addr) through Do.
func (c *Core) doLine(r Run, k int, addr uint64) Span {
	req := Req{Op: r.Op, Tag: r.Tag + uint16(k), Addr: addr}
	if r.Op == MemWr {
		lo := min(len(r.Data), k*LineBytes)
		req.Data = r.Data[lo:min(len(r.Data), lo+LineBytes)]
	}
	resp, _ := c.Do(req)
	if r.Op == MemRd {
		copy(r.Dst[k*LineBytes:], resp.Data[:])
	}
	return Span{Lines: 1, Region: resp.Region, Mode: resp.Mode, Transformed: resp.Transformed, Err: resp.Err}
}

// pageRuns calls f for each page-sized piece of the run of len(b)/64
// lines from line n: the page key, the first line in the page, and the
// piece's bytes of b.
func pageRuns(n uint64, b []byte, f func(key, i uint64, piece []byte)) {
	for len(b) > 0 {
		i := n % pageLines
		m := min(uint64(len(b))/LineBytes, pageLines-i)
		f(n/pageLines, i, b[:m*LineBytes])
		b = b[m*LineBytes:]
		n += m
	}
}

// putRun writes len(data)/64 lines from line n.
func (s *store) putRun(n uint64, data []byte) {
	pageRuns(n, data, func(key, i uint64, piece []byte) {
		p := s.page(key)
		if p == nil {
			p = new(page)
			s.pages[key] = p
			s.lastKey, s.lastPage = key, p
		}
		m := uint64(len(piece)) / LineBytes
		mask := ^uint64(0) >> (64 - m) << i
		s.lines += bits.OnesCount64(mask &^ p.written)
		p.written |= mask
		copy(p.b[i*LineBytes:], piece)
	})
}

// loadRun copies len(dst)/64 lines from line n into dst.
func (s *store) loadRun(dst []byte, n uint64) {
	pageRuns(n, dst, func(key, i uint64, piece []byte) {
		if p := s.page(key); p != nil {
			copy(piece, p.b[i*LineBytes:])
			return
		}
		clear(piece)
	})
}

// countRun puts into dst the element-major G-Binary aggregate of the
// len(dst)/64 sign packets from line n: lowbit.CountPacket with w workers,
// a page at a time. A never-written line is zero, whose count is zero.
func (s *store) countRun(dst []byte, n uint64, w int) {
	pageRuns(n, dst, func(key, i uint64, piece []byte) {
		if p := s.page(key); p != nil {
			lowbit.CountPacket(piece, p.b[i*LineBytes:i*LineBytes+uint64(len(piece))], w)
			return
		}
		clear(piece)
	})
}
