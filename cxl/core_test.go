package cxl

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

const testCap = 1 << 30

func mustCore(t testing.TB) *Core {
	t.Helper()
	c, err := NewCore(Config{Capacity: testCap})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustMap(t testing.TB, c *Core, r Region) RegionID {
	t.Helper()
	id, err := c.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func randLine(r *rand.Rand) []byte {
	b := make([]byte, LineBytes)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// checkStored verifies the non-destructive invariant: every stored line
// equals what the reference model stored, and no other line exists.
func checkStored(t *testing.T, c *Core, m *refModel) {
	t.Helper()
	got := c.StoredLines()
	if len(got) != len(m.mem) {
		t.Fatalf("core stores %d lines, reference %d", len(got), len(m.mem))
	}
	for _, a := range got {
		l, err := c.Peek(a)
		if err != nil {
			t.Fatal(err)
		}
		if want, ok := m.mem[a]; !ok || l != want {
			t.Fatalf("stored line %#x = %x, reference %x (present %v)", a, l, want, ok)
		}
	}
}

func TestModeStringParse(t *testing.T) {
	for _, m := range Modes() {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	if _, err := ParseMode("fp16"); err == nil {
		t.Error(`ParseMode("fp16") succeeded`)
	}
	if s := Mode(9).String(); s != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", s)
	}
}

func TestConfigAndRegionValidate(t *testing.T) {
	if _, err := NewCore(Config{Capacity: 100}); err == nil {
		t.Error("capacity 100 accepted")
	}
	c := mustCore(t)
	good := Region{Name: "g", Base: 0, Size: 8 * 64, Workers: 8, Layout: lowbit.WorkerMajor}
	bad := []struct {
		name string
		r    Region
	}{
		{"unaligned base", Region{Base: 3, Size: 64, Workers: 1}},
		{"zero size", Region{Base: 0, Size: 0, Workers: 1}},
		{"size not whole slabs", Region{Base: 0, Size: 3 * 64, Workers: 2, Layout: lowbit.WorkerMajor}},
		{"9 workers element-major", Region{Base: 0, Size: 64, Workers: 9}},
		{"0 workers", Region{Base: 0, Size: 64, Workers: 0, Layout: lowbit.WorkerMajor}},
		{"bad gate", Region{Base: 0, Size: 64, Workers: 1, Gate: lowbit.Gate{Kind: lowbit.GateMargin}}},
		{"bad mode", Region{Base: 0, Size: 64, Workers: 1, Mode: 7}},
		{"beyond capacity", Region{Base: testCap - 64, Size: 128, Workers: 1}},
		{"negative element0", Region{Base: 0, Size: 64, Workers: 1, Element0: -1}},
	}
	for _, tt := range bad {
		if _, err := c.Map(tt.r); err == nil {
			t.Errorf("%s: Map succeeded", tt.name)
		}
	}
	mustMap(t, c, good)
	// The view window of good is [512, 640): a region there overlaps.
	if _, err := c.Map(Region{Base: 576, Size: 64, Workers: 1}); err == nil {
		t.Error("region overlapping a view window was mapped")
	}
	mustMap(t, c, Region{Base: good.End(), Size: 64, Workers: 1})
}

func TestBadRequestsGetErrorResponses(t *testing.T) {
	c := mustCore(t)
	wm := mustMap(t, c, Region{Name: "wm", Base: 4096, Size: 4 * 64, Workers: 4, Layout: lowbit.WorkerMajor})
	r, _ := c.Region(wm)
	good := make([]byte, 64)
	for i := range good {
		good[i] = 0x5a
	}
	cases := []struct {
		name string
		req  Req
		want error
		kind RespKind
	}{
		{"unaligned read", Read(1, 65), ErrUnaligned, DRS},
		{"unaligned write", Write(2, 4097, good), ErrUnaligned, NDR},
		{"read beyond capacity", Read(3, testCap), ErrOutOfRange, DRS},
		{"write far beyond", Write(4, 1<<62, good), ErrOutOfRange, NDR},
		{"short write", Write(5, 0, good[:63]), ErrBadLength, NDR},
		{"long write", Write(6, 0, append(good, 0)), ErrBadLength, NDR},
		{"nil write", Write(7, 0, nil), ErrBadLength, NDR},
		{"read with data", Req{Op: MemRd, Tag: 8, Data: good}, ErrBadLength, DRS},
		{"bad opcode", Req{Op: 0, Tag: 9}, ErrBadOpcode, NDR},
		{"view read in identity", Read(10, r.ViewAddr(0, 0)), ErrUnmappedView, DRS},
		{"view write", Write(11, r.ViewAddr(0, 1), good), ErrReadOnlyView, NDR},
	}
	seq := uint64(0)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			before := c.StoredLines()
			resp, err := c.Do(tt.req)
			seq++
			if !errors.Is(err, tt.want) || !sameErrKind(resp.Err, tt.want) {
				t.Fatalf("Do(%v) error %v, resp.Err %v; want %v", tt.req.Op, err, resp.Err, tt.want)
			}
			if resp.Kind != tt.kind || resp.Tag != tt.req.Tag || resp.Seq != seq || resp.Data != (Line{}) || resp.OK() {
				t.Fatalf("response %+v: want kind %v tag %d seq %d, zero data, not OK", resp, tt.kind, tt.req.Tag, seq)
			}
			if after := c.StoredLines(); len(after) != len(before) {
				t.Fatalf("a failed request stored a line")
			}
		})
	}
	st := c.Stats()
	if st.TotalErrors() != uint64(len(cases)) {
		t.Errorf("stats count %d errors, want %d", st.TotalErrors(), len(cases))
	}
	for i, k := range ErrKinds {
		if st.Errors[i] == 0 {
			t.Errorf("no %q error counted", k)
		}
	}
}

// TestModeLatchAtAcceptance: a read accepted before a mode change
// completes under the mode it was accepted with (paper Sec. 3: the
// control path writes the latch between transactions).
func TestModeLatchAtAcceptance(t *testing.T) {
	c := mustCore(t)
	id := mustMap(t, c, Region{Base: 0, Size: 64, Workers: 8, Mode: Aggregate(lowbit.Binary)})
	packet := make([]byte, 64)
	for i := range packet {
		packet[i] = byte(i * 37)
	}
	if _, err := c.Do(Write(1, 0, packet)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Accept(Read(2, 0)); err != nil { // latched G-Binary
		t.Fatal(err)
	}
	if err := c.SetMode(id, Identity, 777); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Accept(Read(3, 0)); err != nil { // latched identity
		t.Fatal(err)
	}
	if err := c.SetMode(id, Aggregate(lowbit.Ternary), 778); err != nil {
		t.Fatal(err)
	}
	r1, _ := c.Complete()
	r2, _ := c.Complete()
	if _, ok := c.Complete(); ok {
		t.Fatal("a third response")
	}
	counts := lowbit.RefCountPacket(packet, 8)
	for i := range 64 {
		if int(r1.Data[i]) != counts[i] {
			t.Fatalf("read accepted in g-binary: byte %d = %d, want count %d", i, r1.Data[i], counts[i])
		}
	}
	if r1.Mode != Aggregate(lowbit.Binary) || !r1.Transformed {
		t.Errorf("first read completed in %v (transformed %v), want g-binary", r1.Mode, r1.Transformed)
	}
	if r2.Mode != Identity || r2.Transformed || !bytes.Equal(r2.Data[:], packet) {
		t.Errorf("read accepted in identity: mode %v transformed %v data %x", r2.Mode, r2.Transformed, r2.Data)
	}
	ch := c.ModeChanges()
	want := []ModeChange{{Region: id, From: Aggregate(lowbit.Binary), To: Identity, AfterSeq: 2, Time: 777}, {Region: id, From: Identity, To: Aggregate(lowbit.Ternary), AfterSeq: 3, Time: 778}}
	if fmt.Sprint(ch) != fmt.Sprint(want) {
		t.Errorf("mode changes %v, want %v", ch, want)
	}
	if err := c.SetMode(id, Aggregate(lowbit.Ternary), 779); err != nil || c.Stats().ModeChanges != 2 {
		t.Errorf("writing the same mode counted as a change (%v, %d)", err, c.Stats().ModeChanges)
	}
	// Do refuses to run with transactions in flight.
	c.Accept(Read(4, 0))
	if _, err := c.Do(Read(5, 0)); err == nil {
		t.Error("Do with a transaction in flight succeeded")
	}
}

// TestReadsSeeEarlierWritesOnly: completion is in acceptance order, so a
// read accepted before a write returns the old bytes.
func TestReadsSeeEarlierWritesOnly(t *testing.T) {
	c := mustCore(t)
	a, b := bytes.Repeat([]byte{1}, 64), bytes.Repeat([]byte{2}, 64)
	c.Accept(Write(1, 640, a))
	c.Accept(Read(2, 640))
	c.Accept(Write(3, 640, b))
	c.Accept(Read(4, 640))
	var got []Resp
	for {
		r, ok := c.Complete()
		if !ok {
			break
		}
		got = append(got, r)
	}
	if len(got) != 4 || got[0].Kind != NDR || !bytes.Equal(got[1].Data[:], a) || !bytes.Equal(got[3].Data[:], b) {
		t.Fatalf("responses %+v", got)
	}
}

// TestPaperExample is the worked example of paper Sec. 2: with eight
// workers, six positive and two negative give +1; a G-Ternary gate zero
// at that element returns 0.
func TestPaperExample(t *testing.T) {
	c := mustCore(t)
	id := mustMap(t, c, Region{Base: 0, Size: 64, Workers: 8, Mode: Aggregate(lowbit.Binary)})
	p := make([]byte, 64)
	p[1] = 0b0011_1111 // element 1: six of eight positive
	p[2] = 0b0011_1111 // element 2: the same, but 2 mod 3 == 2 is gated off
	p[3] = 0b0000_1111 // element 3: a 4-4 tie
	c.Do(Write(1, 0, p))
	r, _ := c.Do(Read(2, 0))
	if r.Data[1] != 6 || r.Data[3] != 4 {
		t.Fatalf("g-binary counts %d, %d; want 6, 4", r.Data[1], r.Data[3])
	}
	c.SetMode(id, Aggregate(lowbit.Ternary), 0)
	r, _ = c.Do(Read(3, 0))
	if int8(r.Data[1]) != 1 || r.Data[2] != 0 || r.Data[3] != 0 || int8(r.Data[0]) != -1 {
		t.Fatalf("g-ternary %d %d %d %d; want -1 1 0 0", int8(r.Data[0]), int8(r.Data[1]), int8(r.Data[2]), int8(r.Data[3]))
	}
}

// sweepRegions returns regions covering both layouts, W at the edges and
// every gate kind.
func sweepRegions(r *rand.Rand) []Region {
	gates := []lowbit.Gate{lowbit.PaperGate, {Kind: lowbit.GatePattern, Period: 2}, {Kind: lowbit.GatePattern, Period: 64},
		{Kind: lowbit.GateWorker}, {Kind: lowbit.GateMargin, Threshold: 1}, {Kind: lowbit.GateMargin, Threshold: 3}}
	var out []Region
	base := uint64(0)
	for _, l := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		ws := []int{1, 2, 3, 7, 8}
		if l == lowbit.WorkerMajor {
			ws = []int{1, 2, 8, 9, 33, 64}
		}
		for _, w := range ws {
			for _, g := range gates {
				reg := Region{Name: fmt.Sprintf("%v/W%d/%v", l, w, g), Base: base, Workers: w, Layout: l, Gate: g, Element0: r.IntN(100)}
				lines := 1 + r.IntN(3)
				reg.Size = uint64(reg.Slabs()*lines) * 64
				out = append(out, reg)
				base = reg.End() + 64*uint64(r.IntN(2))
			}
		}
	}
	// Integer-sum regions: Int8, and BFP8 with 1, 64 and 65 payload lines
	// (one exponent line, a full one, a second one).
	for _, f := range []lowbit.Format{lowbit.Int8, lowbit.BFP8} {
		for _, w := range []int{1, 2, 5, 33} {
			for _, lines := range []int{1 + r.IntN(3), 64, 65} {
				reg := Region{Name: fmt.Sprintf("%v/W%d/%d", f, w, lines), Base: base, Workers: w, Layout: lowbit.WorkerMajor, Sum: f, Element0: r.IntN(100)}
				if f == lowbit.Int8 && lines > 3 && w > 2 {
					continue
				}
				reg.Size = reg.DataBytes(lines)
				out = append(out, reg)
				base = reg.End() + 64*uint64(r.IntN(2))
			}
		}
	}
	return out
}

// TestAgainstReferenceModel drives every region shape through random
// writes, reads of every address and mode changes, comparing with the
// reference model and checking stored bytes after every step.
func TestAgainstReferenceModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := mustCore(t)
	m := newRefModel(testCap)
	regs := sweepRegions(rng)
	for _, r := range regs {
		id := mustMap(t, c, r)
		if rid := m.mapRegion(r); rid != int(id) {
			t.Fatalf("ids diverge")
		}
	}
	end := regs[len(regs)-1].End() + 128
	tag := uint16(0)
	step := func(req Req) {
		t.Helper()
		tag++
		req.Tag = tag
		got, err := c.Do(req)
		m.accept(req)
		want, wantErr := m.complete()
		if !sameErrKind(err, wantErr) || !sameErrKind(got.Err, wantErr) {
			t.Fatalf("%v %#x: error %v, want %v", req.Op, req.Addr, err, wantErr)
		}
		got.Err = nil
		if got != want {
			t.Fatalf("%v %#x:\n got %+v\nwant %+v", req.Op, req.Addr, got, want)
		}
	}
	// Write every data line, then read every address in every mode.
	for a := uint64(0); a < end; a += 64 {
		step(Write(0, a, randLine(rng)))
	}
	checkStored(t, c, m)
	for _, mode := range AllModes() {
		for id := range regs {
			c.SetMode(RegionID(id), mode, 0)
			m.setMode(id, mode)
		}
		for a := uint64(0); a < end; a += 64 {
			step(Read(0, a))
		}
		checkStored(t, c, m)
	}
	// Random traffic with random mode changes between transactions.
	for range 20000 {
		a := uint64(rng.IntN(int(end/64))) * 64
		switch rng.IntN(10) {
		case 0:
			id := rng.IntN(len(regs))
			mode := Mode(rng.IntN(NumModes))
			c.SetMode(RegionID(id), mode, 0)
			m.setMode(id, mode)
		case 1, 2:
			step(Write(0, a, randLine(rng)))
		default:
			step(Read(0, a))
		}
	}
	checkStored(t, c, m)
}

// TestControllerConcurrent has one writer goroutine per worker and a
// control goroutine flipping the mode, then checks the aggregate. Run
// with -race.
func TestControllerConcurrent(t *testing.T) {
	const w, lines = 16, 32
	ctl, err := New(Config{Capacity: testCap})
	if err != nil {
		t.Fatal(err)
	}
	reg := Region{Base: 1 << 20, Size: w * lines * 64, Workers: w, Layout: lowbit.WorkerMajor}
	id, err := ctl.Map(reg)
	if err != nil {
		t.Fatal(err)
	}
	planes := make([][]byte, w) // worker k's whole slab
	for k := range planes {
		planes[k] = randLine(rand.New(rand.NewPCG(uint64(k), 9)))
		for range lines - 1 {
			planes[k] = append(planes[k], randLine(rand.New(rand.NewPCG(uint64(k), uint64(len(planes[k])))))...)
		}
	}
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range lines {
				if _, err := ctl.WriteLine(uint16(k), reg.SignAddr(k, l), planes[k][l*64:(l+1)*64]); err != nil {
					t.Error(err)
				}
				// Readers race with writers: raw slab reads are never transformed.
				if r, err := ctl.ReadLine(uint16(k), reg.SignAddr(k, l)); err != nil || r.Transformed {
					t.Error(err, r.Transformed)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			if err := ctl.SetMode(id, AllModes()[i%NumModes], int64(i)); err != nil {
				t.Error(err)
			}
			ctl.Stats()
		}
	}()
	wg.Wait()
	if err := ctl.SetMode(id, Aggregate(lowbit.Binary), 1000); err != nil {
		t.Fatal(err)
	}
	spec := reg.Spec(Aggregate(lowbit.Binary))
	for l := range lines {
		signs := make([][]byte, w)
		for k := range w {
			signs[k] = planes[k][l*64 : (l+1)*64]
		}
		want := lowbit.RefAggregatePlanes(signs, nil, 512, spec, l*512)
		pos, _ := ctl.ReadLine(0, reg.ViewAddr(l, 0))
		nz, _ := ctl.ReadLine(0, reg.ViewAddr(l, 1))
		got := make([]int8, 512)
		lowbit.UnpackPlanes(got, pos.Data[:], nz.Data[:], 512)
		if !slicesEqual(got, want) {
			t.Fatalf("line %d: aggregate differs from the reference", l)
		}
	}
	st := ctl.Stats()
	// Writes land under whichever mode the region held at the time, any of
	// AllModes, so the total is over every mode.
	var written uint64
	for _, m := range AllModes() {
		written += st.Modes[m].WriteLines
	}
	if written != w*lines {
		t.Errorf("write lines %+v, want %d in total", st.Modes, w*lines)
	}
	if st.Modes[Aggregate(lowbit.Binary)].TransformedLines != 2*lines || st.Modes[Aggregate(lowbit.Binary)].MediaLinesRead < 2*w*lines {
		t.Errorf("g-binary stats %+v", st.Modes[Aggregate(lowbit.Binary)])
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStatsPerMode(t *testing.T) {
	c := mustCore(t)
	id := mustMap(t, c, Region{Base: 0, Size: 128, Workers: 8, Gate: lowbit.Gate{Kind: lowbit.GateWorker}})
	c.Do(Write(0, 0, make([]byte, 64)))  // sign packet, identity
	c.Do(Write(0, 64, make([]byte, 64))) // gate packet
	c.Do(Read(0, 0))
	c.SetMode(id, Aggregate(lowbit.Ternary), 5)
	c.Do(Read(0, 0))  // transformed, reads sign and gate lines
	c.Do(Read(0, 64)) // gate slab: stored bytes
	c.Do(Read(0, 3))  // error
	st := c.Stats()
	var want [NumModes]ModeStats
	want[Identity] = ModeStats{ReadLines: 1, WriteLines: 2, ReadBytes: 64, WriteBytes: 128, MediaLinesRead: 1}
	want[Aggregate(lowbit.Ternary)] = ModeStats{ReadLines: 2, TransformedLines: 1, ReadBytes: 128, MediaLinesRead: 3}
	if st.Modes != want || st.Transactions != 6 || st.Completed != 6 || st.TotalErrors() != 1 || st.ModeChanges != 1 {
		t.Errorf("stats %+v\nwant modes %+v", st, want)
	}
}

func TestUnmapKeepsBytes(t *testing.T) {
	c := mustCore(t)
	id := mustMap(t, c, Region{Base: 0, Size: 64, Workers: 8, Mode: Aggregate(lowbit.Binary)})
	p := bytes.Repeat([]byte{0xff}, 64)
	c.Do(Write(0, 0, p))
	c.Accept(Read(1, 0))
	if err := c.Unmap(id); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Complete() // accepted while mapped: still g-binary
	if r.Data[0] != 8 {
		t.Errorf("read accepted before unmap returned %d, want count 8", r.Data[0])
	}
	r, _ = c.Do(Read(2, 0))
	if !bytes.Equal(r.Data[:], p) || r.Region != NoRegion {
		t.Errorf("plain read after unmap: %+v", r)
	}
	if err := c.SetMode(id, Identity, 0); err == nil {
		t.Error("SetMode on an unmapped region succeeded")
	}
}

func TestQueueCompaction(t *testing.T) {
	c := mustCore(t)
	// Keep one transaction in flight for a long time: the queue must not grow without bound.
	c.Accept(Read(0, 0))
	for i := range 10000 {
		c.Accept(Read(uint16(i), 64))
		if _, ok := c.Complete(); !ok {
			t.Fatal("nothing to complete")
		}
	}
	if c.Pending() != 1 || cap(c.queue) > 1024 {
		t.Errorf("pending %d, queue capacity %d", c.Pending(), cap(c.queue))
	}
}

func TestPeek(t *testing.T) {
	c := mustCore(t)
	if _, err := c.Peek(1); !errors.Is(err, ErrUnaligned) {
		t.Error(err)
	}
	if _, err := c.Peek(testCap); !errors.Is(err, ErrOutOfRange) {
		t.Error(err)
	}
	if l, err := c.Peek(64); err != nil || l != (Line{}) {
		t.Error(l, err)
	}
}

// TestReadPathDoesNotAllocate pins the zero-allocation read path.
func TestReadPathDoesNotAllocate(t *testing.T) {
	c := mustCore(t)
	em := Region{Base: 0, Size: 128, Workers: 8, Gate: lowbit.Gate{Kind: lowbit.GateWorker}}
	wm := Region{Base: 4096, Size: 8 * 64, Workers: 8, Layout: lowbit.WorkerMajor}
	ide, idw := mustMap(t, c, em), mustMap(t, c, wm)
	for _, m := range Modes() {
		c.SetMode(ide, m, 0)
		c.SetMode(idw, m, 0)
		for _, a := range []uint64{0, 64, wm.SignAddr(3, 0), wm.ViewAddr(0, 0), wm.ViewAddr(0, 1), 1 << 20} {
			if !m.LowBit() && a >= wm.Base+wm.Size && a < wm.End() {
				continue // an error response, which may allocate its *Error
			}
			if n := testing.AllocsPerRun(100, func() { c.Do(Read(1, a)) }); n != 0 {
				t.Errorf("%v read of %#x: %v allocations", m, a, n)
			}
		}
	}
	// The integer-sum views, after a first read has sized the scratch.
	bf := Region{Base: 1 << 16, Workers: 8, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8, Mode: Aggregate(lowbit.BFP8)}
	bf.Size = bf.DataBytes(3)
	i8 := Region{Base: 1 << 17, Workers: 8, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8, Mode: Aggregate(lowbit.Int8)}
	i8.Size = i8.DataBytes(3)
	mustMap(t, c, bf)
	mustMap(t, c, i8)
	for _, a := range []uint64{bf.ViewAddr(1, 0), bf.ViewAddr(2, 1), bf.ExpViewAddr(0), i8.ViewAddr(0, 1), i8.ViewAddr(2, 0)} {
		c.Do(Read(1, a))
		if n := testing.AllocsPerRun(100, func() { c.Do(Read(1, a)) }); n != 0 {
			t.Errorf("sum view read of %#x: %v allocations", a, n)
		}
	}
}

// TestSparseStore: a device of 2^52 bytes costs only the pages written;
// unwritten lines, even in a written page, read as zeros.
func TestSparseStore(t *testing.T) {
	c, err := NewCore(Config{Capacity: MaxCapacity})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	want := map[uint64]Line{}
	for range 500 {
		a := (rng.Uint64() % (MaxCapacity / 64)) * 64
		if rng.IntN(2) == 0 { // cluster some writes into shared pages
			a = uint64(rng.IntN(300)) * 64
		}
		var l Line
		copy(l[:], randLine(rng))
		if _, err := c.Do(Write(0, a, l[:])); err != nil {
			t.Fatal(err)
		}
		want[a] = l
	}
	if got := c.StoredLines(); len(got) != len(want) {
		t.Fatalf("%d stored lines, wrote %d distinct", len(got), len(want))
	}
	if len(c.mem.pages) > len(want) {
		t.Errorf("%d pages for %d lines", len(c.mem.pages), len(want))
	}
	for a := uint64(0); a < 400*64; a += 64 {
		r, err := c.Do(Read(0, a))
		if err != nil || r.Data != want[a] {
			t.Fatalf("read %#x = %x (%v), want %x", a, r.Data, err, want[a])
		}
	}
	for a, l := range want {
		if got, _ := c.Peek(a); got != l {
			t.Fatalf("peek %#x", a)
		}
	}
}

// TestSumRegionsByHand checks the integer-sum transforms on cases worked
// out by hand from the contract (FORMATS-SPEC): an Int8 lane sum that
// saturates (at the largest exact W, 258, only codes of -128, which no
// encoder writes, can leave int16; more workers are refused), a BFP8
// alignment with rounding, the exponent view, the view line split,
// unwritten lines, and the media lines read.
func TestSumRegionsByHand(t *testing.T) {
	c := mustCore(t)
	line := func(v ...int8) []byte {
		b := make([]byte, 64)
		for i, x := range v {
			b[i] = byte(x)
		}
		return b
	}
	if _, err := c.Map(Region{Name: "int8", Workers: lowbit.MaxSumWorkers + 1, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8, Mode: Aggregate(lowbit.Int8), Size: 64 * 259}); err == nil || !strings.Contains(err.Error(), "1 to 258 workers") {
		t.Errorf("int8 region of 259 workers: %v", err)
	}
	// Int8, W = 258: lane 0 all -128 (-33024 saturates to -32768), lane
	// 1 all -1 (-258), lane 33 (second view line, lane 1) 1 from worker 0.
	const w = lowbit.MaxSumWorkers
	i8 := Region{Name: "int8", Workers: w, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8, Mode: Aggregate(lowbit.Int8)}
	i8.Size = i8.DataBytes(1)
	id8 := mustMap(t, c, i8)
	for k := range w {
		l := line(-128, -1)
		if k == 0 {
			l[33] = 1
		}
		if _, err := c.Do(Write(0, i8.CodeAddr(k, 0), l)); err != nil {
			t.Fatal(err)
		}
	}
	r0, err0 := c.Do(Read(0, i8.ViewAddr(0, 0)))
	r1, err1 := c.Do(Read(0, i8.ViewAddr(0, 1)))
	if err0 != nil || err1 != nil || !r0.Transformed {
		t.Fatal(err0, err1)
	}
	want0 := make([]byte, 64)
	want0[0], want0[1] = 0x00, 0x80 // -32768
	want0[2], want0[3] = 0xfe, 0xfe // -258
	want1 := make([]byte, 64)
	want1[2] = 1
	if string(r0.Data[:]) != string(want0) || string(r1.Data[:]) != string(want1) {
		t.Errorf("int8 views\n%x\n%x\nwant\n%x\n%x", r0.Data, r1.Data, want0, want1)
	}
	if got := c.Stats().Modes[Aggregate(lowbit.Int8)]; got.TransformedLines != 2 || got.MediaLinesRead != 2*w {
		t.Errorf("INT8 stats %+v, want 2 transformed lines reading 2 x %d media lines", got, w)
	}
	// In another mode the view is not mapped; a BFP8 region's view is
	// not mapped under the INT8 mode either.
	c.SetMode(id8, Aggregate(lowbit.Binary), 0)
	if _, err := c.Do(Read(0, i8.ViewAddr(0, 0))); !errors.Is(err, ErrUnmappedView) {
		t.Errorf("int8 view under g-binary: %v, want ErrUnmappedView", err)
	}

	// BFP8, W = 2, 65 lines (two exponent lines). Block 0: worker 0 e = 3
	// m = (100, -3); worker 1 e = 1 m = (6, -6): E = 3, worker 1 shifts by
	// 2 with rounding: (6+2)>>2 = 2, (-6+2)>>2 = -1; sums (102, -4).
	// Block 64 is in the second exponent line: worker 1 alone, e = -5,
	// m = 7; worker 0 never writes it (its exponent byte reads 0).
	bf := Region{Name: "bfp8", Base: i8.End(), Workers: 2, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8, Mode: Aggregate(lowbit.BFP8)}
	bf.Size = bf.DataBytes(65)
	if bf.ExpLines() != 2 || bf.Size != 2*(65+2)*64 || bf.PayloadLines() != 65 || bf.Elements() != 65*64 {
		t.Fatalf("bfp8 geometry: %d exponent lines, size %d, %d lines", bf.ExpLines(), bf.Size, bf.PayloadLines())
	}
	mustMap(t, c, bf)
	do := func(req Req) Resp {
		t.Helper()
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	do(Write(0, bf.CodeAddr(0, 0), line(100, -3)))
	do(Write(0, bf.CodeAddr(1, 0), line(6, -6)))
	do(Write(0, bf.ExpAddr(0, 0), line(3)))
	do(Write(0, bf.ExpAddr(1, 0), line(1)))
	do(Write(0, bf.CodeAddr(1, 64), line(7)))
	do(Write(0, bf.ExpAddr(1, 1), line(-5)))
	v := do(Read(0, bf.ViewAddr(0, 0)))
	if w := line(102, 0, -4, -1); string(v.Data[:]) != string(w) {
		t.Errorf("bfp8 block 0 sums %x, want %x", v.Data, w)
	}
	// Block 64: E = max(0 (unwritten), -5) = 0, worker 1 shifts by 5:
	// (7+16)>>5 = 0.
	if v := do(Read(0, bf.ViewAddr(64, 0))); v.Data != (Line{}) {
		t.Errorf("bfp8 block 64 sums %x, want zeros", v.Data)
	}
	e0 := do(Read(0, bf.ExpViewAddr(0)))
	if w := line(3); string(e0.Data[:]) != string(w) {
		t.Errorf("exponent view 0 %x, want %x", e0.Data, w)
	}
	if e1 := do(Read(0, bf.ExpViewAddr(1))); e1.Data != (Line{}) {
		t.Errorf("exponent view 1 %x, want zeros (max of unwritten 0 and -5)", e1.Data)
	}
	// Data lines read back as stored; the view is read-only.
	if r := do(Read(0, bf.ExpAddr(1, 1))); r.Transformed || int8(r.Data[0]) != -5 {
		t.Errorf("exponent data line %+v", r)
	}
	if _, err := c.Do(Write(0, bf.ExpViewAddr(1), line(1))); !errors.Is(err, ErrReadOnlyView) {
		t.Errorf("write into the exponent view: %v", err)
	}
	if _, err := c.Do(Read(0, bf.ExpViewAddr(1)+8)); !errors.Is(err, ErrUnaligned) {
		t.Errorf("unaligned exponent view read: %v", err)
	}
	if got := c.Stats().Modes[Aggregate(lowbit.BFP8)]; got.TransformedLines != 4 || got.MediaLinesRead != 2*4+2*2+1 {
		t.Errorf("BFP8 stats %+v: want 4 transformed lines, 2W media lines per sum line and W per exponent line, 1 per data line", got)
	}
}

// TestSumRegionValidate: a Sum region must be worker-major, carry no gate
// bits, name a sum format, and have a size DataBytes can produce.
func TestSumRegionValidate(t *testing.T) {
	ok := Region{Workers: 4, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8}
	ok.Size = ok.DataBytes(64)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Region{
		"element-major": {Workers: 4, Sum: lowbit.Int8, Size: 4 * 64},
		"gate bits":     {Workers: 4, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8, Gate: lowbit.Gate{Kind: lowbit.GateWorker}, Size: 4 * 64},
		"vote format":   {Workers: 4, Layout: lowbit.WorkerMajor, Sum: lowbit.Binary, Size: 4 * 64},
		"bad format":    {Workers: 4, Layout: lowbit.WorkerMajor, Sum: lowbit.Format(lowbit.NumFormats), Size: 4 * 64},
		// 66 lines per worker: 64 + 1 is 65 and 65 + 2 is 67.
		"bfp8 size":   {Workers: 4, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8, Size: 4 * 66 * 64},
		"bfp8 1 line": {Workers: 4, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8, Size: 4 * 64},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: %+v validated", name, r)
		}
	}
}
