package akita

import (
	"syscall"
	"testing"

	"github.com/neuronfabric/nfabric/timing"
	tsim "github.com/neuronfabric/nfabric/timing/sim"
)

// shared configurations: the closed-form cases and small versions of the
// Table 4 regimes.
type namedConfig struct {
	name string
	cfg  timing.Config
}

func shared() []namedConfig {
	base := timing.DefaultConfig()
	base.Streams.FootprintMiB = 0.25
	base.LLC.SizeMiB = 1
	var out []namedConfig
	add := func(name string, c timing.Config) { out = append(out, namedConfig{name, c}) }
	c := base
	c.Streams.Count, c.Streams.Outstanding = 1, 1
	add("single outstanding", c)
	add("anchor (2x LLC)", base)
	c = base
	c.Streams.Count = 2
	add("fits LLC", c)
	c = base
	c.Link.Share = 0.25
	add("congested", c)
	c.Controller.Stacks = 4
	add("congested, 4 stacks", c)
	c = base
	c.Memory.LatencyNS = 50
	add("saturated, pipeline-rate bound", c)
	c = base
	c.Controller.Stages = 20
	c.Link.BandwidthGiBps = 512
	add("20 cycles, 512 GiB/s", c)
	return out
}

// TestAgreement: timing and the Akita version agree on shared
// configurations. Where no two lines ever meet a server at the same
// instant (one stream, one request in flight) the run times agree to the
// rounding budget: timing rounds each train that starts at an idle gate to
// the nearest picosecond (at most 0.5 ps per controller read) and Akita
// keeps float64 seconds. Elsewhere Akita breaks same-time ties by heap
// position, not scheduling order, so lines that reach a gate together may
// be served in another order; run times then agree to 2e-4 (relative) and
// the exposed overhead to 0.02 percentage points. LLC hits always agree.
func TestAgreement(t *testing.T) {
	for _, nc := range shared() {
		name, c := nc.name, nc.cfg
		var ovh [2]float64
		var runs [2][2]tsim.Time
		for i, low := range []bool{false, true} {
			w := timing.None
			if low {
				w = timing.All
			}
			ours, err := timing.Simulate(c, nil, w)
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(c, low)
			if err != nil {
				t.Fatal(err)
			}
			theirs, hits, err := m.Run()
			if err != nil {
				t.Fatal(err)
			}
			runs[i] = [2]tsim.Time{ours.RunTime, theirs}
			if hits != ours.Hits {
				t.Errorf("%s low-bit=%v: LLC hits timing %d, akita %d", name, low, ours.Hits, hits)
			}
			diff := float64(ours.RunTime - theirs)
			if c.Streams.Count == 1 && c.Streams.Outstanding == 1 {
				if budget := 0.5*float64(ours.ControllerReads) + 2; diff > budget || diff < -budget {
					t.Errorf("%s low-bit=%v: timing %v, akita %v: |diff| above %.1f ps", name, low, ours.RunTime, theirs, budget)
				}
			} else if rel := diff / float64(ours.RunTime); rel > 2e-4 || rel < -2e-4 {
				t.Errorf("%s low-bit=%v: timing %v, akita %v: relative difference %.2g", name, low, ours.RunTime, theirs, rel)
			}
		}
		for j := range 2 {
			ovh[j] = 100 * float64(runs[1][j]-runs[0][j]) / float64(runs[0][j])
		}
		if d := ovh[0] - ovh[1]; d > 0.02 || d < -0.02 {
			t.Errorf("%s: overhead timing %.4f%%, akita %.4f%%", name, ovh[0], ovh[1])
		}
		t.Logf("%-32s identity %v vs %v, low-bit %v vs %v, overhead %.4f%% vs %.4f%%", name, runs[0][0], runs[0][1], runs[1][0], runs[1][1], ovh[0], ovh[1])
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// report adds lines per second of wall time and of process CPU time (the
// fair figure on a shared machine).
func report(b *testing.B, lines int64, cpu0 float64) {
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(float64(lines)/cpu, "lines/cpu-s")
	}
}

// BenchmarkFullLLCMiss compares the two on the paper's anchor (8 streams x
// 2 MiB, 16 MiB against 8 MiB, two passes: 524288 lines per run).
func BenchmarkFullLLCMiss(b *testing.B) {
	cfg := timing.DefaultConfig()
	b.Run("engine=timing", func(b *testing.B) {
		b.ReportAllocs()
		var lines int64
		cpu0 := cpuSeconds()
		for b.Loop() {
			r, err := timing.Simulate(cfg, nil, timing.All)
			if err != nil {
				b.Fatal(err)
			}
			lines += r.Lines
		}
		report(b, lines, cpu0)
	})
	b.Run("engine=akita", func(b *testing.B) {
		b.ReportAllocs()
		var lines int64
		cpu0 := cpuSeconds()
		for b.Loop() {
			m, err := New(cfg, true)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := m.Run(); err != nil {
				b.Fatal(err)
			}
			lines += int64(cfg.Streams.Count) * cfg.FootprintLines() * int64(cfg.Streams.Passes)
		}
		report(b, lines, cpu0)
	})
}
