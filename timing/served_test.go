package timing

import (
	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/timing/sim"

	"fmt"
	"strings"
	"testing"
)

// TestEveryLineServed: a run serves every line its workload asks for.
// The oracle is the workload's own count, W x footprint lines x passes
// (twice that for write-read), against the lines the streams completed,
// over every DDR5 preset, 1, 2, 4 and 8 sub-channels, the periodic refresh
// schedule and dithered ones. The load is the one that starved all but
// sub-channel 0 when the device dispatched a released request's channel
// (8 streams x 64 outstanding fill one sub-channel's ingress with every
// credit); the write-read pattern at 2 sub-channels adds writebacks and
// write drain. Every device preset runs too, on its own media, stages and
// queues.
func TestEveryLineServed(t *testing.T) {
	for _, dev := range cxldev.Names() {
		for _, pattern := range []string{"read", "write-read"} {
			t.Run(dev+"/"+pattern, func(t *testing.T) {
				cfg, err := PresetConfig(dev)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Streams.Outstanding, cfg.Streams.FootprintMiB, cfg.Streams.Passes, cfg.Streams.Pattern = 64, 0.25, 1, pattern
				cfg.LLC.SizeMiB = 1
				checkServed(t, cfg)
			})
		}
	}
	seeds := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8}
	if testing.Short() {
		seeds = []uint64{0, 3, 7}
	}
	for _, preset := range dram.Presets() {
		for _, channels := range []int{1, 2, 4, 8} {
			for _, seed := range seeds {
				for _, pattern := range []string{"read", "write-read"} {
					if pattern == "write-read" && (channels != 2 || seed > 1) {
						continue
					}
					name := fmt.Sprintf("%s/%dch/seed%d/%s", preset, channels, seed, pattern)
					t.Run(name, func(t *testing.T) {
						checkServed(t, servedConfig(t, preset, channels, seed, pattern))
					})
				}
			}
		}
	}
}

// checkServed runs cfg and checks that it served every line of its
// workload and every controller read reached the DRAM.
func checkServed(t *testing.T, cfg Config) {
	t.Helper()
	want := int64(cfg.Streams.Count) * cfg.FootprintLines() * int64(cfg.Streams.Passes)
	if cfg.Streams.Pattern == "write-read" {
		want *= 2
	}
	r, err := Simulate(cfg, nil, All)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != want {
		t.Fatalf("served %d lines; the workload asked for %d", r.Lines, want)
	}
	if r.ControllerReads != r.Detail.DRAMReads {
		t.Errorf("%d controller reads but %d DRAM reads", r.ControllerReads, r.Detail.DRAMReads)
	}
}

func servedConfig(t *testing.T, preset string, channels int, seed uint64, pattern string) Config {
	t.Helper()
	cfg, err := PresetConfig(projection)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Device.Media, err = dram.Preset(preset); err != nil {
		t.Fatal(err)
	}
	cfg.Device.Media.Channels, cfg.Device.Media.RefreshSeed = channels, seed
	cfg.Streams.Outstanding, cfg.Streams.FootprintMiB, cfg.Streams.Passes, cfg.Streams.Pattern = 64, 0.25, 1, pattern
	cfg.LLC.SizeMiB = 1
	return cfg
}

// TestStalledRunFails: a run that stops with lines still in the model is
// an error naming where they are, never a short result. The stall is made
// by hand: the engine runs without the streams' first events, so no
// stream ever issues (every line unserved); a device's own report of
// what it holds is tested in cxldev (TestDeviceHeld).
func TestStalledRunFails(t *testing.T) {
	cfg := servedConfig(t, "ddr5-4800", 2, 0, "read")
	src, err := Sweep{}.Sources(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := NewSystem(cfg, src, None)
	if err != nil {
		t.Fatal(err)
	}
	sys.eng.Run()
	err = sys.unserved()
	if err == nil {
		t.Fatal("a run whose streams never issued reported no unserved lines")
	}
	for _, want := range []string{"0 of 0 issued lines served", "Host[0].Stream[0] completed 0 of 0 issued (source exhausted: false)", "6 more streams unfinished"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestTracedRunIsNamed: the trace of a pair says which run it holds, and
// that run is the one it says. Under the mean over refresh schedules the
// traced run is schedule 1's low-bit run, checked against a separate
// Simulate of that schedule; a single pair's trace is its own low-bit run.
func TestTracedRunIsNamed(t *testing.T) {
	cfg := servedConfig(t, "ddr5-4800", 8, 0, "read")
	cfg.Streams.Outstanding, cfg.Memory.RefreshPhases = 16, 3
	tr, err := sim.NewTracer(0, sim.Microsecond, 1000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := RunTracedPair(cfg, nil, All, tr)
	if err != nil {
		t.Fatal(err)
	}
	one := cfg
	one.Device.Media.RefreshSeed = 1
	want, err := Simulate(one, nil, All)
	if err != nil {
		t.Fatal(err)
	}
	if p.Traced == nil || p.Traced.RunTime != want.RunTime || p.Traced.Events != want.Events {
		t.Errorf("traced run %+v; want schedule 1's low-bit run (%v, %d events)", p.Traced, want.RunTime, want.Events)
	}
	if !strings.Contains(tr.Run, "refresh schedule 1 of 3") || len(p.PhaseExposed) != 3 {
		t.Errorf("trace names %q (pair of %d schedules); want it to say schedule 1 of 3", tr.Run, len(p.PhaseExposed))
	}
	cfg.Memory.RefreshPhases = 0
	tr, _ = sim.NewTracer(0, sim.Microsecond, 1000)
	if p, err = RunTracedPair(cfg, nil, All, tr); err != nil {
		t.Fatal(err)
	}
	if p.Traced != nil || tr.Run != "the pair's low-bit run" {
		t.Errorf("single pair: trace holds %q (traced %+v); want the pair's low-bit run", tr.Run, p.Traced)
	}
}

// projection is the device preset the detailed-model tests run on: the
// PCIe 6.0 x16 point with eight DDR5-4800 sub-channels.
const projection = "projection-pcie6-x16"
