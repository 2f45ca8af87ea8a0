package host

import (
	"errors"
	"fmt"
	"sync"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// NonFiniteError is a NaN or Inf in a worker's gradient of a bucket: the
// bucket cannot become a low-bit payload and stays on FP32. It unwraps to
// the *lowbit.NonFiniteError of the first bad element.
type NonFiniteError struct {
	Bucket string
	Worker int
	Err    *lowbit.NonFiniteError
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("bucket %s worker %d: %v", e.Bucket, e.Worker, e.Err)
}

func (e *NonFiniteError) Unwrap() error { return e.Err }

// Bucket is one parameter group or gradient bucket mapped into a device
// region: the workers encode their gradients into its payload, Write puts
// the payload lines on the device, Read fetches the aggregate under the
// latched mode, and Decode, Values or Counts turn it into the update.
type Bucket struct {
	d    *Device
	id   cxl.RegionID
	reg  cxl.Region
	pay  *Payload
	runs []Run        // the batch Write or Read issues
	outs []RunOutcome // its outcomes
	view []byte       // worker-major Read: the view window's lines
	agg  []byte       // the aggregate read: packet bytes, or the pos plane
	nz   []byte       // worker-major nz plane
	sums []int16      // integer-sum view: lane sums
	exps []int8       // BFP8 exponent view
	mode cxl.Mode
	read bool // agg holds an aggregate

	unmapped bool // set by Device.Unmap, under the device's lock
}

func newBucket(d *Device, id cxl.RegionID, r cxl.Region, n int) (*Bucket, error) {
	s := lowbit.Spec{Workers: r.Workers, Layout: r.Layout, Format: lowbit.Binary}
	if r.Gate.Kind == lowbit.GateWorker {
		s.Format, s.Gate = lowbit.Ternary, r.Gate
	}
	if r.Sum != lowbit.FP32 {
		s = lowbit.Spec{Workers: r.Workers, Layout: r.Layout, Format: r.Sum}
	}
	p, err := NewPayload(s, n, r.Element0)
	if err != nil {
		return nil, err
	}
	if s.Format.Sum() {
		b := &Bucket{d: d, id: id, reg: r, pay: p, sums: make([]int16, p.Lines()*lowbit.LineBytes)}
		if s.Format.BlockExponents() {
			b.exps = make([]int8, p.ExpLines()*lowbit.LineBytes)
		}
		return b, nil
	}
	b := &Bucket{d: d, id: id, reg: r, pay: p, agg: make([]byte, p.SlabBytes())}
	if r.Layout == lowbit.WorkerMajor {
		b.nz = make([]byte, p.SlabBytes())
	}
	return b, nil
}

// ID returns the bucket's region.
func (b *Bucket) ID() cxl.RegionID { return b.id }

// Region returns the bucket's region as mapped (its Mode is the mode
// latched at mapping; Device.Mode reads the current latch).
func (b *Bucket) Region() cxl.Region { return b.reg }

// Lines returns the bucket's aggregate lines.
func (b *Bucket) Lines() int { return b.reg.PayloadLines() }

// Elements returns the bucket's gradient length n.
func (b *Bucket) Elements() int { return b.pay.Elements }

// Payload returns the bucket's payload buffer (what Write sends).
func (b *Bucket) Payload() *Payload { return b.pay }

// EncodeWorker encodes worker k's gradient g (Elements() long) into the
// payload, with worker-gate threshold tau (|g| > tau). Different workers may encode concurrently. A NaN or Inf
// returns a *NonFiniteError naming the bucket, worker and index.
func (b *Bucket) EncodeWorker(k int, g []float32, tau float32) error {
	if err := b.pay.EncodeWorker(k, g, tau); err != nil {
		return b.nonFinite(k, err)
	}
	b.d.count(func(a *Accounting) { a.Encoded += int64(len(g)); a.FP32Bytes += 4 * int64(len(g)) })
	return nil
}

// AgreeScale records an Int8 bucket's agreed scale from maxAbs, the
// largest lowbit.MaxAbs over its workers' gradients (the max-reduce they
// run before encoding), and counts the agreement's traffic: one float32
// per worker.
func (b *Bucket) AgreeScale(maxAbs float32) error {
	if err := b.pay.AgreeScale(maxAbs); err != nil {
		return fmt.Errorf("bucket %s: %w", b.reg.Name, err)
	}
	b.d.count(func(a *Accounting) { a.ScaleBytes += int64(b.reg.Workers) * lowbit.ScaleBits / 8 })
	return nil
}

func (b *Bucket) nonFinite(k int, err error) error {
	var e *lowbit.NonFiniteError
	if errors.As(err, &e) {
		b.d.count(func(a *Accounting) { a.Rejected++ })
		return &NonFiniteError{Bucket: b.reg.Name, Worker: k, Err: e}
	}
	return fmt.Errorf("bucket %s: %w", b.reg.Name, err)
}

// Write seals the payload (element-major: gathers the workers' planes into
// packets) and writes every payload line into the region as MemWr
// transactions, in one batch: worker-major worker after worker, its sign
// (or code) lines then its gate (or BFP8 exponent) lines; element-major line after line, the sign packet then the
// gate packet. A slab's lines lie at consecutive addresses, so each goes
// as one run (Device.TransactRuns).
func (b *Bucket) Write() error {
	p, r := b.pay, b.reg
	p.Seal()
	b.runs = b.runs[:0]
	add := func(addr uint64, data []byte) {
		b.runs = append(b.runs, Run{Run: cxl.Run{Op: cxl.MemWr, Addr: addr, Lines: len(data) / lowbit.LineBytes, Data: data}})
	}
	gated := p.Gates != nil
	switch {
	case p.Spec.Format.Sum():
		for k := 0; k < r.Workers; k++ {
			add(r.CodeAddr(k, 0), p.CodeSlab(k))
			if p.ExpLines() > 0 {
				add(r.ExpAddr(k, 0), p.ExpSlab(k))
			}
		}
	case r.Layout == lowbit.WorkerMajor:
		for k := 0; k < r.Workers; k++ {
			add(r.SignAddr(k, 0), p.SignSlab(k))
			if gated {
				add(r.GateAddr(k, 0), p.GateSlab(k))
			}
		}
	case gated:
		for l := range p.SlabBytes() / lowbit.LineBytes {
			line := func(slab []byte) []byte { return slab[l*lowbit.LineBytes : (l+1)*lowbit.LineBytes] }
			add(r.SignAddr(0, l), line(p.SignSlab(0)))
			add(r.GateAddr(0, l), line(p.GateSlab(0)))
		}
	default:
		add(r.SignAddr(0, 0), p.SignSlab(0))
	}
	b.read = false
	return b.run()
}

// run issues b.runs as one batch and returns the first failed
// transaction's error.
func (b *Bucket) run() error {
	b.d.mu.Lock()
	gone := b.unmapped
	b.d.mu.Unlock()
	if gone {
		return fmt.Errorf("bucket %s: region %d is unmapped", b.reg.Name, b.id)
	}
	for len(b.outs) < len(b.runs) {
		b.outs = append(b.outs, RunOutcome{})
	}
	if _, failed := b.d.TransactRuns(b.runs, b.outs); failed > 0 {
		for _, o := range b.outs[:len(b.runs)] {
			for _, sp := range o.Spans {
				if sp.Err != nil {
					return fmt.Errorf("bucket %s: %w", b.reg.Name, sp.Err)
				}
			}
		}
	}
	return nil
}

// Read reads the bucket's aggregate view under the region's latched mode
// and returns that mode. It is an error when the latch holds a mode that
// does not aggregate (identity, FP32 bypass: the caller's software
// collective handles the bucket then) or changes during the read.
func (b *Bucket) Read() (cxl.Mode, error) {
	r := b.reg
	parts := r.RespLines()
	// The view is one run of consecutive lines: element-major the sign
	// slab itself (read straight into agg); worker-major the view window,
	// line 2l+part of aggregate line l (ViewAddr), then BFP8's exponent
	// view lines (ExpViewAddr).
	views := r.PayloadLines() * parts
	n := views + r.ExpLines()
	if n == 0 {
		return 0, fmt.Errorf("bucket %s: region has no aggregate lines", r.Name)
	}
	dst := b.agg
	if r.Layout == lowbit.WorkerMajor {
		if len(b.view) < n*lowbit.LineBytes {
			b.view = make([]byte, n*lowbit.LineBytes)
		}
		dst = b.view[:n*lowbit.LineBytes]
	}
	b.runs = append(b.runs[:0], Run{Run: cxl.Run{Op: cxl.MemRd, Addr: r.ViewAddr(0, 0), Lines: n, Dst: dst}})
	b.read = false
	if err := b.run(); err != nil {
		return 0, err
	}
	spans := b.outs[0].Spans
	mode, line := spans[0].Mode, 0
	for _, sp := range spans {
		if !sp.Transformed || sp.Mode != mode {
			return sp.Mode, fmt.Errorf("bucket %s: aggregate view line %d read untransformed in mode %v", r.Name, line/parts, sp.Mode)
		}
		line += sp.Lines
	}
	switch {
	case b.sums != nil:
		lowbit.Int16s(b.sums[:views*lowbit.SumViewElements], dst)
		copy(b.exps, lowbit.BytesInt8(dst[views*lowbit.LineBytes:]))
	case r.Layout == lowbit.WorkerMajor:
		for l := range r.PayloadLines() {
			pos := dst[2*l*lowbit.LineBytes:]
			copy(b.agg[l*lowbit.LineBytes:(l+1)*lowbit.LineBytes], pos)
			copy(b.nz[l*lowbit.LineBytes:(l+1)*lowbit.LineBytes], pos[lowbit.LineBytes:])
		}
	}
	b.mode, b.read = mode, true
	b.d.count(func(a *Accounting) { a.Aggregates++ })
	return mode, nil
}

// Values writes the aggregate of the last Read into dst (at most
// Elements() long, element 0 first): u = sgn(2c - W) under G-Binary, m*u
// under G-Ternary, each -1, 0 or +1.
func (b *Bucket) Values(dst []int8) error {
	if err := b.check(len(dst)); err != nil {
		return err
	}
	if b.sums != nil {
		return fmt.Errorf("bucket %s: a %v bucket reads sums, not votes (Sums, Decode)", b.reg.Name, b.pay.Spec.Format)
	}
	n := len(dst)
	switch {
	case b.reg.Layout == lowbit.WorkerMajor:
		lowbit.UnpackPlanes(dst, b.agg, b.nz, n)
	case b.mode == cxl.Aggregate(lowbit.Ternary):
		for j, v := range b.agg[:n] {
			dst[j] = int8(v)
		}
	default:
		vote, err := b.countVotes()
		if err != nil {
			return err
		}
		for j, c := range b.agg[:n] {
			dst[j] = vote[c]
		}
	}
	return nil
}

// Decode is Values as float32, the update direction an optimizer
// applies; for an integer-sum bucket it is the workers' mean gradient
// decoded from the sums (the format's lowbit.Format.DecodeSums, with the
// agreed scale or the block exponents).
func (b *Bucket) Decode(dst []float32) error {
	if err := b.check(len(dst)); err != nil {
		return err
	}
	n := len(dst)
	switch {
	case b.sums != nil:
		b.pay.Spec.Format.DecodeSums(dst, b.sums[:n], b.exps, b.pay.Scale, b.reg.Workers)
	case b.reg.Layout == lowbit.WorkerMajor:
		lowbit.DecodePlanes(dst, b.agg, b.nz, n, 1)
	case b.mode == cxl.Aggregate(lowbit.Ternary):
		for j, v := range b.agg[:n] {
			dst[j] = float32(int8(v))
		}
	default:
		vote, err := b.countVotes()
		if err != nil {
			return err
		}
		for j, c := range b.agg[:n] {
			dst[j] = float32(vote[c])
		}
	}
	return nil
}

// countVotes checks the element-major G-Binary response (every count c in
// [0, W]) and returns its decode table vote[c] = sgn(2c - W).
func (b *Bucket) countVotes() (*[256]int8, error) {
	w := b.reg.Workers
	for j, c := range b.agg[:b.pay.Elements] {
		if int(c) > w {
			return nil, fmt.Errorf("bucket %s: count %d at element %d exceeds %d workers", b.reg.Name, c, j, w)
		}
	}
	var vote [256]int8
	for c := 0; c <= w; c++ {
		vote[c] = lowbit.RefSign(2*c - w)
	}
	return &vote, nil
}

// Counts writes the sign count c of every element of the last Read into
// dst: the element-major G-Binary response (the paper's functional-test
// view). Worker-major responses carry planes, not counts.
func (b *Bucket) Counts(dst []uint8) error {
	if err := b.check(len(dst)); err != nil {
		return err
	}
	if b.reg.Layout != lowbit.ElementMajor || b.mode != cxl.Aggregate(lowbit.Binary) {
		return fmt.Errorf("bucket %s: counts come from element-major G-Binary reads, not %v %v", b.reg.Name, b.reg.Layout, b.mode)
	}
	copy(dst, b.agg)
	return nil
}

// Sums writes the int16 lane sums of the last Read of an integer-sum
// bucket into dst (at most Elements() long).
func (b *Bucket) Sums(dst []int16) error {
	if err := b.check(len(dst)); err != nil {
		return err
	}
	if b.sums == nil {
		return fmt.Errorf("bucket %s: sums come from integer-sum buckets, not %v", b.reg.Name, b.pay.Spec.Format)
	}
	copy(dst, b.sums)
	return nil
}

// Exponents writes the aligned block exponents of the last Read of a BFP8
// bucket into dst (at most lowbit.BFPBlocks(Elements()) long).
func (b *Bucket) Exponents(dst []int8) error {
	if !b.read {
		return fmt.Errorf("bucket %s: no aggregate read since the last write", b.reg.Name)
	}
	if b.exps == nil {
		return fmt.Errorf("bucket %s: exponents come from bfp8 buckets, not %v", b.reg.Name, b.pay.Spec.Format)
	}
	if nb := lowbit.BFPBlocks(b.pay.Elements); len(dst) > nb {
		return fmt.Errorf("bucket %s: %d exponents asked, the bucket has %d blocks", b.reg.Name, len(dst), nb)
	}
	copy(dst, b.exps)
	return nil
}

func (b *Bucket) check(n int) error {
	if !b.read {
		return fmt.Errorf("bucket %s: no aggregate read since the last write", b.reg.Name)
	}
	if n > b.pay.Elements {
		return fmt.Errorf("bucket %s: %d elements asked, the bucket has %d", b.reg.Name, n, b.pay.Elements)
	}
	return nil
}

// EncodeWorkers has every worker encode its gradient of every bucket, one
// goroutine per worker, as W workers encode their own payloads on their
// own devices. g(k, i) is worker k's gradient for buckets[i]; tau(k, i, g)
// its worker-gate threshold (nil: 0). A worker stops at its first failure;
// the error returned is the lowest-numbered worker's.
//
// Int8 buckets first agree on their scale: every worker computes
// lowbit.MaxAbs of its gradient of each, the largest becomes the
// bucket's AgreeScale, then the workers encode.
func EncodeWorkers(buckets []*Bucket, w int, g func(k, i int) []float32, tau func(k, i int, g []float32) float32) error {
	if err := agreeScales(buckets, w, g); err != nil {
		return err
	}
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, b := range buckets {
				gi := g(k, i)
				var t float32
				if tau != nil && b.pay.Gates != nil {
					t = tau(k, i, gi)
				}
				if err := b.EncodeWorker(k, gi, t); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// agreeScales runs the scaled buckets' (Int8's) max-reduce: one goroutine per
// worker computes its lowbit.MaxAbs of each, then each bucket agrees on
// the largest. A NaN or Inf is the lowest-numbered worker's
// *NonFiniteError.
func agreeScales(buckets []*Bucket, w int, g func(k, i int) []float32) error {
	var int8s []int
	for i, b := range buckets {
		if b.pay.Spec.Format.Scaled() {
			int8s = append(int8s, i)
		}
	}
	if len(int8s) == 0 {
		return nil
	}
	maxes := make([][]float32, w)
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			maxes[k] = make([]float32, len(int8s))
			for j, i := range int8s {
				m, err := lowbit.MaxAbs(g(k, i))
				if err != nil {
					errs[k] = buckets[i].nonFinite(k, err)
					return
				}
				maxes[k][j] = m
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for j, i := range int8s {
		var agreed float32
		for k := range w {
			agreed = max(agreed, maxes[k][j])
		}
		if err := buckets[i].AgreeScale(agreed); err != nil {
			return err
		}
	}
	return nil
}
