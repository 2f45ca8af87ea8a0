package cxl

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
)

// RegionID names a mapped region: its index in the region table.
type RegionID int

// NoRegion is the RegionID of plain memory outside every region.
const NoRegion RegionID = -1

// Region is one row of the controller's region table: a gradient buffer
// that the runtime writes worker payloads into and reads aggregates from.
// The address map is in the package documentation.
//
// Invariants (checked by Validate): Base and Size are multiples of 64;
// Size is DataBytes(PayloadLines()) with at least one payload line; the
// region's footprint [Base, End()) lies inside the device; Workers fits
// the layout (1-8 element-major, 1-lowbit.MaxWorkers worker-major); Gate
// is valid; Element0 >= 0; a Sum region is worker-major without gate bits
// and has 1 to lowbit.MaxSumWorkers workers (its int16 lane sums exact).
type Region struct {
	// Name labels the region in reports; it need not be unique.
	Name string
	// Base and Size delimit the data window the workers write.
	Base, Size uint64
	// Mode is the mode latch's value when the region is mapped; after
	// that, only Core.SetMode changes it.
	Mode Mode
	// Workers is W, the number of workers whose payloads are aggregated.
	Workers int
	// Layout is how the workers' payloads are arranged (see the package
	// documentation).
	Layout lowbit.Layout
	// Gate is the G-Ternary zero gate (the zero value is the paper's
	// 2-of-3 pattern). With lowbit.GateWorker the data window also holds
	// the workers' gate bits.
	Gate lowbit.Gate
	// Element0 is the flattened gradient index of the region's first
	// element; the positional gate depends on it.
	Element0 int
	// Sum shapes the region for an integer-sum format beyond the paper,
	// lowbit.Int8 or lowbit.BFP8 (worker-major only): each worker writes
	// its own lines of 64 int8 codes (BFP8: and its exponent lines), and
	// the region aggregates in that format's mode (Aggregate). The zero
	// value, lowbit.FP32, is the paper's sign-plane shape, which G-Binary
	// and G-Ternary aggregate.
	Sum lowbit.Format
}

// sumFormat reports whether r is shaped for an integer-sum format.
func (r Region) sumFormat() bool { return r.Sum != lowbit.FP32 }

// Aggregates reports whether reads of r's aggregate view are transformed
// in mode m: m goes through the datapath and fits the region's shape
// (G-Binary and G-Ternary on a sign-plane region, the format's own sum
// mode on a Sum region). Elsewhere a view read returns stored bytes
// (element-major) or ErrUnmappedView (worker-major).
func (r Region) Aggregates(m Mode) bool {
	if !m.LowBit() {
		return false
	}
	if r.sumFormat() {
		return m.Format() == r.Sum
	}
	return m.Format().Vote()
}

// Slabs returns how many equal slabs of PayloadLines() lines the data
// window holds before any exponent plane: element-major 1 (signs),
// worker-major W (one sign or code slab per worker), doubled with
// lowbit.GateWorker (gate slabs follow the sign slabs). A BFP8 region's
// exponent slabs, one of ExpLines() lines per worker, follow them.
func (r Region) Slabs() int {
	n := 1
	if r.Layout == lowbit.WorkerMajor {
		n = r.Workers
	}
	if r.Gate.Kind == lowbit.GateWorker && !r.sumFormat() {
		n *= 2
	}
	return n
}

// expLines returns the exponent lines one worker writes for lines
// mantissa lines of a BFP8 region: ceil(lines / 64) (0 otherwise).
func (r Region) expLines(lines int) int {
	if !r.Sum.BlockExponents() {
		return 0
	}
	return (lines + lowbit.BFPExponentsPerLine - 1) / lowbit.BFPExponentsPerLine
}

// DataBytes returns the data-window size of a region of r's shape
// (Workers, Layout, Gate, Sum) whose slabs hold lines aggregate lines
// each: (Slabs() * lines + W * ExpLines) * 64. It is the one region-size
// formula; set r.Size = r.DataBytes(lines), with lines = r.Lines(n) for
// n elements.
func (r Region) DataBytes(lines int) uint64 {
	n := uint64(r.Slabs()) * uint64(lines)
	if e := r.expLines(lines); e > 0 {
		n += uint64(r.Workers) * uint64(e)
	}
	return n * LineBytes
}

// ElementsPerLine returns how many elements one payload line holds: the
// layout's (64 element-major, 512 worker-major bit-planes), and 64 int8
// codes in a Sum region.
func (r Region) ElementsPerLine() int {
	if r.sumFormat() {
		return lowbit.LineBytes
	}
	return r.Layout.ElementsPerLine()
}

// Lines returns how many payload lines n elements take in a region of r's
// shape: ceil(n / ElementsPerLine()).
func (r Region) Lines(n int) int { return (n + r.ElementsPerLine() - 1) / r.ElementsPerLine() }

// SlabBytes returns the size of one slab: PayloadLines() * 64.
func (r Region) SlabBytes() uint64 { return uint64(r.PayloadLines()) * LineBytes }

// PayloadLines returns the lines of one slab: the number of aggregate
// lines the region holds, from Size (0 when Size fits no whole number of
// them; Validate rejects that).
func (r Region) PayloadLines() int {
	n := uint64(r.Slabs())
	if n == 0 || r.Size%(n*LineBytes) != 0 {
		return 0
	}
	t := r.Size / (n * LineBytes)
	if r.Sum.BlockExponents() {
		// Each worker's lines are L mantissa lines plus ceil(L/64)
		// exponent lines: t = L + ceil(L/64), so L = t - ceil(t/65).
		l := t - (t+lowbit.BFPExponentsPerLine)/(lowbit.BFPExponentsPerLine+1)
		if l+uint64(r.expLines(int(l))) != t {
			return 0
		}
		t = l
	}
	return int(t)
}

// ExpLines returns how many exponent lines each worker of a BFP8 region
// writes (and how many exponent view lines it reads back): 0 elsewhere.
func (r Region) ExpLines() int { return r.expLines(r.PayloadLines()) }

// Elements returns the number of gradient elements the region aggregates.
func (r Region) Elements() int { return r.PayloadLines() * r.ElementsPerLine() }

// RespLines returns how many response lines one aggregate line takes:
// 1 element-major (in place), 2 worker-major (pos and nz planes) and in
// a Sum region (64 int16 sums; the exponent view is extra).
func (r Region) RespLines() int {
	if r.Layout == lowbit.WorkerMajor {
		return 2
	}
	return 1
}

// ViewBytes returns the size of the separate aggregate-view window that
// follows the data window: 2 * SlabBytes() worker-major, plus ExpLines()
// exponent view lines in a BFP8 region, and 0 element-major (whose
// aggregate view is the sign slab itself).
func (r Region) ViewBytes() uint64 {
	if r.Layout == lowbit.WorkerMajor {
		return 2*r.SlabBytes() + uint64(r.ExpLines())*LineBytes
	}
	return 0
}

// End returns the first address past the region's footprint (data window
// and view window).
func (r Region) End() uint64 { return r.Base + r.Size + r.ViewBytes() }

// workerLine returns the address of line l of slab s.
func (r Region) workerLine(s, l int) uint64 {
	return r.Base + uint64(s)*r.SlabBytes() + uint64(l)*LineBytes
}

// SignAddr returns the address of worker k's sign payload for aggregate
// line l. Element-major regions have one sign slab for all workers; k is
// ignored there.
func (r Region) SignAddr(k, l int) uint64 {
	if r.Layout != lowbit.WorkerMajor {
		k = 0
	}
	return r.workerLine(k, l)
}

// GateAddr returns the address of worker k's gate bits for aggregate line
// l (lowbit.GateWorker regions only).
func (r Region) GateAddr(k, l int) uint64 {
	w := 1
	if r.Layout == lowbit.WorkerMajor {
		w = r.Workers
	} else {
		k = 0
	}
	return r.workerLine(w+k, l)
}

// CodeAddr returns the address of worker k's payload line l in a Sum
// region: 64 int8 codes (Int8) or mantissas (BFP8), byte i = element
// 64l + i. Worker k's lines form slab k, as its sign plane would.
func (r Region) CodeAddr(k, l int) uint64 { return r.workerLine(k, l) }

// ExpAddr returns the address of worker k's exponent line x in a BFP8
// region: byte b is the exponent of block 64x + b (payload line 64x + b).
// The W exponent slabs of ExpLines() lines follow the W code slabs, as
// G-Ternary's gate slabs follow the sign slabs.
func (r Region) ExpAddr(k, x int) uint64 {
	return r.workerLine(r.Workers, 0) + uint64(k*r.ExpLines()+x)*LineBytes
}

// ViewAddr returns the address to read for aggregate line l: the sign
// line itself element-major; worker-major, line 2l (part 0) or 2l+1
// (part 1) of the view window: the pos and nz planes of a sign-plane
// region, the sums of elements 64l .. 64l+31 and 64l+32 .. 64l+63 of a
// Sum region.
func (r Region) ViewAddr(l, part int) uint64 {
	if r.Layout != lowbit.WorkerMajor {
		return r.SignAddr(0, l)
	}
	return r.Base + r.Size + uint64(2*l+part)*LineBytes
}

// ExpViewAddr returns the address of exponent view line x of a BFP8
// region: byte b is the aligned exponent E of block 64x + b. The exponent
// view follows the sum view lines.
func (r Region) ExpViewAddr(x int) uint64 {
	return r.Base + r.Size + 2*r.SlabBytes() + uint64(x)*LineBytes
}

// shape is the region's payload shape as a lowbit spec, which
// lowbit.Spec.Validate checks: its integer-sum format, or for a
// sign-plane region G-Ternary under its gate (the widest of the vote
// formats it aggregates). A sum region's shape has a gate only when the
// gate is written as bits (lowbit.GateWorker, which no sum format
// carries); a positional or margin gate is a parameter of the vote modes
// that the sum modes never read.
func (r Region) shape() lowbit.Spec {
	s := lowbit.Spec{Workers: r.Workers, Layout: r.Layout, Format: r.Sum, Gate: r.Gate}
	switch {
	case !r.sumFormat():
		s.Format = lowbit.Ternary
	case r.Gate.Kind != lowbit.GateWorker:
		s.Gate = lowbit.Gate{}
	}
	return s
}

// Spec returns the lowbit aggregation spec of the region in a low-bit
// mode m.
func (r Region) Spec(m Mode) lowbit.Spec {
	return lowbit.Spec{Workers: r.Workers, Layout: r.Layout, Format: m.Format(), Gate: r.Gate}
}

// Validate checks the region on its own (Core.Map also checks overlaps
// and capacity). The error names the offending field.
func (r Region) Validate() error {
	if !r.Mode.Valid() {
		return fmt.Errorf("region %q: mode %v is not a mode", r.Name, r.Mode)
	}
	if err := r.Gate.Validate(); err != nil {
		return fmt.Errorf("region %q: gate: %w", r.Name, err)
	}
	if r.sumFormat() && !r.Sum.Sum() {
		return fmt.Errorf("region %q: sum format %v is not an integer-sum format", r.Name, r.Sum)
	}
	if err := r.shape().Validate(); err != nil {
		return fmt.Errorf("region %q: %w", r.Name, err)
	}
	if r.Base%LineBytes != 0 {
		return fmt.Errorf("region %q: base %#x not 64-byte aligned", r.Name, r.Base)
	}
	n := uint64(r.Slabs())
	if r.Size == 0 || r.Size%(n*LineBytes) != 0 {
		return fmt.Errorf("region %q: size %d is not a positive multiple of %d slabs of 64-byte lines", r.Name, r.Size, n)
	}
	l := r.PayloadLines()
	if l == 0 || r.DataBytes(l) != r.Size {
		return fmt.Errorf("region %q: size %d is not the data window of a whole number of %v lines (DataBytes)", r.Name, r.Size, r.Sum)
	}
	if r.Element0 < 0 {
		return fmt.Errorf("region %q: element0 %d is negative", r.Name, r.Element0)
	}
	if e := r.End(); e < r.Base {
		return fmt.Errorf("region %q: footprint wraps the address space", r.Name)
	}
	if l > (1<<62)/lowbit.PlaneElements {
		return fmt.Errorf("region %q: size %d too large", r.Name, r.Size)
	}
	return nil
}

// target is where an address falls inside a region.
type target struct {
	view bool // in the worker-major view window, or the element-major sign slab
	slab int  // data window slab (when !view or element-major)
	line int  // line within the slab, or aggregate line of the view
	part int  // worker-major view: 0 pos plane (first sums), 1 nz plane (second sums)
	sign bool // element-major: the address is in the sign slab (an in-place view)
	exp  bool // BFP8 region: an exponent line (data: line of slab's worker; view: exponent view line)
}

// locate decodes addr, which must lie in [r.Base, r.End()).
func (r Region) locate(addr uint64) target {
	off := addr - r.Base
	if off >= r.Size {
		v := (off - r.Size) / LineBytes
		if n := uint64(2 * r.PayloadLines()); v >= n {
			return target{view: true, exp: true, line: int(v - n)}
		}
		return target{view: true, line: int(v / 2), part: int(v % 2)}
	}
	if e := uint64(r.Workers) * r.SlabBytes(); r.Sum.BlockExponents() && off >= e {
		x := (off - e) / LineBytes
		return target{exp: true, slab: int(x) / r.ExpLines(), line: int(x) % r.ExpLines()}
	}
	sb := r.SlabBytes()
	t := target{slab: int(off / sb), line: int(off % sb / LineBytes)}
	if r.Layout == lowbit.ElementMajor && t.slab == 0 {
		t.view, t.sign = true, true
	}
	return t
}
