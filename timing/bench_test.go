package timing

import (
	"syscall"
	"testing"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkFullLLCMiss runs the paper's anchor workload (8 streams x 2 MiB,
// 16 MiB active footprint against the 8 MiB LLC, two passes: 524288
// cache-line transactions per run) and reports simulated lines per second
// of wall time.
func BenchmarkFullLLCMiss(b *testing.B) {
	for _, mode := range []struct {
		name string
		w    Window
	}{{"identity", None}, {"lowbit", All}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := DefaultConfig()
			b.ReportAllocs()
			var lines int64
			cpu0 := cpuSeconds()
			for b.Loop() {
				r, err := Simulate(cfg, nil, mode.w)
				if err != nil {
					b.Fatal(err)
				}
				lines += r.Lines
			}
			b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(float64(lines)/cpu, "lines/cpu-s")
			}
		})
	}
}
