package host

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Run is one element of a TransactRuns batch: a run of line transactions
// (cxl.Run: Lines transactions of one opcode at consecutive addresses
// with consecutive tags), or, when ModeWrite is set, a write of Region's
// mode latch to Mode with the caller's timestamp Time, as in a Step.
type Run struct {
	Run       cxl.Run
	ModeWrite bool
	Region    cxl.RegionID
	Mode      cxl.Mode
	Time      int64
}

// RunOutcome is what one Run did: its transactions' outcomes as
// cxl.Spans (appended to Spans, which may be reused), or a mode write's
// error in Err.
type RunOutcome struct {
	Spans []cxl.Span
	Err   error
}

// TransactRuns is Transact for a batch of runs: it gives exactly the
// responses, sequence numbers, errors, counters, stored bytes and
// accounting of Transact on the same batch with each run spelled out as
// one Step a line, but validates and moves a run's lines a stretch at a
// time (cxl.Core.DoRun). A transaction's response follows from its run
// and span: Tag = Run.Tag + k, Seq = firstSeq + (transactions before it),
// Data in Run.Dst. out must be as long as runs, and a MemRd run's Dst
// must hold its lines (it panics otherwise, as Transact does on a short
// out: a caller's bug, not input). It returns the first transaction's
// sequence number and the number of failed transactions and mode writes.
func (d *Device) TransactRuns(runs []Run, out []RunOutcome) (firstSeq uint64, failed int) {
	if len(out) < len(runs) {
		panic(fmt.Sprintf("host: TransactRuns: %d outcomes for %d runs", len(out), len(runs)))
	}
	for i := range runs {
		if r := &runs[i].Run; !runs[i].ModeWrite && (r.Lines < 0 || r.Op == cxl.MemRd && len(r.Dst) < r.Lines*lowbit.LineBytes) {
			panic(fmt.Sprintf("host: TransactRuns: run %d: %d lines with %d bytes of Dst", i, r.Lines, len(r.Dst)))
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	firstSeq = d.core.Seq() + 1
	for i := range runs {
		r := &runs[i]
		o := &out[i]
		o.Spans, o.Err = o.Spans[:0], nil
		if r.ModeWrite {
			if o.Err = d.core.SetMode(r.Region, r.Mode, r.Time); o.Err != nil {
				failed++
			}
			continue
		}
		d.accountLines(r.Run.Op, r.Run.Lines)
		var err error
		if o.Spans, err = d.core.DoRun(r.Run, o.Spans); err != nil {
			// Checked above, and nothing is ever left in flight.
			panic(fmt.Sprintf("host: TransactRuns: run %d: %v", i, err))
		}
		for _, s := range o.Spans {
			if s.Err != nil {
				failed++
			}
		}
	}
	return firstSeq, failed
}

// accountLines counts n transactions of opcode op issued, as n calls of
// account would; d.mu is held.
func (d *Device) accountLines(op cxl.Opcode, n int) {
	switch op {
	case cxl.MemWr:
		d.acct.WriteLines += int64(n)
		d.acct.PayloadBytes += int64(n) * lowbit.LineBytes
	case cxl.MemRd:
		d.acct.ReadLines += int64(n)
	}
	d.acct.Transactions += int64(n)
}
