package timing

import (
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
// write drain.
func TestEveryLineServed(t *testing.T) {
	seeds := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8}
	if testing.Short() {
		seeds = []uint64{0, 3, 7}
	}
	for _, preset := range DDR5Presets() {
		for _, channels := range []int{1, 2, 4, 8} {
			for _, seed := range seeds {
				for _, pattern := range []string{"read", "write-read"} {
					if pattern == "write-read" && (channels != 2 || seed > 1) {
						continue
					}
					name := fmt.Sprintf("%s/%dch/seed%d/%s", preset, channels, seed, pattern)
					t.Run(name, func(t *testing.T) {
						cfg := servedConfig(t, preset, channels, seed, pattern)
						want := int64(cfg.Streams.Count) * cfg.FootprintLines() * int64(cfg.Streams.Passes)
						if pattern == "write-read" {
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
					})
				}
			}
		}
	}
}

func servedConfig(t *testing.T, preset string, channels int, seed uint64, pattern string) Config {
	t.Helper()
	cfg, err := PresetConfig(PresetDDR5)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Memory.DDR5, err = DDR5Preset(preset); err != nil {
		t.Fatal(err)
	}
	cfg.Memory.DDR5.Channels, cfg.Memory.DDR5.RefreshSeed = channels, seed
	cfg.Streams.Outstanding, cfg.Streams.FootprintMiB, cfg.Streams.Passes, cfg.Streams.Pattern = 64, 0.25, 1, pattern
	cfg.LLC.SizeMiB = 1
	return cfg
}

// TestStalledRunFails: a run that stops with lines still in the model is
// an error naming where they are, never a short result. The stall is made
// by hand: the device starts with no request credit and none on its way
// back, so the host can never send (a lost wake-up by construction).
func TestStalledRunFails(t *testing.T) {
	cfg := servedConfig(t, PresetDDR5_4800, 2, 0, "read")
	src, err := Sweep{}.Sources(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := NewSystem(cfg, src, None)
	if err != nil {
		t.Fatal(err)
	}
	sys.Devices()[0].credits = 0
	r, err := sys.Run()
	if err == nil {
		t.Fatalf("a run whose host never gets a credit returned %+v and no error", r)
	}
	for _, want := range []string{"0 of 512 issued lines served", "Host[0].Stream[0] completed 0 of 64 issued", "512 waiting for a request credit"} {
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
	cfg := servedConfig(t, PresetDDR5_4800, 8, 0, "read")
	cfg.Streams.Outstanding, cfg.Memory.DDR5.RefreshPhases = 16, 3
	tr, err := NewTracer(0, Microsecond, 1000)
	if err != nil {
		t.Fatal(err)
	}
	p, err := RunTracedPair(cfg, nil, All, tr)
	if err != nil {
		t.Fatal(err)
	}
	one := cfg
	one.Memory.DDR5.RefreshSeed = 1
	want, err := Simulate(one, nil, All)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Result == nil || tr.Result.RunTime != want.RunTime || tr.Result.Events != want.Events {
		t.Errorf("traced run %+v; want schedule 1's low-bit run (%v, %d events)", tr.Result, want.RunTime, want.Events)
	}
	if !strings.Contains(tr.Run, "refresh schedule 1 of 3") || len(p.PhaseExposed) != 3 {
		t.Errorf("trace names %q (pair of %d schedules); want it to say schedule 1 of 3", tr.Run, len(p.PhaseExposed))
	}
	cfg.Memory.DDR5.RefreshPhases = 0
	tr, _ = NewTracer(0, Microsecond, 1000)
	if p, err = RunTracedPair(cfg, nil, All, tr); err != nil {
		t.Fatal(err)
	}
	if tr.Result == nil || tr.Result.RunTime != p.LowBit.RunTime || tr.Run != "the pair's low-bit run" {
		t.Errorf("single pair: trace holds %q %+v; want the pair's low-bit run (%v)", tr.Run, tr.Result, p.LowBit.RunTime)
	}
}
