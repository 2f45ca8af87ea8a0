package host

import (
	"fmt"
	"sync"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Config opens a Device.
type Config struct {
	// Workers is W, the number of workers whose payloads every region
	// aggregates: 1-8 element-major, 1-lowbit.MaxWorkers worker-major.
	Workers int
	// Layout is how the workers' payloads are arranged in lines.
	Layout lowbit.Layout
	// Gate is the G-Ternary zero gate of buckets that do not name their
	// own; the zero value is the paper's 2-of-3 pattern.
	Gate lowbit.Gate
	// Capacity is the device size in bytes (a multiple of 64); 0 means
	// cxl.MaxCapacity. Memory is sparse: only lines written cost memory.
	Capacity uint64
	// LinesHint is how many distinct lines the caller expects to write
	// (cxl.Config.LinesHint): it presizes storage and never changes
	// behaviour. 0 means no hint.
	LinesHint int
}

// Validate returns an error naming the bad field.
func (c Config) Validate() error {
	s := lowbit.Spec{Workers: c.Workers, Layout: c.Layout, Format: lowbit.Ternary, Gate: c.Gate}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("host config: %w", err)
	}
	if c.Capacity%lowbit.LineBytes != 0 || c.Capacity > cxl.MaxCapacity {
		return fmt.Errorf("host config: capacity %d is not a multiple of 64 up to %d", c.Capacity, uint64(cxl.MaxCapacity))
	}
	if c.LinesHint < 0 || c.LinesHint > 1<<28 {
		return fmt.Errorf("host config: lines hint %d out of range [0, %d]", c.LinesHint, 1<<28)
	}
	return nil
}

// Accounting is what the runtime did, for the report the paper's Sec. 11
// asks of a runtime: the encoding cost and the traffic it caused. All
// counts are cumulative since Open.
type Accounting struct {
	// Encoded counts gradient elements encoded, summed over workers.
	Encoded int64 `json:"encoded_elements"`
	// FP32Bytes is what those elements take as FP32: 4 * Encoded.
	FP32Bytes int64 `json:"fp32_bytes"`
	// PayloadBytes counts payload bytes written to the device: 64 per
	// line written (signs, gate bits and line padding).
	PayloadBytes int64 `json:"payload_bytes"`
	// WriteLines and ReadLines count the MemWr and MemRd transactions the
	// runtime issued, failed ones included; Transactions counts every
	// transaction issued (a bad opcode counts only there).
	WriteLines   int64 `json:"write_lines"`
	ReadLines    int64 `json:"read_lines"`
	Transactions int64 `json:"transactions"`
	// Aggregates counts bucket aggregates read back (Bucket.Read).
	Aggregates int64 `json:"aggregates"`
	// Rejected counts bucket encodings refused for a NaN or Inf: those
	// buckets stay on FP32.
	Rejected int64 `json:"rejected"`
	// ScaleBytes counts Int8's scale agreement: one float32
	// (lowbit.ScaleBits) per worker and bucket encoded, beside the
	// payload.
	ScaleBytes int64 `json:"scale_bytes,omitempty"`
}

// Stats is a device's accounting and its controller's counters.
type Stats struct {
	Host       Accounting `json:"host"`
	Controller cxl.Stats  `json:"controller"`
}

// Device is one CXL memory controller and the runtime's view of it: the
// buckets mapped into it and the accounting. Its methods are safe for
// concurrent use, and each runs with no other call on the controller in
// between; a Bucket's are not (one goroutine drives a bucket, though
// workers may encode into it concurrently).
type Device struct {
	cfg Config

	mu      sync.Mutex // guards everything below, the controller included
	core    *cxl.Core
	next    uint64 // first free address: Map maps after every region mapped
	tag     uint16
	acct    Accounting
	buckets map[cxl.RegionID]*Bucket
}

// Open returns a device with no regions.
func Open(cfg Config) (*Device, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = cxl.MaxCapacity
	}
	core, err := cxl.NewCore(cxl.Config{Capacity: cfg.Capacity, LinesHint: cfg.LinesHint})
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	return &Device{cfg: cfg, core: core, buckets: map[cxl.RegionID]*Bucket{}}, nil
}

// Config returns the configuration the device was opened with (Capacity
// filled in).
func (d *Device) Config() Config { return d.cfg }

// ModeWriter returns the only capability the control plane gets: writing
// mode latches.
func (d *Device) ModeWriter() cxl.ModeWriter { return modeWriter{d} }

// modeWriter is a Device seen as a cxl.ModeWriter: SetMode and nothing
// else.
type modeWriter struct{ d *Device }

func (w modeWriter) SetMode(id cxl.RegionID, m cxl.Mode, ts int64) error {
	return w.d.SetMode(id, m, ts)
}

// BucketConfig describes one parameter group or gradient bucket to map.
type BucketConfig struct {
	// Name labels the region in reports.
	Name string
	// Elements is the bucket's gradient length n (at least 1).
	Elements int
	// Element0 is the flattened gradient index of element 0; the
	// positional gate depends on it.
	Element0 int
	// Mode is the mode latched when the region is mapped.
	Mode cxl.Mode
	// Gate is the bucket's G-Ternary gate; nil means the device's.
	Gate *lowbit.Gate
	// Format makes the bucket an integer-sum bucket beyond the paper:
	// lowbit.Int8 or lowbit.BFP8 maps a worker-major cxl.Region.Sum
	// region of that format, whatever the device's layout and gate. The
	// zero value, lowbit.FP32, is the device's sign-plane shape, which
	// G-Binary and G-Ternary aggregate.
	Format lowbit.Format
}

// region returns the region a bucket maps to at base: one slab of
// lowbit.Layout.Lines(n) lines per worker (worker-major) or one packet
// slab (element-major), doubled for the worker gate's gate bits.
func (d *Device) region(b BucketConfig, base uint64) (cxl.Region, error) {
	if b.Elements < 1 {
		return cxl.Region{}, fmt.Errorf("bucket %q: %d elements, want at least 1", b.Name, b.Elements)
	}
	r := cxl.Region{Name: b.Name, Base: base, Mode: b.Mode, Workers: d.cfg.Workers, Layout: d.cfg.Layout, Gate: d.cfg.Gate, Element0: b.Element0}
	if b.Gate != nil {
		r.Gate = *b.Gate
	}
	if b.Format != lowbit.FP32 {
		if !b.Format.Sum() {
			return cxl.Region{}, fmt.Errorf("bucket %q: format %v is not an integer-sum format (sign-plane buckets leave Format unset)", b.Name, b.Format)
		}
		r.Sum, r.Layout, r.Gate = b.Format, lowbit.WorkerMajor, lowbit.Gate{}
	}
	r.Size = r.DataBytes(r.Lines(b.Elements))
	if err := r.Validate(); err != nil {
		return cxl.Region{}, fmt.Errorf("bucket %q: %w", b.Name, err)
	}
	return r, nil
}

// Map maps a region for the bucket after the last one mapped and returns
// the bucket, ready to encode into.
func (d *Device) Map(b BucketConfig) (*Bucket, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, err := d.region(b, d.next)
	if err != nil {
		return nil, err
	}
	if r.End() > d.cfg.Capacity {
		return nil, fmt.Errorf("bucket %q: needs bytes up to %#x, the device has %#x", b.Name, r.End(), d.cfg.Capacity)
	}
	id, err := d.core.Map(r)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", b.Name, err)
	}
	bk, err := newBucket(d, id, r, b.Elements)
	if err != nil {
		_ = d.core.Unmap(id) // undo the mapping; the bucket error is the one to report
		return nil, err
	}
	d.next = r.End()
	d.buckets[id] = bk
	return bk, nil
}

// MapRegion maps r exactly as given (base, size, layout, gate, mode: the
// raw surface of a client that lays out its own regions) and returns its
// id. The errors are cxl.Core.Map's, unwrapped, so a caller can tell a
// bad field from an overlap. It is not a Bucket; a later Map places its
// bucket after the highest region end mapped so far.
func (d *Device) MapRegion(r cxl.Region) (cxl.RegionID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, err := d.core.Map(r)
	if err != nil {
		return cxl.NoRegion, err
	}
	d.next = max(d.next, r.End())
	return id, nil
}

// Bucket returns the mapped bucket of a region.
func (d *Device) Bucket(id cxl.RegionID) (*Bucket, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.buckets[id]
	if !ok {
		return nil, fmt.Errorf("host: region %d is not a mapped bucket", id)
	}
	return b, nil
}

// Unmap removes a bucket's region; the bucket's Write and Read fail after
// it. Its address range is not reused, and stored lines stay as plain
// memory.
func (d *Device) Unmap(id cxl.RegionID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.core.Unmap(id); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	if b, ok := d.buckets[id]; ok {
		b.unmapped = true
		delete(d.buckets, id)
	}
	return nil
}

// Region returns a region's table row with its current mode.
func (d *Device) Region(id cxl.RegionID) (cxl.Region, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.Region(id)
}

// Regions returns the mapped regions' ids in table order.
func (d *Device) Regions() []cxl.RegionID {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.Regions()
}

// SetMode writes a region's mode latch (the control path). It takes
// effect for transactions issued after it.
func (d *Device) SetMode(id cxl.RegionID, m cxl.Mode, ts int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.SetMode(id, m, ts)
}

// Mode returns a region's current mode latch.
func (d *Device) Mode(id cxl.RegionID) (cxl.Mode, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.Mode(id)
}

// Seq returns the sequence number of the last transaction issued (0
// before the first): a mode write now applies to those after it.
func (d *Device) Seq() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.Seq()
}

// ModeChanges returns the controller's mode-change log, oldest first.
func (d *Device) ModeChanges() []cxl.ModeChange {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core.ModeChanges()
}

// Stats returns the device's accounting and controller counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{Host: d.acct, Controller: d.core.Stats()}
}

// WriteLines writes data, whole lines, line i at addrs[i], as one batch of
// MemWr transactions. A bad line stores nothing and the others are still
// written; it returns the first failure.
func (d *Device) WriteLines(addrs []uint64, data []byte) error {
	if len(data) != len(addrs)*lowbit.LineBytes {
		return fmt.Errorf("host: write %d lines with %d bytes of data", len(addrs), len(data))
	}
	reqs := make([]cxl.Req, len(addrs))
	for i, a := range addrs {
		reqs[i] = cxl.Write(0, a, data[i*lowbit.LineBytes:(i+1)*lowbit.LineBytes])
	}
	_, err := d.do(reqs, make([]cxl.Resp, len(reqs)))
	return err
}

// ReadLines reads the lines at addrs as one batch of MemRd transactions
// and returns the responses (each says the mode it completed under and
// whether it was transformed). It returns the first failure too.
func (d *Device) ReadLines(addrs []uint64) ([]cxl.Resp, error) {
	reqs := make([]cxl.Req, len(addrs))
	for i, a := range addrs {
		reqs[i] = cxl.Read(0, a)
	}
	out := make([]cxl.Resp, len(reqs))
	_, err := d.do(reqs, out)
	return out, err
}

// do tags and runs a batch of transactions, each to completion before the
// next, with no other call in between, and accounts for them; it returns
// the first failed response's error.
func (d *Device) do(reqs []cxl.Req, out []cxl.Resp) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	failed := 0
	for i := range reqs {
		d.tag++
		reqs[i].Tag = d.tag
		d.account(reqs[i].Op)
		var err error
		if out[i], err = d.core.Do(reqs[i]); err != nil {
			if failed == 0 {
				first = err
			}
			failed++
		}
	}
	return failed, first
}

// account counts one transaction issued; d.mu is held.
func (d *Device) account(op cxl.Opcode) {
	switch op {
	case cxl.MemWr:
		d.acct.WriteLines++
		d.acct.PayloadBytes += lowbit.LineBytes
	case cxl.MemRd:
		d.acct.ReadLines++
	}
	d.acct.Transactions++
}

// Step is one element of a Transact batch: the line transaction Req, or,
// when ModeWrite is set, a write of Region's mode latch to Mode with the
// caller's timestamp Time.
type Step struct {
	Req       cxl.Req
	ModeWrite bool
	Region    cxl.RegionID
	Mode      cxl.Mode
	Time      int64
}

// Outcome is what one Step did. Resp is a transaction's response (zero
// for a mode write); Err is nil on success, else Resp.Err (a *cxl.Error)
// or the mode write's error. A failed step changed nothing.
type Outcome struct {
	Resp cxl.Resp
	Err  error
}

// Transact runs a batch in which every step stands alone, with no other
// call on the controller in between: it accepts the transactions in order
// with their caller-chosen tags, applying each mode write between the
// acceptances around it (so it governs exactly the transactions after it,
// as a latch written at a transaction boundary does), then completes them
// all. A bad step stores nothing and the others still complete; out[i]
// (out must be as long as steps) is step i's outcome. It returns the
// sequence number the batch's first transaction has (or would have) and
// the number of failed steps. Every transaction counts in the accounting.
func (d *Device) Transact(steps []Step, out []Outcome) (firstSeq uint64, failed int) {
	if len(out) < len(steps) {
		panic(fmt.Sprintf("host: Transact: %d outcomes for %d steps", len(out), len(steps)))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	firstSeq = d.core.Seq() + 1
	for i := range steps {
		st := &steps[i]
		if st.ModeWrite {
			out[i] = Outcome{Err: d.core.SetMode(st.Region, st.Mode, st.Time)}
			if out[i].Err != nil {
				failed++
			}
			continue
		}
		d.account(st.Req.Op)
		d.core.Accept(st.Req) //nolint:errcheck // Complete answers an invalid request with its error
	}
	for i := range steps {
		if steps[i].ModeWrite {
			continue
		}
		o := &out[i]
		o.Resp, _ = d.core.Complete()
		if o.Err = o.Resp.Err; o.Err != nil {
			failed++
		}
	}
	return firstSeq, failed
}

func (d *Device) count(f func(a *Accounting)) {
	d.mu.Lock()
	f(&d.acct)
	d.mu.Unlock()
}
