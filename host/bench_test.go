package host

import (
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// BenchmarkBucket measures one bucket's round trip through the runtime:
// 8 workers encode 1M elements each, the lines are written, the aggregate
// is read and decoded. Melem/s counts gradient elements of one worker.
func BenchmarkBucket(b *testing.B) {
	const w, n = 8, 1 << 20
	g := lowbit.EdgeGradients(rand.New(rand.NewPCG(1, 1)), w, n)
	for _, l := range []lowbit.Layout{lowbit.WorkerMajor, lowbit.ElementMajor} {
		for _, m := range []cxl.Mode{cxl.GBinary, cxl.GTernary} {
			b.Run(l.String()+"/"+m.String(), func(b *testing.B) {
				dev, err := Open(Config{Workers: w, Layout: l})
				if err != nil {
					b.Fatal(err)
				}
				bk, err := dev.Map(BucketConfig{Name: "bench", Elements: n, Mode: m})
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]float32, n)
				b.ReportAllocs()
				for b.Loop() {
					if err := EncodeWorkers([]*Bucket{bk}, w, func(k, _ int) []float32 { return g[k] }, nil); err != nil {
						b.Fatal(err)
					}
					if err := bk.Write(); err != nil {
						b.Fatal(err)
					}
					if _, err := bk.Read(); err != nil {
						b.Fatal(err)
					}
					if err := bk.Decode(dst); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
			})
		}
	}
}
