package timing

import (
	"testing"

	"github.com/neuronfabric/nfabric/timing/sim"
)

// oneLine is the ddr5 preset reduced to one stream reading n lines, one
// in flight, refresh off.
func oneLine(t *testing.T, n int) Config {
	cfg, err := PresetConfig(projection)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Streams.Count, cfg.Streams.Outstanding, cfg.Streams.Passes = 1, 1, 1
	cfg.Streams.FootprintMiB = float64(n*LineBytes) / (1 << 20)
	cfg.Device.Media.TREFINS = 0
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
	if want := sim.Time(110809); r.RunTime != want {
		t.Errorf("isolated read took %v, want %v", r.RunTime, want)
	}
	if r.Latency.Reads != 1 || r.Latency.MaxNS != 110.809 {
		t.Errorf("latency summary %+v", r.Latency)
	}
}

// A response queue of one entry lets one request inside the device at a
// time: the host sends the next read only when the previous one's DRS has
// left and the credit is back a port latency later. Each line costs its
// request flit (2 ns) and port (25 ns), tCL + BL/2 (48 cycles of 417 ps),
// the front end (10 ns), its DRS flit (2 ns) and the credit's port
// (25 ns), plus at most one clock of alignment; the 256 lines open 16
// rows (8 sub-channels x 2 rows of 16 lines), each adding tRCD (40
// cycles), and the first line its LLC lookup (10 ns). With 128 entries
// the run is far faster.
func TestDeviceResponseQueueBackPressure(t *testing.T) {
	cfg := oneLine(t, 256)
	cfg.Streams.Outstanding = 32
	cfg.Device.ResponseQueue = 1
	r, err := Simulate(cfg, nil, None)
	if err != nil {
		t.Fatal(err)
	}
	const ck = 417
	per := float64(r.RunTime) / 256
	lo := float64(2000+25000+48*ck+10000+2000+25000) + float64(16*40*ck+10000)/256
	if per < lo || per > lo+ck {
		t.Errorf("%.0f ps per line with one response entry, want %.0f .. %.0f", per, lo, lo+ck)
	}
	cfg.Device.ResponseQueue = 128
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
	cfg.Device.RequestQueue = 2
	r, err := Simulate(cfg, nil, None)
	if err != nil {
		t.Fatal(err)
	}
	if r.Detail.CreditStalls == 0 {
		t.Fatal("no credit stalls with 2 credits and 64 outstanding")
	}
	min := sim.Time(512/2) * (2000 + 2*25000)
	if r.RunTime < min {
		t.Errorf("run %v with 2 credits, below the credit-loop bound %v", r.RunTime, min)
	}
}
