package host

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// runRegions are the regions of TestTransactRunsAgainstTransact: every
// layout and gate kind, W = 8 sign planes (their own kernel), INT8 and
// BFP8 sum regions, large enough that runs cross storage pages (64
// lines) and window boundaries, at bases off page boundaries with plain
// memory between them.
func runRegions() []cxl.Region {
	rs := []cxl.Region{
		{Name: "em-gb", Base: 64 * 3, Mode: cxl.Aggregate(lowbit.Binary), Workers: 8, Layout: lowbit.ElementMajor},
		{Name: "em-gate", Base: 64 * 400, Mode: cxl.Aggregate(lowbit.Ternary), Workers: 3, Layout: lowbit.ElementMajor, Gate: lowbit.Gate{Kind: lowbit.GateWorker}, Element0: 5},
		{Name: "wm", Base: 64 * 700, Mode: cxl.FP32Bypass, Workers: 5, Layout: lowbit.WorkerMajor, Gate: lowbit.Gate{Kind: lowbit.GatePattern, Period: 3}},
		{Name: "wm-gate", Base: 64 * 1100, Mode: cxl.Aggregate(lowbit.Ternary), Workers: 2, Layout: lowbit.WorkerMajor, Gate: lowbit.Gate{Kind: lowbit.GateWorker}},
		{Name: "em-w3", Base: 64 * 1360, Mode: cxl.Aggregate(lowbit.Binary), Workers: 3, Layout: lowbit.ElementMajor},
		{Name: "wm8", Base: 64 * 1700, Mode: cxl.Aggregate(lowbit.Ternary), Workers: 8, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate, Element0: 9},
		{Name: "i8", Base: 64 * 2150, Mode: cxl.Aggregate(lowbit.Int8), Workers: 3, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8},
		{Name: "bf", Base: 64 * 2400, Mode: cxl.Aggregate(lowbit.BFP8), Workers: 2, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8},
	}
	for i, n := range []int{300, 90, 50, 40, 130, 40, 45, 130} {
		rs[i].Size = rs[i].DataBytes(n)
	}
	return rs
}

// randRun returns a random run over a device of capacity bytes: writes
// and reads of 1-300 lines from anywhere (across regions, windows, plain
// memory and the device's end), a share of them bad (unaligned, short or
// missing data, a bad opcode), and mode writes to any region (or none)
// with any mode (or none).
func randRun(r *rand.Rand, capacity uint64, regions int) Run {
	if r.IntN(6) == 0 {
		return Run{ModeWrite: true, Region: cxl.RegionID(r.IntN(regions + 1)), Mode: cxl.Mode(r.IntN(cxl.NumModes + 1)), Time: r.Int64()}
	}
	n := 1 + r.IntN(300)
	if r.IntN(4) == 0 {
		n = 1 + r.IntN(4)
	}
	addr := uint64(r.IntN(int(capacity/64))) * 64
	switch r.IntN(25) {
	case 0:
		addr += uint64(1 + r.IntN(63))
	case 1:
		addr = capacity - uint64(r.IntN(8))*64
	}
	run := cxl.Run{Op: cxl.MemRd, Tag: uint16(r.Uint32()), Addr: addr, Lines: n}
	if r.IntN(2) == 0 {
		run.Op = cxl.MemWr
		run.Data = make([]byte, n*64)
		for i := range run.Data {
			run.Data[i] = byte(r.Uint32())
		}
		switch r.IntN(12) {
		case 0:
			run.Data = run.Data[:r.IntN(len(run.Data)+1)]
		case 1:
			run.Data = append(run.Data, 1, 2, 3)
		}
	}
	if r.IntN(60) == 0 {
		run.Op = cxl.Opcode(r.IntN(2) * 9)
	}
	if run.Op != cxl.MemWr {
		run.Dst = bytes.Repeat([]byte{0xa5}, n*64) // every byte must be written
	}
	return Run{Run: run}
}

// perLine spells a run out as Transact steps, one a line.
func perLine(run Run) []Step {
	if run.ModeWrite {
		return []Step{{ModeWrite: true, Region: run.Region, Mode: run.Mode, Time: run.Time}}
	}
	r := run.Run
	steps := make([]Step, r.Lines)
	for k := range steps {
		req := cxl.Req{Op: r.Op, Tag: r.Tag + uint16(k), Addr: r.Addr + uint64(k)*64}
		if r.Op == cxl.MemWr {
			lo := min(len(r.Data), 64*k)
			req.Data = r.Data[lo:min(len(r.Data), lo+64)]
		}
		steps[k] = Step{Req: req}
	}
	return steps
}

// TestTransactRunsAgainstTransact drives random batches of runs through
// Device.TransactRuns on one device and the same batches spelled out one
// step a line through Device.Transact (the per-line path) on another, and
// compares every response (rebuilt from the spans: tag, sequence number,
// address, kind, mode, region, transformed flag, every data byte, the
// error itself), the failure counts, the accounting, the controller
// counters, the mode-change log and every stored byte. Between batches it
// sometimes unmaps a region on both, so runs also cross plain memory where
// a region was.
func TestTransactRunsAgainstTransact(t *testing.T) {
	const capacity = 64 * 3000
	regions := runRegions()
	var devs [2]*Device
	for i := range devs {
		d, err := Open(Config{Workers: 8, Capacity: capacity})
		if err != nil {
			t.Fatal(err)
		}
		for _, reg := range regions {
			if _, err := d.MapRegion(reg); err != nil {
				t.Fatal(err)
			}
		}
		devs[i] = d
	}
	dev, ref := devs[0], devs[1]
	rng := rand.New(rand.NewPCG(7, 8))
	batches := 300
	if testing.Short() {
		batches = 80
	}
	var spans, transformed, fast int
	for b := range batches {
		if ids := dev.Regions(); b%100 == 99 && len(ids) > 3 {
			// Unmap a region: its lines become plain memory.
			id := ids[rng.IntN(len(ids))]
			for _, d := range devs {
				if err := d.Unmap(id); err != nil {
					t.Fatal(err)
				}
			}
		}
		runs := make([]Run, 1+rng.IntN(8))
		var steps []Step
		for i := range runs {
			runs[i] = randRun(rng, capacity, len(regions))
			steps = append(steps, perLine(runs[i])...)
		}
		out := make([]RunOutcome, len(runs))
		first, failed := dev.TransactRuns(runs, out)
		want := make([]Outcome, len(steps))
		wantFirst, wantFailed := ref.Transact(steps, want)
		if first != wantFirst || failed != wantFailed {
			t.Fatalf("batch %d: first %d failed %d, per line %d and %d", b, first, failed, wantFirst, wantFailed)
		}
		seq, s := first, 0
		for i, run := range runs {
			if run.ModeWrite {
				if !reflect.DeepEqual(out[i].Err, want[s].Err) || len(out[i].Spans) != 0 {
					t.Fatalf("batch %d run %d mode write: %v, per line %v", b, i, out[i].Err, want[s].Err)
				}
				s++
				continue
			}
			r := run.Run
			k := 0
			for _, sp := range out[i].Spans {
				if sp.Lines < 1 || (sp.Err != nil && sp.Lines != 1) {
					t.Fatalf("batch %d run %d: span %+v", b, i, sp)
				}
				spans++
				if sp.Lines > 1 {
					fast += sp.Lines
				}
				for range sp.Lines {
					got := cxl.Resp{Kind: cxl.NDR, Tag: r.Tag + uint16(k), Seq: seq, Addr: r.Addr + uint64(k)*64,
						Mode: sp.Mode, Region: sp.Region, Transformed: sp.Transformed, Err: sp.Err}
					if r.Op == cxl.MemRd {
						got.Kind = cxl.DRS
						got.Data = cxl.Line(r.Dst[64*k:])
					}
					if w := want[s]; !reflect.DeepEqual(got, w.Resp) || !reflect.DeepEqual(sp.Err, w.Err) {
						t.Fatalf("batch %d run %d (%v %#x, %d lines) line %d:\n got %+v\nwant %+v", b, i, r.Op, r.Addr, r.Lines, k, got, w.Resp)
					}
					if sp.Transformed {
						transformed++
					}
					k++
					s++
					seq++
				}
			}
			if k != r.Lines {
				t.Fatalf("batch %d run %d: spans cover %d of %d lines", b, i, k, r.Lines)
			}
		}
		if st, wst := dev.Stats(), ref.Stats(); !reflect.DeepEqual(st, wst) {
			t.Fatalf("batch %d: stats\n got %+v\nwant %+v", b, st, wst)
		}
	}
	if !reflect.DeepEqual(dev.ModeChanges(), ref.ModeChanges()) {
		t.Error("mode-change logs differ")
	}
	st := dev.Stats().Controller
	if st.ModeChanges == 0 || st.TotalErrors() == 0 || transformed == 0 || fast == 0 || st.Modes[cxl.Aggregate(lowbit.Ternary)].TransformedLines == 0 ||
		st.Modes[cxl.Aggregate(lowbit.Int8)].TransformedLines == 0 || st.Modes[cxl.Aggregate(lowbit.BFP8)].TransformedLines == 0 {
		t.Errorf("the mix did not exercise mode changes, errors, stretches and aggregates: %+v", st)
	}
	t.Logf("%d spans, %d lines in stretches of more than one, %d transformed", spans, fast, transformed)
	// The stored bytes: plain reads of the whole device after every
	// region is gone.
	for _, d := range devs {
		for _, id := range d.Regions() {
			if err := d.Unmap(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := make([]uint64, capacity/64)
	for i := range all {
		all[i] = uint64(i) * 64
	}
	got, err := dev.ReadLines(all)
	if err != nil {
		t.Fatal(err)
	}
	wantLines, _ := ref.ReadLines(all)
	for i := range got {
		if got[i].Data != wantLines[i].Data {
			t.Fatalf("stored line %#x differs", all[i])
		}
	}
}
