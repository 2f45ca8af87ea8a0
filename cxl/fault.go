package cxl

import (
	"fmt"
	"slices"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Fault names a deliberate controller bug that Config.Fault injects into
// every response the controller completes (tests only): the functional
// tester (package verify) must catch each of Faults, so that a pass of
// the tester means something. FaultNone is the correct controller.
type Fault string

// The deliberate faults. Each corrupts what the paper's Sec. 6 test, or a
// check beyond it, must notice.
const (
	// FaultNone is the correct controller.
	FaultNone Fault = ""
	// FaultTernaryBitFlip flips one bit of one G-Ternary response in 997.
	FaultTernaryBitFlip Fault = "ternary-bit-flip"
	// FaultBinaryStored returns the stored bytes for a transformed
	// G-Binary read: the naive read-equals-write controller.
	FaultBinaryStored Fault = "binary-stored"
	// FaultIdentityByte corrupts one byte of the identity read with
	// sequence number 30000.
	FaultIdentityByte Fault = "identity-byte"
	// FaultReadWrites makes one read in 50000 flip a stored bit.
	FaultReadWrites Fault = "read-writes"
	// FaultLatchAtCompletion applies the mode latched at completion, not
	// at acceptance.
	FaultLatchAtCompletion Fault = "latch-at-completion"
	// FaultInt8Lane adds one to lane 5 of every INT8 view line.
	FaultInt8Lane Fault = "int8-lane"
	// FaultExponentView returns worker 0's exponents as the BFP8
	// exponent view.
	FaultExponentView Fault = "exponent-view"
	// FaultIgnoreExponents sums BFP8 mantissas as INT8 codes, without
	// aligning them to the block exponents.
	FaultIgnoreExponents Fault = "ignore-exponents"
	// FaultUnalignedAccepted answers an unaligned request without an
	// error.
	FaultUnalignedAccepted Fault = "unaligned-accepted"
	// FaultPlaneWorker flips bit 0 of a worker-major pos plane line when
	// more than two workers vote.
	FaultPlaneWorker Fault = "plane-worker"
)

// Faults lists the deliberate faults.
func Faults() []Fault {
	return []Fault{FaultTernaryBitFlip, FaultBinaryStored, FaultIdentityByte, FaultReadWrites, FaultLatchAtCompletion,
		FaultInt8Lane, FaultExponentView, FaultIgnoreExponents, FaultUnalignedAccepted, FaultPlaneWorker}
}

// validFault reports whether f is FaultNone or one of Faults.
func validFault(f Fault) error {
	if f != FaultNone && !slices.Contains(Faults(), f) {
		return fmt.Errorf("cxl config: unknown fault %q", f)
	}
	return nil
}

// inject applies c's fault to the response r of p, just completed.
func (c *Core) inject(p *pending, r *Resp) {
	switch c.fault {
	case FaultTernaryBitFlip:
		if p.mode == Aggregate(lowbit.Ternary) && p.seq%997 == 5 {
			r.Data[p.seq%64] ^= 1 << (p.seq % 7)
		}
	case FaultBinaryStored:
		if p.mode == Aggregate(lowbit.Binary) && r.Transformed {
			r.Data = c.mem.load(p.req.Addr / LineBytes)
		}
	case FaultIdentityByte:
		if p.mode == Identity && p.req.Op == MemRd && p.seq == 30000 {
			r.Data[3]++
		}
	case FaultReadWrites:
		if p.req.Op == MemRd && p.seq%50000 == 7 {
			l := c.mem.load(p.req.Addr / LineBytes)
			l[0] ^= 0x80
			c.mem.put(p.req.Addr/LineBytes, &l)
		}
	case FaultLatchAtCompletion:
		if p.region < 0 || p.err != nil {
			return
		}
		if cur := c.regions[p.region].Mode; cur != p.mode && p.req.Op == MemRd {
			q := *p
			q.mode = cur
			if q.reg.Layout == lowbit.WorkerMajor && q.tgt.view && !cur.LowBit() {
				q.err = &Error{Kind: ErrUnmappedView}
			}
			*r = Resp{}
			c.complete(&q, r)
		}
	case FaultInt8Lane:
		if p.mode == Aggregate(lowbit.Int8) && r.Transformed {
			r.Data[10]++
		}
	case FaultExponentView:
		if p.mode == Aggregate(lowbit.BFP8) && r.Transformed && p.tgt.exp {
			r.Data = c.mem.load(p.reg.ExpAddr(0, p.tgt.line) / LineBytes)
		}
	case FaultIgnoreExponents:
		if p.mode == Aggregate(lowbit.BFP8) && r.Transformed && !p.tgt.exp {
			src := make([][]int8, p.reg.Workers)
			for k := range src {
				l := c.mem.load(p.reg.CodeAddr(k, p.tgt.line) / LineBytes)
				src[k] = lowbit.BytesInt8(l[:])
			}
			sums := make([]int16, 64)
			lowbit.SumInt8(sums, src)
			lowbit.PutInt16s(r.Data[:], sums[32*p.tgt.part:32*p.tgt.part+32])
		}
	case FaultUnalignedAccepted:
		if p.err != nil && p.err.Kind == ErrUnaligned {
			r.Err = nil
		}
	case FaultPlaneWorker:
		if r.Transformed && p.reg.Layout == lowbit.WorkerMajor && p.reg.Workers > 2 && p.tgt.part == 0 {
			r.Data[0] ^= 1
		}
	}
}
