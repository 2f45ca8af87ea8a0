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
// aggregate view, one lowbit.CountPacket per page. Anything else (bad
// lines, worker-major aggregate views, G-Ternary element-major views,
// modes added after it) goes through Do one line at a time, so the per-line
// path stays the one definition of the semantics.
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
	count  int // > 0: element-major G-Binary view, CountPacket with this many workers
}

// runModes are the modes whose per-line semantics stretch reproduces; a
// mode not listed here runs one line at a time.
var runModes = [numModes]bool{Identity: true, FP32Bypass: true, GBinary: true, GTernary: true}

// stretch returns how many of r's lines from line k (at addr) can complete
// as one stretch, and how; 0 when line k must go through Do. Every line
// of a stretch passes each check Accept makes and completes the same way.
func (c *Core) stretch(r Run, k int, addr uint64) (int, stretchKind) {
	how := stretchKind{region: NoRegion, mode: Identity}
	if c.fault != nil || addr%LineBytes != 0 || addr >= c.capacity || (r.Op != MemRd && r.Op != MemWr) {
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
		if !g.Mode.Valid() || !runModes[g.Mode] {
			return 0, how
		}
		how.region, how.mode = id, g.Mode
		t := g.locate(addr)
		switch {
		case g.Layout == lowbit.WorkerMajor && t.view:
			return 0, how // a read-only view: aggregates or errors, per line
		case g.Layout == lowbit.WorkerMajor:
			end = g.Base + g.Size
		case t.sign: // element-major sign slab: the in-place aggregate view
			end = g.Base + g.SlabBytes()
			if r.Op == MemRd && g.Mode.LowBit() {
				if g.Mode != GBinary {
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
	ms.MediaLinesRead += n
	if how.count == 0 {
		c.mem.loadRun(dst, line)
		return Span{Lines: m, Region: how.region, Mode: how.mode}
	}
	c.mem.countRun(dst, line, how.count)
	ms.TransformedLines += n
	return Span{Lines: m, Region: how.region, Mode: how.mode, Transformed: true}
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
