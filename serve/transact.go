package serve

import (
	"context"
	"fmt"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// step is one decoded op of a batch: n line transactions from addr, or a
// mode-latch write. A shared op names buffer buf from byte off; attach
// points data (a shared write's snapshot) or dst (a shared read's lines
// of the buffer) at it.
type step struct {
	op     cxl.Opcode // 0 for a mode write
	addr   uint64
	n      int
	tag    uint16
	data   []byte
	region cxl.RegionID
	mode   cxl.Mode
	time   int64

	shared bool
	buf    uint64
	off    uint64
	dst    []byte
}

// kind is the op's field name in a batch: write, read, shared_write or
// shared_read.
func (st *step) kind() string {
	k := "write"
	if st.op == cxl.MemRd {
		k = "read"
	}
	if st.shared {
		return "shared_" + k
	}
	return k
}

// readRespBytes is a bound on the encoded size of one read line in a
// response: 64 data bytes, a mode and a flag (packed), with slack;
// sharedReadRespBytes that of a shared read line (its mode and flag).
const (
	readRespBytes       = cxl.LineBytes + 4
	sharedReadRespBytes = 4
)

// counts is what decodeOps counts of a batch: lines read into the
// response, lines read into shared buffers, shared lines written (the
// snapshot's lines) and mode writes.
type counts struct {
	reads, sharedReads, sharedWrites, modes int
}

// decodeOps checks what the encoding requires of a batch (it does not
// judge addresses: the device does, nor shared ranges: attach does) and
// returns its steps and counts. maxLines bounds the transactions and mode
// writes together, maxRead the lines read (a shared read line counting
// sharedReadRespBytes/readRespBytes of one, its share of the response),
// and maxShared the shared lines written (the snapshot a call holds).
func decodeOps(ops []*pb.Op, maxLines, maxRead, maxShared int) ([]step, counts, error) {
	var cnt counts
	if len(ops) > maxLines {
		return nil, cnt, wire.Fieldf("ops", "%d ops, more than the batch's limit of %d transactions and mode writes", len(ops), maxLines)
	}
	steps := make([]step, 0, len(ops))
	lines := 0
	for i, op := range ops {
		f := fmt.Sprintf("ops[%d]", i)
		var st step
		var tag uint32
		switch x := op.GetOp().(type) {
		case *pb.Op_Write:
			w := x.Write
			if len(w.GetData()) == 0 {
				return nil, cnt, wire.Fieldf(f+".write.data", "empty (want whole 64-byte lines)")
			}
			st = step{op: cxl.MemWr, addr: w.GetAddr(), n: (len(w.GetData()) + cxl.LineBytes - 1) / cxl.LineBytes, data: w.GetData()}
			tag, f = w.GetTag(), f+".write"
		case *pb.Op_Read:
			r := x.Read
			if r.GetLines() == 0 {
				return nil, cnt, wire.Fieldf(f+".read.lines", "0 (want at least 1)")
			}
			st = step{op: cxl.MemRd, addr: r.GetAddr(), n: int(r.GetLines())}
			tag, f = r.GetTag(), f+".read"
			cnt.reads += st.n
		case *pb.Op_SharedWrite:
			w := x.SharedWrite
			f += ".shared_write"
			if w.GetLines() == 0 {
				return nil, cnt, wire.Fieldf(f+".lines", "0 (want at least 1)")
			}
			st = step{op: cxl.MemWr, addr: w.GetAddr(), n: int(w.GetLines()), shared: true, buf: w.GetBuffer(), off: w.GetOffset()}
			tag = w.GetTag()
			if cnt.sharedWrites += st.n; cnt.sharedWrites > maxShared {
				return nil, cnt, wire.Fieldf(f+".lines", "the batch's shared writes exceed %d lines (the server's message size)", maxShared)
			}
		case *pb.Op_SharedRead:
			r := x.SharedRead
			f += ".shared_read"
			if r.GetLines() == 0 {
				return nil, cnt, wire.Fieldf(f+".lines", "0 (want at least 1)")
			}
			st = step{op: cxl.MemRd, addr: r.GetAddr(), n: int(r.GetLines()), shared: true, buf: r.GetBuffer(), off: r.GetOffset()}
			tag = r.GetTag()
			cnt.sharedReads += st.n
		case *pb.Op_SetMode:
			m, err := wire.ParseMode(f+".set_mode.mode", x.SetMode.GetMode())
			if err != nil {
				return nil, cnt, err
			}
			if lines++; lines > maxLines {
				return nil, cnt, wire.Fieldf(f, "the batch exceeds %d transactions and mode writes", maxLines)
			}
			cnt.modes++
			steps = append(steps, step{region: cxl.RegionID(x.SetMode.GetRegion()), mode: m, time: x.SetMode.GetTime()})
			continue
		default:
			return nil, cnt, wire.Fieldf(f, "no op set (want write, read, set_mode, shared_write or shared_read)")
		}
		if tag > 0xffff {
			return nil, cnt, wire.Fieldf(f+".tag", "%d does not fit the 16-bit tag", tag)
		}
		st.tag = uint16(tag)
		if last := uint64(st.n-1) * cxl.LineBytes; st.addr+last < st.addr {
			return nil, cnt, wire.Fieldf(f+".addr", "%#x + %d lines wraps the address space", st.addr, st.n)
		}
		lines += st.n
		if lines > maxLines {
			return nil, cnt, wire.Fieldf(f, "the batch exceeds %d transactions and mode writes", maxLines)
		}
		if cnt.reads*readRespBytes+cnt.sharedReads*sharedReadRespBytes > maxRead*readRespBytes {
			// f ends in ".read" or ".shared_read" here (only reads add).
			return nil, cnt, wire.Fieldf(f+".lines", "the batch reads more than %d lines, the most a response of the server's message size holds", maxRead)
		}
		steps = append(steps, st)
	}
	return steps, cnt, nil
}

// run runs the steps on the device through host.Device.TransactRuns, an
// op a run: every transaction in order with its tag, mode writes between
// them, each failure reported, exactly as one host.Step a line through
// host.Device.Transact (host's tests compare the two line by line), but
// validated and moved a stretch of lines at a time. The caller holds
// d.mu, so no other call reaches the device in between. It returns the
// response and the bad fields, the mode writes' first.
//
// A read with a dst (a shared read) puts its lines there rather than in
// the response's data.
func (d *device) run(steps []step, cnt counts) (*pb.TransactResponse, []violation) {
	out := &pb.TransactResponse{Data: make([]byte, cnt.reads*cxl.LineBytes)}
	runs := make([]host.Run, len(steps))
	at := 0 // the next response data byte
	for i, st := range steps {
		if st.op == 0 {
			runs[i] = host.Run{ModeWrite: true, Region: st.region, Mode: st.mode, Time: st.time}
			continue
		}
		r := cxl.Run{Op: st.op, Tag: st.tag, Addr: st.addr, Lines: st.n, Data: st.data}
		if st.op == cxl.MemRd {
			if r.Dst = st.dst; r.Dst == nil {
				r.Dst = out.Data[at : at+st.n*cxl.LineBytes]
				at += st.n * cxl.LineBytes
			}
		}
		runs[i] = host.Run{Run: r}
	}
	res := make([]host.RunOutcome, len(runs))
	out.FirstSeq, _ = d.dev.TransactRuns(runs, res)
	nspans := 0
	for i, st := range steps {
		if st.op == cxl.MemRd {
			nspans += len(res[i].Spans)
		}
	}
	// read_spans: the device's spans of read lines, neighbours with the
	// same mode and flag merged (the one backing array keeps it to one
	// allocation however many there are).
	backing := make([]pb.ReadSpan, 0, nspans)
	out.ReadSpans = make([]*pb.ReadSpan, 0, nspans)
	var modeBad, txBad []violation
	for i, st := range steps {
		o := &res[i]
		if st.op == 0 {
			if o.Err != nil {
				modeBad = append(modeBad, violation{fmt.Sprintf("ops[%d].set_mode.region", i), o.Err.Error()})
			}
			continue
		}
		out.Transactions += uint64(st.n)
		for _, sp := range o.Spans {
			if st.op == cxl.MemRd && sp.Lines > 0 {
				m := wire.Mode(sp.Mode)
				if k := len(out.ReadSpans) - 1; k >= 0 && out.ReadSpans[k].Mode == m && out.ReadSpans[k].Transformed == sp.Transformed {
					out.ReadSpans[k].Lines += uint32(sp.Lines)
				} else {
					backing = append(backing, pb.ReadSpan{Lines: uint32(sp.Lines), Mode: m, Transformed: sp.Transformed})
					out.ReadSpans = append(out.ReadSpans, &backing[len(backing)-1])
				}
			}
			if sp.Err != nil {
				txBad = append(txBad, violation{fmt.Sprintf("ops[%d].%s.%s", i, st.kind(), errField(sp.Err)), sp.Err.Error()})
			}
		}
	}
	return out, append(modeBad, txBad...)
}

func (c *controllerService) Transact(ctx context.Context, req *pb.TransactRequest) (*pb.TransactResponse, error) {
	d, err := c.device(ctx, req.GetDevice())
	if err != nil {
		return nil, err
	}
	maxRead := c.s.opts.MaxMessageBytes/readRespBytes - 1
	steps, cnt, err := decodeOps(req.GetOps(), 2*c.s.opts.MaxMessageBytes/cxl.LineBytes, maxRead, c.s.opts.MaxMessageBytes/cxl.LineBytes)
	if err != nil {
		return nil, fieldStatus("ops", err)
	}
	a, err := c.attach(ctx, steps)
	if err != nil {
		return nil, err
	}
	defer a.done()
	d.mu.Lock()
	if err := d.logRoom(cnt.modes, c.s.opts.MaxModeChanges); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	out, bad := d.run(steps, cnt)
	d.mu.Unlock()
	if len(bad) > 0 {
		return nil, badRequest(bad)
	}
	return out, nil
}
