package cxl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// BenchmarkRead measures the controller read path (Core, no lock) per mode
// and layout over a region of 4096 aggregate lines, reporting response
// lines per second.
func BenchmarkRead(b *testing.B) {
	const lines = 4096
	shapes := []struct {
		name string
		reg  Region
	}{
		{"packet-W8", Region{Workers: 8, Layout: lowbit.ElementMajor, Gate: lowbit.PaperGate}},
		{"planes-W8", Region{Workers: 8, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate}},
		{"planes-W64", Region{Workers: 64, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate}},
		{"int8-W8", Region{Workers: 8, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8}},
		{"bfp8-W8", Region{Workers: 8, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8}},
	}
	for _, sh := range shapes {
		reg := sh.reg
		reg.Size = reg.DataBytes(lines)
		c, err := NewCore(Config{Capacity: reg.End()})
		if err != nil {
			b.Fatal(err)
		}
		id, err := c.Map(reg)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for a := reg.Base; a < reg.Base+reg.Size; a += LineBytes { // every data line, slab after slab
			if _, err := c.Do(Write(0, a, randLine(rng))); err != nil {
				b.Fatal(err)
			}
		}
		for _, m := range AllModes() {
			if m.LowBit() && !reg.Aggregates(m) {
				continue
			}
			b.Run(fmt.Sprintf("%s/%v", sh.name, m), func(b *testing.B) {
				c.SetMode(id, m, 0)
				// Untransformed modes read the sign slab; low-bit modes
				// read the aggregate view (both lines worker-major).
				addrs := make([]uint64, 0, 2*lines)
				for l := range lines {
					if m.LowBit() {
						for p := range reg.RespLines() {
							addrs = append(addrs, reg.ViewAddr(l, p))
						}
					} else {
						addrs = append(addrs, reg.SignAddr(0, l))
					}
				}
				b.SetBytes(LineBytes)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := c.Do(Read(0, addrs[i])); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(addrs) {
						i = 0
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
			})
		}
	}
}

// BenchmarkWrite measures MemWr into a sparse device.
func BenchmarkWrite(b *testing.B) {
	c, _ := NewCore(Config{Capacity: 1 << 40})
	line := make([]byte, LineBytes)
	b.SetBytes(LineBytes)
	b.ReportAllocs()
	a := uint64(0)
	for b.Loop() {
		if _, err := c.Do(Write(0, a, line)); err != nil {
			b.Fatal(err)
		}
		a = (a + LineBytes) % (1 << 26)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkControllerRead is the same read through the mutex wrapper.
func BenchmarkControllerRead(b *testing.B) {
	ctl, _ := New(Config{Capacity: 1 << 20})
	ctl.WriteLine(0, 0, make([]byte, LineBytes))
	b.ReportAllocs()
	for b.Loop() {
		ctl.ReadLine(0, 0)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkDoRunView measures DoRun reading a worker-major aggregate view
// of 1024 aggregate lines as one run (2048 view lines), per shape and
// mode; bytes are the view lines read.
func BenchmarkDoRunView(b *testing.B) {
	const lines = 1024
	shapes := []struct {
		name string
		reg  Region
		mode Mode
	}{
		{"planes-W8/g-binary", Region{Workers: 8, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate}, Aggregate(lowbit.Binary)},
		{"planes-W8/g-ternary", Region{Workers: 8, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate}, Aggregate(lowbit.Ternary)},
		{"int8-W8/int8", Region{Workers: 8, Layout: lowbit.WorkerMajor, Sum: lowbit.Int8}, Aggregate(lowbit.Int8)},
		{"bfp8-W8/bfp8", Region{Workers: 8, Layout: lowbit.WorkerMajor, Sum: lowbit.BFP8}, Aggregate(lowbit.BFP8)},
	}
	for _, sh := range shapes {
		reg := sh.reg
		reg.Mode = sh.mode
		reg.Size = reg.DataBytes(lines)
		c, err := NewCore(Config{Capacity: reg.End()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Map(reg); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		data := make([]byte, reg.Size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if _, err := c.DoRun(Run{Op: MemWr, Addr: reg.Base, Lines: int(reg.Size / LineBytes), Data: data}, nil); err != nil {
			b.Fatal(err)
		}
		b.Run(sh.name, func(b *testing.B) {
			r := Run{Op: MemRd, Addr: reg.Base + reg.Size, Lines: 2 * lines, Dst: make([]byte, 2*lines*LineBytes)}
			var spans []Span
			b.SetBytes(int64(len(r.Dst)))
			b.ReportAllocs()
			for b.Loop() {
				if spans, err = c.DoRun(r, spans[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
