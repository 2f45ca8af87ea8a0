package cxl

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// runCores returns two cores with the same regions: an element-major
// G-Binary region and a worker-major one, off page boundaries, with plain
// memory around them.
func runCores(t testing.TB, capacity uint64) (run, ref *Core) {
	t.Helper()
	em := Region{Name: "em", Base: 64 * 5, Mode: Aggregate(lowbit.Binary), Workers: 8, Layout: lowbit.ElementMajor}
	em.Size = em.DataBytes(150)
	wm := Region{Name: "wm", Base: 64 * 200, Mode: Aggregate(lowbit.Ternary), Workers: 2, Layout: lowbit.WorkerMajor}
	wm.Size = wm.DataBytes(30)
	var cs [2]*Core
	for i := range cs {
		c, err := NewCore(Config{Capacity: capacity})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []Region{em, wm} {
			if _, err := c.Map(r); err != nil {
				t.Fatal(err)
			}
		}
		cs[i] = c
	}
	return cs[0], cs[1]
}

// checkRun runs r through run.DoRun and, one line at a time, through
// ref.Do, and compares every response, the counters, the stored lines
// (addresses, count and bytes) and the sequence numbers.
func checkRun(t testing.TB, run, ref *Core, r Run) {
	t.Helper()
	first := run.Seq() + 1
	spans, err := run.DoRun(r, nil)
	if err != nil {
		t.Fatalf("DoRun(%+v): %v", r, err)
	}
	k := 0
	for _, sp := range spans {
		for range sp.Lines {
			req := Req{Op: r.Op, Tag: r.Tag + uint16(k), Addr: r.Addr + uint64(k)*LineBytes}
			if r.Op == MemWr {
				lo := min(len(r.Data), k*LineBytes)
				req.Data = r.Data[lo:min(len(r.Data), lo+LineBytes)]
			}
			want, _ := ref.Do(req)
			got := Resp{Kind: NDR, Tag: req.Tag, Seq: first + uint64(k), Addr: req.Addr, Mode: sp.Mode, Region: sp.Region, Transformed: sp.Transformed, Err: sp.Err}
			if r.Op == MemRd {
				got.Kind, got.Data = DRS, Line(r.Dst[k*LineBytes:])
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("run %v %#x (%d lines) line %d:\n got %+v\nwant %+v", r.Op, r.Addr, r.Lines, k, got, want)
			}
			k++
		}
	}
	if k != r.Lines {
		t.Fatalf("spans cover %d of %d lines", k, r.Lines)
	}
	if run.Stats() != ref.Stats() || run.Seq() != ref.Seq() {
		t.Fatalf("counters\n got %+v\nwant %+v", run.Stats(), ref.Stats())
	}
	if run.mem.lines != ref.mem.lines || !reflect.DeepEqual(run.StoredLines(), ref.StoredLines()) {
		t.Fatalf("stored lines: %d vs %d", run.mem.lines, ref.mem.lines)
	}
}

// TestDoRunMatchesDo: runs that cross storage pages, region windows,
// plain memory and the device's end, with short data and bad alignment,
// against Do a line at a time; then every stored byte.
func TestDoRunMatchesDo(t *testing.T) {
	const capacity = 64 * 400
	run, ref := runCores(t, capacity)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []Run{
		{Op: MemWr, Addr: 0, Lines: 400},                   // the whole device: plain, em, plain, wm data, wm view, plain
		{Op: MemRd, Addr: 0, Lines: 400},                   // the same read back: aggregates, view reads, errors
		{Op: MemWr, Addr: capacity - 3*64, Lines: 6},       // past the end
		{Op: MemRd, Addr: 64*5 + 1, Lines: 3},              // unaligned
		{Op: MemWr, Addr: 64 * 60, Lines: 10, Data: nil},   // no data: every line a bad length
		{Op: MemRd, Addr: 64 * 63, Lines: 130, Tag: 65530}, // tags wrap
		{Op: 7, Addr: 0, Lines: 2},
	}
	for range 60 {
		cases = append(cases, Run{Op: Opcode(1 + rng.IntN(2)), Addr: uint64(rng.IntN(420)) * 64, Lines: rng.IntN(200), Tag: uint16(rng.Uint32())})
	}
	for i, r := range cases {
		if r.Op == MemWr && i != 4 {
			r.Data = make([]byte, r.Lines*LineBytes-rng.IntN(2)*rng.IntN(70))
			for j := range r.Data {
				r.Data[j] = byte(rng.Uint32())
			}
		}
		if r.Op != MemWr {
			r.Dst = bytes.Repeat([]byte{0x5a}, r.Lines*LineBytes)
		}
		checkRun(t, run, ref, r)
	}
	for a := uint64(0); a < capacity; a += 64 {
		if x, _ := run.Peek(a); x != ref.mem.load(a/64) {
			t.Fatalf("stored line %#x differs", a)
		}
	}
	if st := run.Stats(); st.Modes[Aggregate(lowbit.Binary)].TransformedLines == 0 || st.TotalErrors() == 0 {
		t.Errorf("no aggregates or no errors: %+v", st)
	}
}

// TestDoRunRefuses: with transactions in flight, a negative line count or
// a Dst too short, DoRun runs nothing and says why.
func TestDoRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       Run
		pending bool
		want    string
	}{
		{"in flight", Run{Op: MemRd, Lines: 1, Dst: make([]byte, 64)}, true, "in flight"},
		{"negative", Run{Op: MemWr, Lines: -1}, false, "-1 lines"},
		{"short dst", Run{Op: MemRd, Lines: 2, Dst: make([]byte, 127)}, false, "into 127 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := runCores(t, 64*400)
			if tc.pending {
				c.Accept(Read(0, 0)) //nolint:errcheck
			}
			seq, st := c.Seq(), c.Stats()
			spans, err := c.DoRun(tc.r, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(spans) != 0 {
				t.Fatalf("DoRun = %v, %v; want an error saying %q", spans, err, tc.want)
			}
			if c.Seq() != seq || c.Stats() != st {
				t.Error("a refused run changed the core")
			}
		})
	}
}

// TestDoRunHonoursFault: with a fault injected every line goes through
// Do, so the fault the functional tester must catch shows in a run's data
// too: identity's corrupted byte at sequence 30000, reached by a run.
func TestDoRunHonoursFault(t *testing.T) {
	c, err := NewCore(Config{Capacity: 64 * 40000, Fault: FaultIdentityByte})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 40000*LineBytes)
	if _, err := c.DoRun(Run{Op: MemRd, Addr: 0, Lines: 40000, Dst: dst}, nil); err != nil {
		t.Fatal(err)
	}
	for k := range 40000 {
		want := byte(0)
		if k == 29999 { // sequence numbers start at 1
			want = 1
		}
		if dst[k*LineBytes+3] != want {
			t.Fatalf("line %d: byte 3 is %d, want %d", k, dst[k*LineBytes+3], want)
		}
	}
	if _, err := NewCore(Config{Capacity: 64, Fault: "no-such-fault"}); err == nil {
		t.Error("an unknown fault accepted")
	}
}

// FuzzDoRun: any run (opcode, address, lines, tag, data) against Do a
// line at a time, after a mode write from the input.
func FuzzDoRun(f *testing.F) {
	f.Add(uint8(MemWr), uint16(0), uint16(300), uint16(1), uint8(Aggregate(lowbit.Binary)), []byte{1, 2, 3})
	f.Add(uint8(MemRd), uint16(3), uint16(200), uint16(65535), uint8(Identity), []byte(nil))
	f.Fuzz(func(t *testing.T, op uint8, line, n, tag uint16, mode uint8, data []byte) {
		const capacity = 64 * 400
		run, ref := runCores(t, capacity)
		for _, c := range []*Core{run, ref} {
			_ = c.SetMode(RegionID(mode%2), Mode(mode/2%uint8(NumModes+1)), 0)
		}
		seed := Run{Op: MemWr, Lines: 400, Data: make([]byte, 400*LineBytes)}
		for i := range seed.Data {
			seed.Data[i] = byte(i * 7)
		}
		checkRun(t, run, ref, seed)
		r := Run{Op: Opcode(op % 4), Addr: uint64(line%450)*64 + uint64(op/4%2), Lines: int(n % 500), Tag: tag}
		if r.Op == MemWr && len(data) > 0 {
			r.Data = bytes.Repeat(data, r.Lines*LineBytes/len(data)+1)[:r.Lines*LineBytes]
			if data[0]%3 == 0 { // short data: the last lines fail
				r.Data = r.Data[:max(0, len(r.Data)-int(data[0]))]
			}
		} else if r.Op == MemRd {
			r.Dst = make([]byte, r.Lines*LineBytes)
		}
		checkRun(t, run, ref, r)
	})
}

// viewCores returns two cores with the same worker-major regions, whose
// aggregate views DoRun computes a chunk at a time: W=8 sign planes under
// the positional gate (with a nonzero Element0), W=3 planes with the
// worker gate's gate slabs, an INT8 sum region, and a BFP8 sum region of
// more than 64 lines (two exponent lines a worker), off page boundaries,
// with plain memory between them.
func viewCores(t testing.TB) (run, ref *Core, regs []Region) {
	t.Helper()
	wm8 := Region{Name: "wm8", Base: 64 * 3, Mode: Aggregate(lowbit.Ternary), Workers: 8, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate, Element0: 5}
	wm8.Size = wm8.DataBytes(70)
	wg := Region{Name: "wg", Base: wm8.End() + 64*7, Mode: Aggregate(lowbit.Ternary), Workers: 3, Layout: lowbit.WorkerMajor, Gate: lowbit.Gate{Kind: lowbit.GateWorker}}
	wg.Size = wg.DataBytes(40)
	i8 := Region{Name: "i8", Base: wg.End() + 64, Mode: Aggregate(lowbit.Int8), Workers: 3, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8}
	i8.Size = i8.DataBytes(45)
	bf := Region{Name: "bf", Base: i8.End() + 64*2, Mode: Aggregate(lowbit.BFP8), Workers: 2, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8}
	bf.Size = bf.DataBytes(130)
	regs = []Region{wm8, wg, i8, bf}
	var cs [2]*Core
	for i := range cs {
		c, err := NewCore(Config{Capacity: bf.End() + 64*5})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range regs {
			if _, err := c.Map(r); err != nil {
				t.Fatalf("map %s: %v", r.Name, err)
			}
		}
		cs[i] = c
	}
	return cs[0], cs[1], regs
}

// TestDoRunViewsMatchDo: worker-major aggregate views (sign planes, with
// the positional and the worker gate; INT8 and BFP8 sums) read as runs of
// every length and alignment, in every mode, between random writes,
// against Do a line at a time (whose aggregate is one line's VotePlanes,
// SumInt8 or SumBFP8 over that line's stored payloads).
func TestDoRunViewsMatchDo(t *testing.T) {
	run, ref, regs := viewCores(t)
	capLines := int(run.Capacity() / LineBytes)
	rng := rand.New(rand.NewPCG(5, 6))
	write := func(addr uint64, lines int) {
		r := Run{Op: MemWr, Addr: addr, Lines: lines, Tag: uint16(rng.Uint32()), Data: make([]byte, lines*LineBytes)}
		for j := range r.Data {
			r.Data[j] = byte(rng.Uint32())
		}
		if rng.IntN(4) == 0 { // BFP8 exponents in range, and some large ones
			for j := range r.Data {
				r.Data[j] = byte(int8(rng.IntN(40) - 20))
			}
		}
		checkRun(t, run, ref, r)
	}
	read := func(addr uint64, lines int) {
		checkRun(t, run, ref, Run{Op: MemRd, Addr: addr, Lines: lines, Tag: uint16(rng.Uint32()), Dst: bytes.Repeat([]byte{0x5a}, lines*LineBytes)})
	}
	write(0, capLines)
	modes := AllModes()
	for round := range 40 {
		for id := range regs {
			if rng.IntN(2) == 0 {
				m := modes[rng.IntN(len(modes))]
				if round%3 == 0 { // mostly the modes that aggregate
					m = regs[id].Mode
				}
				for _, c := range []*Core{run, ref} {
					if err := c.SetMode(RegionID(id), m, int64(round)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		g := regs[rng.IntN(len(regs))]
		view := g.Base + g.Size
		vl := int(g.ViewBytes() / LineBytes)
		switch rng.IntN(4) {
		case 0: // the whole view
			read(view, vl)
		case 1: // a piece of it, any alignment
			v := rng.IntN(vl)
			read(view+uint64(v)*LineBytes, 1+rng.IntN(vl-v))
		case 2: // across the region's end and its neighbours
			read(view+uint64(rng.IntN(vl))*LineBytes, rng.IntN(3*vl))
		default: // rewrite some of its payload lines
			l := rng.IntN(int(g.Size / LineBytes))
			write(g.Base+uint64(l)*LineBytes, 1+rng.IntN(int(g.Size/LineBytes)-l))
		}
	}
	read(0, capLines)
	st := run.Stats()
	for _, m := range []Mode{Aggregate(lowbit.Ternary), Aggregate(lowbit.Int8), Aggregate(lowbit.BFP8)} {
		if st.Modes[m].TransformedLines == 0 {
			t.Errorf("no %v aggregates read: %+v", m, st.Modes[m])
		}
	}
}

// FuzzDoRunViews: after a seeded write of every line and a mode write to
// each region from the input, any read or write run over viewCores'
// worker-major regions against Do a line at a time.
func FuzzDoRunViews(f *testing.F) {
	f.Add(uint8(MemRd), uint16(570), uint16(140), uint16(1), uint32(0x05040302), uint64(1))
	f.Add(uint8(MemRd), uint16(0), uint16(1800), uint16(65535), uint32(0), uint64(2))
	f.Fuzz(func(t *testing.T, op uint8, line, n, tag uint16, modes uint32, seed uint64) {
		run, ref, regs := viewCores(t)
		capLines := int(run.Capacity() / LineBytes)
		rng := rand.New(rand.NewPCG(seed, 1))
		all := Run{Op: MemWr, Lines: capLines, Data: make([]byte, capLines*LineBytes)}
		for i := range all.Data {
			all.Data[i] = byte(rng.Uint32())
		}
		checkRun(t, run, ref, all)
		for id := range regs {
			m := Mode(modes >> (8 * id) & 0xff % uint32(NumModes))
			for _, c := range []*Core{run, ref} {
				if err := c.SetMode(RegionID(id), m, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		r := Run{Op: Opcode(op%2 + 1), Addr: uint64(int(line)%(capLines+4)) * 64, Lines: int(n) % (capLines + 1), Tag: tag}
		if r.Op == MemWr {
			r.Data = make([]byte, r.Lines*LineBytes)
			for i := range r.Data {
				r.Data[i] = byte(rng.Uint32())
			}
		} else {
			r.Dst = make([]byte, r.Lines*LineBytes)
		}
		checkRun(t, run, ref, r)
		if r.Op == MemWr { // and read everything back through the views
			checkRun(t, run, ref, Run{Op: MemRd, Lines: capLines, Dst: make([]byte, capLines*LineBytes)})
		}
	})
}
