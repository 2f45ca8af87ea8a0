package timing

import "testing"

// BenchmarkFullLLCMissDDR5 is BenchmarkFullLLCMiss under the ddr5 preset.
func BenchmarkFullLLCMissDDR5(b *testing.B) {
	for _, mode := range []struct {
		name string
		w    Window
	}{{"identity", None}, {"lowbit", All}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg, _ := PresetConfig(projection)
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
