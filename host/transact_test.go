package host

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// transactRegions are the regions of TestTransactAgainstCore: every layout
// and gate kind, at bases with plain memory between them.
func transactRegions() []cxl.Region {
	rs := []cxl.Region{
		{Name: "em-gb", Base: 64 * 3, Mode: cxl.Aggregate(lowbit.Binary), Workers: 8, Layout: lowbit.ElementMajor},
		{Name: "em-gate", Base: 64 * 40, Mode: cxl.Aggregate(lowbit.Ternary), Workers: 3, Layout: lowbit.ElementMajor, Gate: lowbit.Gate{Kind: lowbit.GateWorker}, Element0: 5},
		{Name: "wm", Base: 64 * 80, Mode: cxl.FP32Bypass, Workers: 5, Layout: lowbit.WorkerMajor, Gate: lowbit.Gate{Kind: lowbit.GatePattern, Period: 3}},
		{Name: "wm-gate", Base: 64 * 200, Mode: cxl.Aggregate(lowbit.Ternary), Workers: 2, Layout: lowbit.WorkerMajor, Gate: lowbit.Gate{Kind: lowbit.GateWorker}},
	}
	for i := range rs {
		rs[i].Size = rs[i].DataBytes(4)
	}
	return rs
}

// randStep returns a random step over a device of capacity bytes: writes
// and reads anywhere (in regions, their views, plain memory), a share of
// them bad (unaligned, out of range, wrong data length, bad opcode), and
// mode writes to any region (or none) with any mode (or none).
func randStep(r *rand.Rand, capacity uint64, regions int) Step {
	addr := uint64(r.IntN(int(capacity/64))) * 64
	switch r.IntN(20) {
	case 0:
		addr += uint64(1 + r.IntN(63))
	case 1:
		addr = capacity + uint64(r.IntN(4))*64
	}
	tag := uint16(r.Uint32())
	switch k := r.IntN(10); {
	case k < 2:
		return Step{ModeWrite: true, Region: cxl.RegionID(r.IntN(regions + 1)), Mode: cxl.Mode(r.IntN(cxl.NumModes + 1)), Time: r.Int64()}
	case k < 6:
		data := make([]byte, 64)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if r.IntN(25) == 0 {
			data = data[:r.IntN(64)]
		}
		req := cxl.Write(tag, addr, data)
		if r.IntN(50) == 0 {
			req.Op = 9
		}
		return Step{Req: req}
	default:
		return Step{Req: cxl.Read(tag, addr)}
	}
}

// TestTransactAgainstCore drives random batches through Device.Transact
// and the same steps through a bare cxl.Core one at a time (Core.Do, a
// mode write between two transactions: the sequential semantics a
// pipelined batch must keep), and compares every response byte for byte,
// every mode write's error, the mode-change log, the controller counters
// and the stored bytes; the accounting against its closed form.
func TestTransactAgainstCore(t *testing.T) {
	const capacity = 64 * 300
	dev, err := Open(Config{Workers: 8, Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	core, err := cxl.NewCore(cxl.Config{Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	regions := transactRegions()
	for _, reg := range regions {
		id, err := dev.MapRegion(reg)
		want, werr := core.Map(reg)
		if err != nil || werr != nil || id != want {
			t.Fatalf("MapRegion(%s) = %d, %v; the core's Map %d, %v", reg.Name, id, err, want, werr)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var writes, reads, txs int64
	batches := 400
	if testing.Short() {
		batches = 100
	}
	for b := range batches {
		steps := make([]Step, 1+rng.IntN(40))
		for i := range steps {
			steps[i] = randStep(rng, capacity, len(regions))
		}
		out := make([]Outcome, len(steps))
		first, failed := dev.Transact(steps, out)
		if first != core.Seq()+1 {
			t.Fatalf("batch %d: first sequence %d, the core is at %d", b, first, core.Seq())
		}
		wantFailed := 0
		for i, st := range steps {
			if st.ModeWrite {
				werr := core.SetMode(st.Region, st.Mode, st.Time)
				if fmt.Sprint(out[i].Err) != fmt.Sprint(werr) || out[i].Resp != (cxl.Resp{}) {
					t.Fatalf("batch %d step %d mode write: %v, the core says %v", b, i, out[i].Err, werr)
				}
				if werr != nil {
					wantFailed++
				}
				continue
			}
			want, werr := core.Do(st.Req)
			if !reflect.DeepEqual(out[i].Resp, want) || fmt.Sprint(out[i].Err) != fmt.Sprint(werr) {
				t.Fatalf("batch %d step %d %+v:\n got %+v (%v)\nwant %+v (%v)", b, i, st.Req, out[i].Resp, out[i].Err, want, werr)
			}
			if werr != nil {
				wantFailed++
				var ce *cxl.Error
				if !errors.As(out[i].Err, &ce) {
					t.Fatalf("batch %d step %d: error %T is not a *cxl.Error", b, i, out[i].Err)
				}
			}
			txs++
			switch st.Req.Op {
			case cxl.MemWr:
				writes++
			case cxl.MemRd:
				reads++
			}
		}
		if failed != wantFailed {
			t.Fatalf("batch %d: %d failed, the core failed %d", b, failed, wantFailed)
		}
	}
	st := dev.Stats()
	if !reflect.DeepEqual(st.Controller, core.Stats()) || !reflect.DeepEqual(dev.ModeChanges(), core.ModeChanges()) {
		t.Errorf("counters or log differ:\n got %+v\nwant %+v", st.Controller, core.Stats())
	}
	if st.Controller.ModeChanges == 0 || st.Controller.TotalErrors() == 0 || st.Controller.Modes[cxl.Aggregate(lowbit.Ternary)].TransformedLines == 0 {
		t.Errorf("the mix did not exercise mode changes, errors and aggregates: %+v", st.Controller)
	}
	want := Accounting{WriteLines: writes, ReadLines: reads, Transactions: txs, PayloadBytes: 64 * writes}
	if st.Host != want {
		t.Errorf("accounting %+v, want %+v", st.Host, want)
	}
	// The stored bytes: a sweep of plain reads after every region is gone.
	for _, id := range dev.Regions() {
		if err := dev.Unmap(id); err != nil {
			t.Fatal(err)
		}
		if err := core.Unmap(id); err != nil {
			t.Fatal(err)
		}
	}
	for a := uint64(0); a < capacity; a += 64 {
		got, _ := dev.ReadLines([]uint64{a})
		want, _ := core.Peek(a)
		if got[0].Data != want {
			t.Fatalf("stored line %#x differs", a)
		}
	}
}

// TestTransactBoundaries: a mode write inside a batch governs exactly the
// transactions after it, an invalid transaction stores nothing while the
// ones around it complete, and every failure is reported.
func TestTransactBoundaries(t *testing.T) {
	dev, err := Open(Config{Workers: 2, Capacity: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	reg := cxl.Region{Name: "r", Base: 1024, Mode: cxl.FP32Bypass, Workers: 2, Layout: lowbit.ElementMajor}
	reg.Size = reg.DataBytes(1)
	id, err := dev.MapRegion(reg)
	if err != nil {
		t.Fatal(err)
	}
	ones := make([]byte, 64)
	for i := range ones {
		ones[i] = 3 // both workers' sign bit set: count 2
	}
	steps := []Step{
		{Req: cxl.Write(1, reg.SignAddr(0, 0), ones)},
		{Req: cxl.Write(2, 4096, ones)}, // out of range
		{Req: cxl.Read(3, reg.ViewAddr(0, 0))},
		{ModeWrite: true, Region: id, Mode: cxl.Aggregate(lowbit.Binary), Time: 7},
		{Req: cxl.Read(4, reg.ViewAddr(0, 0))},
		{ModeWrite: true, Region: id + 1, Mode: cxl.Aggregate(lowbit.Binary)},
		{Req: cxl.Write(5, 65, ones)}, // unaligned
	}
	out := make([]Outcome, len(steps))
	first, failed := dev.Transact(steps, out)
	if first != 1 || failed != 3 {
		t.Fatalf("first %d failed %d, want 1 and 3", first, failed)
	}
	for i, bad := range []bool{false, true, false, false, false, true, true} {
		if (out[i].Err != nil) != bad {
			t.Errorf("step %d: error %v, want failure %v", i, out[i].Err, bad)
		}
	}
	if !errors.Is(out[1].Err, cxl.ErrOutOfRange) || !errors.Is(out[6].Err, cxl.ErrUnaligned) {
		t.Errorf("errors %v, %v", out[1].Err, out[6].Err)
	}
	if r := out[2].Resp; r.Mode != cxl.FP32Bypass || r.Transformed || r.Data[0] != 3 || r.Tag != 3 {
		t.Errorf("read before the mode write: %+v", r)
	}
	if r := out[4].Resp; r.Mode != cxl.Aggregate(lowbit.Binary) || !r.Transformed || r.Data[0] != 2 || r.Tag != 4 || r.Seq != 4 {
		t.Errorf("read after the mode write: %+v", r)
	}
	if log := dev.ModeChanges(); len(log) != 1 || log[0].AfterSeq != 3 || log[0].Time != 7 {
		t.Errorf("mode-change log %+v", log)
	}
}

// TestMapRegion: a raw region at a caller's base keeps Map's allocator
// consistent (the next bucket goes after it), and an overlap is refused
// with the controller's error.
func TestMapRegion(t *testing.T) {
	dev, err := Open(Config{Workers: 2, Capacity: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	reg := cxl.Region{Name: "raw", Base: 4096, Workers: 2, Layout: lowbit.ElementMajor}
	reg.Size = reg.DataBytes(2)
	if _, err := dev.MapRegion(reg); err != nil {
		t.Fatal(err)
	}
	b, err := dev.Map(BucketConfig{Name: "b", Elements: 100})
	if err != nil {
		t.Fatal(err)
	}
	if b.Region().Base != reg.End() {
		t.Errorf("bucket at %#x, want after the raw region's end %#x", b.Region().Base, reg.End())
	}
	low := reg
	low.Name, low.Base = "low", 0
	if _, err := dev.MapRegion(low); err != nil {
		t.Fatalf("a region below the others: %v", err)
	}
	if b2, err := dev.Map(BucketConfig{Name: "b2", Elements: 1}); err != nil || b2.Region().Base != b.Region().End() {
		t.Errorf("Map after a low region: %v, %v", b2, err)
	}
	over := reg
	over.Name, over.Base = "over", reg.Base+64
	if _, err := dev.MapRegion(over); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("overlapping MapRegion: %v", err)
	}
	if ids := dev.Regions(); len(ids) != 4 {
		t.Errorf("regions %v, want 4", ids)
	}
	bad := reg
	bad.Base = 1
	if _, err := dev.MapRegion(bad); err == nil {
		t.Error("an unaligned base was mapped")
	}
}
