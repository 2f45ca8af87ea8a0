package dram

import (
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// colRec is one column command a test channel reported.
type colRec struct {
	a          Access
	issue, end sim.Time
}

// testSink records column commands.
type testSink struct {
	cols []colRec
}

func (s *testSink) ColumnIssued(a Access, issue, end sim.Time) {
	s.cols = append(s.cols, colRec{a, issue, end})
}

// quietDDR5 is ddr5-4800 without refresh (tREFI 0) unless a test turns
// it on: tCK = 417 ps; tRCD = tCL = tRP = 40 cycles, BL/2 = 8,
// tCCD_S = tRRD_S = 8, tCCD_L = tRRD_L = 12 (5 ns), tCWL = 38,
// tWTR_L = 24 (10 ns), tRFC = 708 (295 ns), tREFI = 9353 (3.9 us).
func quietDDR5(t *testing.T) Spec {
	d, err := Preset("ddr5-4800")
	if err != nil {
		t.Fatal(err)
	}
	d.TREFINS = 0
	return d
}

const ck4800 = sim.Time(417)

func runChannel(t *testing.T, d Spec, reqs []Access, at []sim.Time) *testSink {
	t.Helper()
	eng := sim.NewEngine()
	sink := &testSink{}
	ch := MakeBuilder().WithConfig(d).WithScheduler(eng).WithSink(sink).Build("Ch[0]")
	for i := range reqs {
		i := i
		eng.Schedule(at[i], sim.HandlerFunc(func(now sim.Time, _ int64) { ch.Push(now, reqs[i]) }), 0)
	}
	eng.Run()
	if len(sink.cols) != len(reqs) {
		t.Fatalf("%d column commands for %d requests", len(sink.cols), len(reqs))
	}
	return sink
}

func TestDDR5CycleCounts(t *testing.T) {
	d := quietDDR5(t)
	tm := makeConstraints(d)
	for _, c := range []struct {
		name string
		got  sim.Time
		want int64
	}{{"tCK", tm.ck, 1}, {"tRCD", tm.rcd, 40}, {"tCL", tm.cl, 40}, {"tRP", tm.rp, 40}, {"tCWL", tm.cwl, 38},
		{"burst", tm.burst, 8}, {"tCCD_S", tm.ccds, 8}, {"tCCD_L", tm.ccdl, 12}, {"tRRD_L", tm.rrdl, 12},
		{"tFAW", tm.faw, 32}, {"tWTR_L", tm.wtrl, 24}, {"tRFC", tm.rfc, 708}, {"tRAS", tm.ras, 77}} {
		want := sim.Time(c.want) * ck4800
		if c.name == "tCK" {
			want = ck4800
		}
		if c.got != want {
			t.Errorf("%s = %d ps, want %d cycles = %d ps", c.name, c.got, c.want, want)
		}
	}
}

// An isolated row-miss read costs tRCD + tCL + burst from its ACT.
func TestDDR5IsolatedRowMiss(t *testing.T) {
	s := runChannel(t, quietDDR5(t), []Access{{Row: 7}}, []sim.Time{0})
	if got, want := s.cols[0].issue, 40*ck4800; got != want {
		t.Errorf("RD at %d, want tRCD = %d", got, want)
	}
	if got, want := s.cols[0].end, (40+40+8)*ck4800; got != want {
		t.Errorf("data end %d, want tRCD+tCL+BL/2 = %d", got, want)
	}
}

// Row hits stream one burst per max(burst, tCCD): tCCD_L within a bank
// group, tCCD_S (= the burst) across groups.
func TestDDR5RowHitStreaming(t *testing.T) {
	for _, c := range []struct {
		name    string
		groups  []int32
		spacing sim.Time
	}{{"same group", []int32{0, 0, 0, 0, 0, 0}, 12}, {"alternating groups", []int32{0, 1, 0, 1, 0, 1}, 8}} {
		t.Run(c.name, func(t *testing.T) {
			var reqs []Access
			var at []sim.Time
			// Open both rows first, then queue the hits together.
			reqs = append(reqs, Access{Group: 0, Row: 3}, Access{Group: 1, Row: 3})
			at = append(at, 0, 0)
			for _, g := range c.groups {
				reqs = append(reqs, Access{Group: g, Row: 3})
				at = append(at, 200*ck4800)
			}
			s := runChannel(t, quietDDR5(t), reqs, at)
			for i := 3; i < len(s.cols); i++ {
				if got := s.cols[i].issue - s.cols[i-1].issue; got != c.spacing*ck4800 {
					t.Errorf("RD %d - RD %d = %d ps, want %d cycles", i, i-1, got, c.spacing)
				}
			}
		})
	}
}

// Activations: four per tFAW window, tRRD_S apart across bank groups and
// tRRD_L apart within one.
func TestDDR5ActivationLimits(t *testing.T) {
	d := quietDDR5(t)
	d.TFAWNS = 40 // 96 cycles: binding over 4 x tRRD_S = 32
	var reqs []Access
	var at []sim.Time
	for g := int32(0); g < 6; g++ {
		reqs = append(reqs, Access{Group: g, Row: 1})
		at = append(at, 0)
	}
	s := runChannel(t, d, reqs, at)
	// RD i issues tRCD after ACT i; ACTs at 0, 8, 16, 24, then 96, 104.
	want := []sim.Time{0, 8, 16, 24, 96, 104}
	for i, c := range s.cols {
		if got := c.issue - 40*ck4800; got != want[i]*ck4800 {
			t.Errorf("ACT %d at %d ps, want %d cycles", i, got, want[i])
		}
	}
	// Same bank group, different banks: tRRD_L = 12 cycles.
	s = runChannel(t, quietDDR5(t), []Access{{Bank: 0, Row: 1}, {Bank: 1, Row: 1}, {Bank: 2, Row: 1}}, []sim.Time{0, 0, 0})
	for i := 1; i < len(s.cols); i++ {
		if got := s.cols[i].issue - s.cols[i-1].issue; got != 12*ck4800 {
			t.Errorf("same-group ACT spacing %d ps, want tRRD_L = 12 cycles", got)
		}
	}
}

// A refresh blocks the rank for tRFC: a read arriving when refresh falls
// due activates tRFC after the REF; the channel refreshes once per tREFI.
func TestDDR5Refresh(t *testing.T) {
	d := quietDDR5(t)
	d.TREFINS = 3900 // 9353 cycles
	refi := 9353 * ck4800
	s := runChannel(t, d, []Access{{Row: 1}}, []sim.Time{refi})
	if got, want := s.cols[0].issue, refi+(708+40)*ck4800; got != want {
		t.Errorf("RD at %d, want REF at tREFI + tRFC + tRCD = %d", got, want)
	}
	eng := sim.NewEngine()
	sink := &testSink{}
	ch := MakeBuilder().WithConfig(d).WithScheduler(eng).WithSink(sink).Build("Ch[0]")
	eng.Schedule(10*refi+refi/2, sim.HandlerFunc(func(now sim.Time, _ int64) { ch.Push(now, Access{Row: 2}) }), 0)
	eng.Run()
	if ch.Refreshes != 10 {
		t.Errorf("%d refreshes by 10.5 tREFI, want 10", ch.Refreshes)
	}
	if got, want := sink.cols[0].issue, ch.alignUp(10*refi+refi/2)+40*ck4800; got != want {
		t.Errorf("read between refreshes at %d, want no refresh stall (%d)", got, want)
	}
}

// Write-to-read turnaround within a bank group: RD >= WR + tCWL + BL/2 +
// tWTR_L; read-to-write: WR >= RD + tCL + BL/2 + 2 - tCWL.
func TestDDR5Turnaround(t *testing.T) {
	d := quietDDR5(t)
	d.WriteHigh, d.WriteLow = 1, 0 // serve the write as soon as it is queued
	s := runChannel(t, d, []Access{{Write: true, Row: 1}, {Row: 1}}, []sim.Time{0, 0})
	if got, want := s.cols[1].issue-s.cols[0].issue, (38+8+24)*ck4800; got != want {
		t.Errorf("WR->RD %d ps, want %d", got, want)
	}
	d = quietDDR5(t)
	s = runChannel(t, d, []Access{{Row: 1}, {Write: true, Row: 1}}, []sim.Time{0, 100 * ck4800})
	if got, want := s.cols[1].issue-s.cols[0].issue, (40+8+2-38)*ck4800; got > want || s.cols[1].issue < 100*ck4800 {
		t.Logf("RD->WR %d ps (bound %d)", got, want)
	}
	if got, want := s.cols[1].issue, max(100*ck4800, s.cols[0].issue+(40+8+2-38)*ck4800); got < want {
		t.Errorf("WR at %d before the read-to-write turnaround %d", got, want)
	}
}

// Open page serves a younger row hit before an older conflict (FR-FCFS);
// closed page precharges after every access.
func TestDDR5PagePolicies(t *testing.T) {
	reqs := []Access{{Row: 1}, {Row: 2}, {Row: 1}}
	at := []sim.Time{0, 1, 2}
	s := runChannel(t, quietDDR5(t), reqs, at)
	if s.cols[1].a.Row != 1 || s.cols[2].a.Row != 2 {
		t.Errorf("open page order rows %d %d %d, want 1 1 2 (hit first)", s.cols[0].a.Row, s.cols[1].a.Row, s.cols[2].a.Row)
	}
	d := quietDDR5(t)
	d.PagePolicy = "closed"
	s = runChannel(t, d, []Access{{Row: 1}, {Row: 1}}, []sim.Time{0, 0})
	// RDA then ACT after tRTP + tRP, RD tRCD later; tRC = tRAS + tRP
	// (77 + 40) from the first ACT binds first.
	if got, want := s.cols[1].issue, (77+40+40)*ck4800; got != want {
		t.Errorf("closed page second RD at %d, want tRC + tRCD = %d", got, want)
	}
}

func TestMapperFields(t *testing.T) {
	d := quietDDR5(t) // ro:ra:ba:bg:co:ch; 8 channels, 16 columns, 8 groups, 4 banks
	d.BankHash = BankHashNone
	m := MakeBuilder().WithConfig(d).Mapper()
	for _, c := range []struct {
		line        uint64
		ch          int
		group, bank int32
		row         int64
	}{{0, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {8, 0, 0, 0, 0}, {8 * 16, 0, 1, 0, 0}, {8 * 16 * 8, 0, 0, 1, 0},
		{8 * 16 * 8 * 4, 0, 0, 0, 1}, {8*16*8*4*3 + 8*16*5 + 7, 7, 5, 0, 3}} {
		ch, a := m.Map(c.line)
		if ch != c.ch || a.Group != c.group || a.Bank != c.bank || a.Row != c.row {
			t.Errorf("line %d: ch %d group %d bank %d row %d, want %d %d %d %d", c.line, ch, a.Group, a.Bank, a.Row, c.ch, c.group, c.bank, c.row)
		}
	}
}

// TestMapperXOR checks bank_hash xor on hand-computed lines: the bank
// address x = group<<2 | bank (5 bits) is XORed with the row folded into
// 5-bit chunks.
func TestMapperXOR(t *testing.T) {
	d := quietDDR5(t)
	d.BankHash = BankHashXOR
	m := MakeBuilder().WithConfig(d).Mapper()
	const rowLines = 8 * 16 * 8 * 4 // lines per row number (all channels, columns, banks)
	for _, c := range []struct {
		line        uint64
		group, bank int32
		row         int64
	}{
		{0, 0, 0, 0},
		{rowLines, 0, 1, 1},                  // x = 0 ^ 1
		{5 * rowLines, 1, 1, 5},              // x = 0 ^ 0b00101
		{33 * rowLines, 0, 0, 33},            // fold(33) = 1 ^ 1 = 0
		{3*rowLines + 8*16*(2+8*1), 2, 2, 3}, // group 2 bank 1: x = 9 ^ 3 = 10
	} {
		ch, a := m.Map(c.line)
		if ch != 0 || a.Group != c.group || a.Bank != c.bank || a.Row != c.row {
			t.Errorf("line %d: ch %d group %d bank %d row %d, want 0 %d %d %d", c.line, ch, a.Group, a.Bank, a.Row, c.group, c.bank, c.row)
		}
	}
	// Within one row number the hash permutes the 32 banks, so no two
	// lines share a location; and the eight 2 MiB regions of Table 4's
	// streams start in eight different banks.
	seen := map[[4]int64]bool{}
	for line := uint64(0); line < 4*rowLines; line++ {
		ch, a := m.Map(line)
		k := [4]int64{int64(ch), int64(a.Group)<<8 | int64(a.Bank), a.Row, int64(line % (8 * 16) / 8)}
		if seen[k] {
			t.Fatalf("line %d maps onto an earlier line's location %v", line, k)
		}
		seen[k] = true
	}
	banks := map[int32]bool{}
	for s := uint64(0); s < 8; s++ {
		_, a := m.Map(s * (2 << 20) / lowbit.LineBytes)
		banks[a.Group<<2|a.Bank] = true
	}
	if len(banks) != 8 {
		t.Errorf("the eight 2 MiB regions start in %d distinct banks, want 8", len(banks))
	}
}

// TestBuildersDefaultsAndCopies: the builder starts from ddr5-4800, its
// With methods leave the receiver alone, and a channel without a
// scheduler or sink, or with a refresh slot outside [0, n), is refused.
func TestBuildersDefaultsAndCopies(t *testing.T) {
	d, _ := Preset("ddr5-4800")
	b := MakeBuilder()
	if b.Config() != d {
		t.Errorf("DDR5 builder default %+v, want the ddr5-4800 preset", b.Config())
	}
	d64, _ := Preset("ddr5-6400")
	if b.WithConfig(d64); b.Config() != d {
		t.Error("WithConfig changed its receiver")
	}
	eng, sink := sim.NewEngine(), &testSink{}
	for _, c := range []struct {
		name string
		b    Builder
	}{
		{"no scheduler", b.WithSink(sink)},
		{"no sink", b.WithScheduler(eng)},
		{"slot 2 of 2", b.WithScheduler(eng).WithSink(sink).WithRefreshSlot(2, 2)},
		{"slot 0 of 0", b.WithScheduler(eng).WithSink(sink).WithRefreshSlot(0, 0)},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Build did not refuse", c.name)
				}
			}()
			c.b.Build("Ch[0]")
		}()
	}
}
