package timing

import "testing"

// oneLine is the ddr5 preset reduced to one stream reading n lines, one
// in flight, refresh off.
func oneLine(t *testing.T, n int) Config {
	cfg, err := PresetConfig(PresetDDR5)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Streams.Count, cfg.Streams.Outstanding, cfg.Streams.Passes = 1, 1, 1
	cfg.Streams.FootprintMiB = float64(n*LineBytes) / (1 << 20)
	cfg.Memory.DDR5.TREFINS = 0
	return cfg
}

// The first read of an idle system, by hand: LLC 10 ns; its M2S Req
// fills one 256-byte flit (2 ns at 128 GB/s) and crosses the port
// (25 ns): 37 ns. The channel activates on the next 417 ps clock edge
// (37.113 ns), reads tRCD = 40 cycles later and the data burst ends
// tCL + BL/2 = 48 cycles after that (73.809 ns); the front end adds
// 10 ns, the DRS takes one flit (2 ns) and the port 25 ns: 110.809 ns.
func TestDeviceIsolatedReadByHand(t *testing.T) {
	r, err := Simulate(oneLine(t, 1), nil, None)
	if err != nil {
		t.Fatal(err)
	}
	if want := Time(110809); r.RunTime != want {
		t.Errorf("isolated read took %v, want %v", r.RunTime, want)
	}
	if r.Latency.Reads != 1 || r.Latency.MaxNS != 110.809 {
		t.Errorf("latency summary %+v", r.Latency)
	}
}

// A response queue of one entry back-pressures the DRAM: each read
// issues only when the previous response has left, so lines complete
// one per (tCL + BL/2 + front end + flit) plus clock alignment, whatever
// the outstanding limit.
func TestDeviceResponseQueueBackPressure(t *testing.T) {
	cfg := oneLine(t, 256)
	cfg.Streams.Outstanding = 32
	cfg.Link.CXL.ResponseQueue = 1
	r, err := Simulate(cfg, nil, None)
	if err != nil {
		t.Fatal(err)
	}
	per := float64(r.RunTime) / 256
	lo := float64(48*ck4800 + 10000 + 2000)
	if per < lo || per > lo+float64(2*ck4800) {
		t.Errorf("%.0f ps per line with one response entry, want %.0f .. %.0f", per, lo, lo+float64(2*ck4800))
	}
	cfg.Link.CXL.ResponseQueue = 128
	free, err := Simulate(cfg, nil, None)
	if err != nil {
		t.Fatal(err)
	}
	if free.RunTime*2 > r.RunTime {
		t.Errorf("128 entries: %v, one entry: %v; want the single entry to be the bottleneck", free.RunTime, r.RunTime)
	}
}

// Request credits back-pressure the host: with 2 credits and a 25 ns
// port, a credit returns no sooner than a request's flit, port and the
// return port after it was taken, so at most 2 requests per ~52 ns reach
// the device.
func TestDeviceRequestCredits(t *testing.T) {
	cfg := oneLine(t, 512)
	cfg.Streams.Outstanding = 64
	cfg.Link.CXL.RequestCredits = 2
	r, err := Simulate(cfg, nil, None)
	if err != nil {
		t.Fatal(err)
	}
	if r.Detail.CreditStalls == 0 {
		t.Fatal("no credit stalls with 2 credits and 64 outstanding")
	}
	min := Time(512/2) * (2000 + 2*25000)
	if r.RunTime < min {
		t.Errorf("run %v with 2 credits, below the credit-loop bound %v", r.RunTime, min)
	}
}

// Flit packing, by hand: messages offered together share a flit; a
// message offered after a flit left waits for the next; a 64-byte DRS
// (18 quarter slots) spans two 68-byte flits of 16.
func TestFlitLinkPacking(t *testing.T) {
	x, err := CXLPreset(PresetPCIe5x16)
	if err != nil {
		t.Fatal(err)
	}
	l := MakeFlitLinkBuilder().WithConfig(x).Build("L")
	f := l.flitFS // 68 B / 63.015 GB/s = 1079.1 ps
	if f < 1079000 || f > 1079200 {
		t.Fatalf("68-byte flit %d fs, want about 1079100", f)
	}
	ceilPS := func(fs int64) Time { return Time((fs + 999) / 1000) }
	if got, want := l.Accept(0, 2), ceilPS(f); got != want {
		t.Errorf("first header: %v, want one flit %v", got, want)
	}
	if got, want := l.Accept(0, 2), ceilPS(f); got != want {
		t.Errorf("second header at the same time shares the flit: %v, want %v", got, want)
	}
	if got, want := l.Accept(1, 18), ceilPS(3*f); got != want {
		t.Errorf("DRS after the first flit left: %v, want end of flit 3 = %v", got, want)
	}
	if l.Flits != 2 {
		t.Errorf("%d flits sealed, want 2", l.Flits)
	}
	// Throughput: DRS messages back to back carry 16/18 of a flit each.
	x6, _ := CXLPreset(PresetPCIe6x16)
	if got, want := x6.LineGiBps(1), 60.0/18*64/2e-9/(1<<30); got < want*0.9999 || got > want*1.0001 {
		t.Errorf("pcie6-x16 line rate %.3f GiB/s, want %.3f", got, want)
	}
}
