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
		for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Ternary)} {
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

// BenchmarkTransact is the service's device batch in process: 4096 lines
// of W = 8 sign packets (256 KiB) written into a G-Binary element-major
// region and its aggregate read back, one Step a line through Transact
// and one run an op through TransactRuns. Bytes are payload bytes both
// ways.
func BenchmarkTransact(b *testing.B) {
	const lines = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, lines*cxl.LineBytes)
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	region := cxl.Region{Name: "bench", Size: lines * cxl.LineBytes, Workers: 8, Layout: lowbit.ElementMajor, Mode: cxl.Aggregate(lowbit.Binary)}
	open := func(b *testing.B) *Device {
		dev, err := Open(Config{Workers: 8, Capacity: region.End()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dev.MapRegion(region); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(2 * lines * cxl.LineBytes)
		return dev
	}
	b.Run("lines", func(b *testing.B) {
		dev := open(b)
		writes := make([]Step, lines)
		reads := make([]Step, lines)
		for l := range lines {
			writes[l].Req = cxl.Write(uint16(l), uint64(l)*cxl.LineBytes, payload[l*cxl.LineBytes:(l+1)*cxl.LineBytes])
			reads[l].Req = cxl.Read(uint16(l), uint64(l)*cxl.LineBytes)
		}
		res := make([]Outcome, lines)
		out := make([]byte, 0, lines*cxl.LineBytes)
		for b.Loop() {
			if _, f := dev.Transact(writes, res); f > 0 {
				b.Fatal("failed writes")
			}
			if _, f := dev.Transact(reads, res); f > 0 {
				b.Fatal("failed reads")
			}
			out = out[:0]
			for i := range res {
				out = append(out, res[i].Resp.Data[:]...)
			}
		}
	})
	b.Run("runs", func(b *testing.B) {
		dev := open(b)
		out := make([]byte, lines*cxl.LineBytes)
		runs := []Run{
			{Run: cxl.Run{Op: cxl.MemWr, Lines: lines, Data: payload}},
			{Run: cxl.Run{Op: cxl.MemRd, Lines: lines, Dst: out}},
		}
		res := make([]RunOutcome, len(runs))
		for b.Loop() {
			if _, f := dev.TransactRuns(runs, res); f > 0 {
				b.Fatal("failed transactions")
			}
		}
	})
}
