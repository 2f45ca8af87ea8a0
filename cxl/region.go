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
// Size is a whole number of slabs, Size = Slabs() * SlabBytes(), and each
// slab is a whole number of lines; the region's footprint [Base, End())
// lies inside the device; Workers fits the layout (1-8 element-major,
// 1-lowbit.MaxWorkers worker-major); Gate is valid; Element0 >= 0.
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
}

// Slabs returns how many equal slabs the data window is split into:
// element-major 1 (signs), worker-major W (one sign slab per worker),
// doubled with lowbit.GateWorker (gate slabs follow the sign slabs).
func (r Region) Slabs() int {
	n := 1
	if r.Layout == lowbit.WorkerMajor {
		n = r.Workers
	}
	if r.Gate.Kind == lowbit.GateWorker {
		n *= 2
	}
	return n
}

// DataBytes returns the data-window size of a region of r's shape
// (Workers, Layout, Gate) whose slabs hold lines aggregate lines each:
// Slabs() * lines * 64. It is the one region-size formula; set
// r.Size = r.DataBytes(lines), with lines = r.Layout.Lines(n) for n
// elements.
func (r Region) DataBytes(lines int) uint64 {
	return uint64(r.Slabs()) * uint64(lines) * LineBytes
}

// SlabBytes returns the size of one slab: Size / Slabs().
func (r Region) SlabBytes() uint64 {
	if n := r.Slabs(); n > 0 {
		return r.Size / uint64(n)
	}
	return 0
}

// PayloadLines returns the lines of one slab: the number of aggregate
// lines the region holds.
func (r Region) PayloadLines() int { return int(r.SlabBytes() / LineBytes) }

// Elements returns the number of gradient elements the region aggregates.
func (r Region) Elements() int { return r.PayloadLines() * r.Layout.ElementsPerLine() }

// RespLines returns how many response lines one aggregate line takes:
// 1 element-major (in place), 2 worker-major (pos and nz planes).
func (r Region) RespLines() int {
	if r.Layout == lowbit.WorkerMajor {
		return 2
	}
	return 1
}

// ViewBytes returns the size of the separate aggregate-view window that
// follows the data window: 2 * SlabBytes() worker-major, 0 element-major
// (whose aggregate view is the sign slab itself).
func (r Region) ViewBytes() uint64 {
	if r.Layout == lowbit.WorkerMajor {
		return 2 * r.SlabBytes()
	}
	return 0
}

// End returns the first address past the region's footprint (data window
// and view window).
func (r Region) End() uint64 { return r.Base + r.Size + r.ViewBytes() }

// SignAddr returns the address of worker k's sign payload for aggregate
// line l. Element-major regions have one sign slab for all workers; k is
// ignored there.
func (r Region) SignAddr(k, l int) uint64 {
	if r.Layout != lowbit.WorkerMajor {
		k = 0
	}
	return r.Base + uint64(k)*r.SlabBytes() + uint64(l)*LineBytes
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
	return r.Base + uint64(w+k)*r.SlabBytes() + uint64(l)*LineBytes
}

// ViewAddr returns the address to read for aggregate line l: the sign
// line itself element-major; worker-major, line 2l (part 0, the pos plane)
// or 2l+1 (part 1, the nz plane) of the view window.
func (r Region) ViewAddr(l, part int) uint64 {
	if r.Layout != lowbit.WorkerMajor {
		return r.SignAddr(0, l)
	}
	return r.Base + r.Size + uint64(2*l+part)*LineBytes
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
	switch r.Layout {
	case lowbit.ElementMajor:
		if r.Workers < 1 || r.Workers > lowbit.MaxPacketWorkers {
			return fmt.Errorf("region %q: workers %d out of range [1, %d] for element-major packets", r.Name, r.Workers, lowbit.MaxPacketWorkers)
		}
	case lowbit.WorkerMajor:
		if r.Workers < 1 || r.Workers > lowbit.MaxWorkers {
			return fmt.Errorf("region %q: workers %d out of range [1, %d] for worker-major planes", r.Name, r.Workers, lowbit.MaxWorkers)
		}
	default:
		return fmt.Errorf("region %q: unknown layout %v", r.Name, r.Layout)
	}
	if err := r.Gate.Validate(); err != nil {
		return fmt.Errorf("region %q: gate: %w", r.Name, err)
	}
	if r.Base%LineBytes != 0 {
		return fmt.Errorf("region %q: base %#x not 64-byte aligned", r.Name, r.Base)
	}
	n := uint64(r.Slabs())
	if r.Size == 0 || r.Size%(n*LineBytes) != 0 {
		return fmt.Errorf("region %q: size %d is not a positive multiple of %d slabs of 64-byte lines", r.Name, r.Size, n)
	}
	if r.Element0 < 0 {
		return fmt.Errorf("region %q: element0 %d is negative", r.Name, r.Element0)
	}
	if e := r.End(); e < r.Base {
		return fmt.Errorf("region %q: footprint wraps the address space", r.Name)
	}
	if r.PayloadLines() > (1<<62)/lowbit.PlaneElements {
		return fmt.Errorf("region %q: size %d too large", r.Name, r.Size)
	}
	return nil
}

// target is where an address falls inside a region.
type target struct {
	view bool // in the worker-major view window, or the element-major sign slab
	slab int  // data window slab (when !view or element-major)
	line int  // line within the slab, or aggregate line of the view
	part int  // worker-major view: 0 pos plane, 1 nz plane
	sign bool // element-major: the address is in the sign slab (an in-place view)
}

// locate decodes addr, which must lie in [r.Base, r.End()).
func (r Region) locate(addr uint64) target {
	off := addr - r.Base
	if off >= r.Size {
		v := (off - r.Size) / LineBytes
		return target{view: true, line: int(v / 2), part: int(v % 2)}
	}
	sb := r.SlabBytes()
	t := target{slab: int(off / sb), line: int(off % sb / LineBytes)}
	if r.Layout == lowbit.ElementMajor && t.slab == 0 {
		t.view, t.sign = true, true
	}
	return t
}
