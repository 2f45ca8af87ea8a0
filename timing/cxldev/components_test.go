package cxldev

import (
	"math/big"
	"strings"
	"testing"
	"testing/quick"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/usage"
)

// roundTrain is the oracle for a back-to-back train of n lines through a
// gate of bw bytes/s: round(n * 64 B / bw) picoseconds, computed with exact
// rationals (independently of the gate's remainder arithmetic).
func roundTrain(n, bw int64) sim.Time {
	x := new(big.Rat).SetFrac(big.NewInt(n*lowbit.LineBytes*int64(sim.Second)), big.NewInt(bw))
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(x.Num(), x.Denom()) // floor for positive values
	return sim.Time(q.Int64())
}

// TestGateTrain: a train of n lines arriving at an idle gate ends at
// round(n * 64 B / bandwidth), for random bandwidths and n (quick check
// against exact rationals).
func TestGateTrain(t *testing.T) {
	f := func(bw uint32, n uint16, t0 uint32) bool {
		bps := int64(bw%(1<<20)+1) * 1024 // 1 KiB/s .. 1 GiB/s, steps of 1 KiB/s
		l := MakeGateBuilder().WithBandwidth(bps).Build("Device[0].Ctrl.Link")
		start := sim.Time(t0)
		var end sim.Time
		for range int(n) + 1 {
			end = l.Accept(start)
		}
		return end == start+roundTrain(int64(n)+1, bps)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Error(err)
	}
}

// TestPipelineAccept: latency k*cycle, one entry per initiation interval,
// interval capped at the depth.
func TestPipelineAccept(t *testing.T) {
	p := MakePipelineBuilder().Build("Device[0].Ctrl.Pipe")
	if got := p.Accept(1000); got != 3500 {
		t.Errorf("first line leaves at %v; want 3.5ns", got)
	}
	if got := p.Accept(1000); got != 4000 { // waits one 500 ps cycle
		t.Errorf("second line leaves at %v; want 4ns", got)
	}
	q := MakePipelineBuilder().WithStages(2).WithInitiationCycles(5).Build("Device[0].Ctrl.Pipe")
	q.Accept(0)
	if got := q.Accept(0); got != 2000 { // interval capped at 2 cycles
		t.Errorf("capped interval: second line leaves at %v; want 2ns", got)
	}
}

// TestFlitLinkBuilder: the builder starts from pcie6-x16 at the whole
// link, and With methods leave the receiver alone.
func TestFlitLinkBuilder(t *testing.T) {
	x, _ := LinkPreset("pcie6-x16")
	lb := MakeFlitLinkBuilder()
	// 256 B at 128 GB/s is 2 ns; half the link doubles it.
	if got := lb.Build("L").FlitTime(); got != 2000 {
		t.Errorf("default flit time %v, want 2 ns (pcie6-x16: 256 B at 128 GB/s)", got)
	}
	if got := lb.WithShare(0.5).Build("L").FlitTime(); got != 4000 {
		t.Errorf("half-share flit time %v, want 4 ns", got)
	}
	if got := lb.WithConfig(x).Build("L").FlitTime(); got != 2000 || lb.share != 1 {
		t.Errorf("WithConfig(pcie6-x16) flit time %v (share %g)", got, lb.share)
	}
}

// TestFlitLinkPacking, by hand on 68-byte flits (a 4-quarter header slot
// and 12 quarters of generic slots, 2 quarters a header): two headers
// offered together share the header slot of flit 1; a DRS offered after
// flit 1 left puts its header in flit 2's header slot and its 16 data
// quarters in flit 2's generic slots and a third of flit 3's; a request
// offered then rides in flit 3's empty header slot.
func TestFlitLinkPacking(t *testing.T) {
	x, err := LinkPreset("pcie5-x16")
	if err != nil {
		t.Fatal(err)
	}
	l := MakeFlitLinkBuilder().WithConfig(x).Build("L")
	f := l.flitFS // 68 B / 63.015 GB/s = 1079.1 ps
	if f < 1079000 || f > 1079200 {
		t.Fatalf("68-byte flit %d fs, want about 1079100", f)
	}
	ceilPS := func(fs int64) sim.Time { return sim.Time((fs + 999) / 1000) }
	if got, want := l.Accept(0, M2SReq), ceilPS(f); got != want {
		t.Errorf("first header: %v, want one flit %v", got, want)
	}
	if got, want := l.Accept(0, S2MNDR), ceilPS(f); got != want {
		t.Errorf("second header at the same time shares the flit: %v, want %v", got, want)
	}
	if got, want := l.Accept(1, S2MDRS), ceilPS(3*f); got != want {
		t.Errorf("DRS after the first flit left: %v, want end of flit 3 = %v", got, want)
	}
	if got, want := l.Accept(1, M2SReq), ceilPS(3*f); got != want {
		t.Errorf("header behind the DRS: %v, want flit 3's header slot = %v", got, want)
	}
	if l.Flits != 2 {
		t.Errorf("%d flits sealed, want 2", l.Flits)
	}
}

// TestLineRate: LineGiBps's closed form agrees with the link itself fed
// DRS messages back to back (an independent path through the packing
// rules) for every preset: 68-byte flits carry 3/4 of a line each (data
// only in the three generic slots), 256-byte flits 60/18 (a line is 16
// data quarters and a 2-quarter header).
func TestLineRate(t *testing.T) {
	for _, name := range LinkPresets() {
		x, _ := LinkPreset(name)
		l := MakeFlitLinkBuilder().WithConfig(x).Build("L")
		const n = 3000
		var end sim.Time
		for range n {
			end = l.Accept(0, S2MDRS)
		}
		sim := n * 64 / (float64(end) * 1e-12) / (1 << 30)
		if got := x.LineGiBps(1); got < sim*0.999 || got > sim*1.001 {
			t.Errorf("%s: closed form %.3f GiB/s, link fed back to back %.3f", name, got, sim)
		}
	}
	x5, _ := LinkPreset("pcie5-x8")
	if got, want := x5.LineGiBps(1), 0.75*64/(68/x5.RawBytesPerSec())/(1<<30); got < want*0.9999 || got > want*1.0001 {
		t.Errorf("pcie5-x8 line rate %.3f GiB/s, want 3/4 line a flit = %.3f", got, want)
	}
	x6, _ := LinkPreset("pcie6-x16")
	if got, want := x6.LineGiBps(1), 60.0/18*64/2e-9/(1<<30); got < want*0.9999 || got > want*1.0001 {
		t.Errorf("pcie6-x16 line rate %.3f GiB/s, want %.3f", got, want)
	}
}

func TestLinkPresets(t *testing.T) {
	for _, n := range LinkPresets() {
		x, err := LinkPreset(n)
		if err != nil || x.Validate() != nil {
			t.Errorf("%s: %v / %v", n, err, x.Validate())
		}
	}
	if _, err := LinkPreset("pcie7-x16"); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "pcie5-x8") {
		t.Errorf("unknown link preset: %v; want a usage error listing the names", err)
	}
}

// TestDeviceHeld: a device whose host never gets a credit keeps every
// request it was given and says where they are.
func TestDeviceHeld(t *testing.T) {
	eng := sim.NewEngine()
	d := MakeDeviceBuilder().WithEngine(eng).Build("Device[0].Ctrl")
	d.reqCredits.free = 0
	var h countHandler
	for i := range 5 {
		d.Submit(0, Request{Line: uint64(i), Owner: &h})
	}
	eng.Run()
	if got := d.Held(); h.n != 0 || !strings.Contains(got, "5 waiting for a request credit") {
		t.Errorf("held %q, %d completed; want 5 waiting for a credit", got, h.n)
	}
}

type countHandler struct{ n int }

func (c *countHandler) Handle(sim.Time, int64) { c.n++ }
