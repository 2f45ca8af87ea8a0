package timing_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// One stream with one request in flight: every read pays the LLC lookup
// (10 ns), the memory (200 ns) and one 466 ps gate interval; the low-bit
// run adds the 5-cycle, 2.5 ns pipeline to each.
func ExampleRunPair() {
	cfg := timing.DefaultConfig()
	cfg.Streams.Count, cfg.Streams.Outstanding, cfg.Streams.Passes = 1, 1, 1
	cfg.Streams.FootprintMiB = 1.0 / 1024 // 16 lines
	p, err := timing.RunPair(cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("identity:", p.Identity.RunTime)
	fmt.Println("low-bit: ", p.LowBit.RunTime)
	fmt.Printf("exposed %v = %.3f%%\n", p.Exposed, p.OverheadPct)
	// Output:
	// identity: 3.367456us
	// low-bit:  3.407456us
	// exposed 40ns = 1.188%
}

// Replay streams gradient buckets through the model: here two buckets of
// 4096 lines, the second ready 20 µs after the first, on the default
// 8-stream model. The first bucket's datapath cost disappears into the
// idle gap before the second is ready; the second exposes its 32 round
// trips x 2.5 ns plus a little queueing.
func ExampleReplay() {
	cfg := timing.DefaultConfig()
	buckets := []timing.Bucket{
		{Ready: 0, Lines: 4096},
		{Ready: 20 * sim.Microsecond, Lines: 4096},
	}
	p, err := timing.RunPair(cfg, timing.Replay{Buckets: buckets})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Identity.Lines, "lines; low-bit slower by", p.Exposed)
	// Output:
	// 8192 lines; low-bit slower by 84.361ns
}

// The projection device: one read on an idle system crosses the LLC
// (10 ns), one 256-byte request flit and the port (2 + 25 ns), waits for
// the DDR5 clock edge, pays tRCD + tCL + BL/2 (88 cycles of 417 ps), the
// front end (10 ns), one response flit and the port (2 + 25 ns).
func ExamplePresetConfig() {
	cfg, err := timing.PresetConfig("projection-pcie6-x16")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Streams.Count, cfg.Streams.Outstanding, cfg.Streams.Passes = 1, 1, 1
	cfg.Streams.FootprintMiB = 1.0 / 16384 // one line
	r, err := timing.Simulate(cfg, nil, timing.None)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Memory.Model, cfg.LinkModel(), r.RunTime)
	// Output:
	// dram cxl 110.809ns
}
