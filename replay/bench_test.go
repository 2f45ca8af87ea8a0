package replay

import (
	"testing"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/workload"
)

// BenchmarkGPT3FastForward replays a full GPT-3 step (about 11 billion
// lines, 32 MiB buckets, A100 schedule) through the fast-forward under
// each preset, calibration included (the goal under ddr5: under 60 s).
func BenchmarkGPT3FastForward(b *testing.B) {
	p, err := workload.LoadProfile("gpt3", 0)
	if err != nil {
		b.Fatal(err)
	}
	tl, err := p.Timeline(workload.Schedule{Accel: workload.A100})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := workload.Bucketize(tl, workload.BucketOptions{CapBytes: 32 << 20})
	if err != nil {
		b.Fatal(err)
	}
	bs := Buckets(tr)
	for _, preset := range timing.Presets() {
		b.Run(preset, func(b *testing.B) {
			cfg, err := timing.PresetConfig(preset)
			if err != nil {
				b.Fatal(err)
			}
			var lines int64
			for b.Loop() {
				c, err := NewCalibrator(cfg, LowBit)
				if err != nil {
					b.Fatal(err)
				}
				r, err := FastForward(c, bs, 0)
				if err != nil {
					b.Fatal(err)
				}
				lines = r.Lines
			}
			b.ReportMetric(float64(lines), "lines/op")
		})
	}
}
