package serve_test

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
)

// cpuClock measures the process's CPU time (user + system, all threads)
// over a benchmark: on a loaded machine wall time mostly measures the
// scheduler, and a multi-threaded client-server pair gets more of it than
// a single-threaded in-process loop. Client and server run in the test
// process, so the service's CPU time is both sides'.
type cpuClock struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

// report adds cpu-us/op and, when lines > 0, lines per CPU second.
func (c cpuClock) report(b *testing.B, lines int) {
	cpu := cpuNow() - c.start
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	if lines > 0 {
		b.ReportMetric(float64(lines*b.N)/cpu.Seconds(), "lines/cpu-s")
	}
}

// benchLines is one batch: 4096 lines of W = 8 sign packets (256 KiB,
// 262144 elements).
const benchLines = 4096

// BenchmarkWriteAggregate writes a batch of W = 8 packets into a G-Binary
// region and reads the aggregate back (one batch each way), through the
// service over a Unix socket and in process with cxl.Controller.DoBatch:
// the difference is the cost of the boundary. Bytes are payload bytes both
// ways; lines/s counts line transactions (writes and reads).
func BenchmarkWriteAggregate(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	payload := randBytes(rng, benchLines*cxl.LineBytes)
	region := cxl.Region{Name: "bench", Size: benchLines * cxl.LineBytes, Workers: 8, Layout: lowbit.ElementMajor, Gate: lowbit.PaperGate, Mode: cxl.Aggregate(lowbit.Binary)}
	report := func(b *testing.B, cpu cpuClock) {
		b.SetBytes(2 * benchLines * cxl.LineBytes)
		b.ReportMetric(float64(2*benchLines*b.N)/b.Elapsed().Seconds(), "lines/s")
		cpu.report(b, 2*benchLines)
	}
	b.Run("service", func(b *testing.B) {
		ts := startServer(b, serve.Options{})
		c := ts.dial(b)
		ctx := context.Background()
		d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: region.End()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Map(ctx, &pb.MapRegionRequest{Size: region.Size, Mode: pb.Mode_MODE_G_BINARY}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		cpu := startCPU()
		for range b.N {
			if err := d.Write(ctx, 0, payload); err != nil {
				b.Fatal(err)
			}
			if _, _, err := d.Read(ctx, 0, benchLines); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu)
	})
	b.Run("shared", func(b *testing.B) {
		// The shared-memory path: the client stores the payload into its
		// mapping (as a CXL.mem host stores lines), and one Transact
		// commits it and puts the aggregate into the buffer after it.
		ts := startServer(b, serve.Options{})
		c := ts.dial(b)
		ctx := context.Background()
		d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: region.End()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Map(ctx, &pb.MapRegionRequest{Size: region.Size, Mode: pb.Mode_MODE_G_BINARY}); err != nil {
			b.Fatal(err)
		}
		sh, err := c.OpenShared(ctx, 2*benchLines*cxl.LineBytes)
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close(ctx)
		half := uint64(benchLines * cxl.LineBytes)
		ops := []*pb.Op{client.SharedWriteOp(sh.ID, 0, 0, benchLines), client.SharedReadOp(sh.ID, half, 0, benchLines)}
		b.ResetTimer()
		cpu := startCPU()
		for range b.N {
			copy(sh.Mem, payload)
			if _, err := d.Transact(ctx, ops...); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu)
	})
	b.Run("inprocess", func(b *testing.B) {
		// The service's own device path, host.Device.Transact, without the
		// socket, the encoding and the server.
		dev, err := host.Open(host.Config{Workers: 8, Capacity: region.End()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dev.MapRegion(region); err != nil {
			b.Fatal(err)
		}
		writes := make([]host.Step, benchLines)
		reads := make([]host.Step, benchLines)
		for l := range benchLines {
			writes[l].Req = cxl.Write(uint16(l), uint64(l)*cxl.LineBytes, payload[l*cxl.LineBytes:(l+1)*cxl.LineBytes])
			reads[l].Req = cxl.Read(uint16(l), uint64(l)*cxl.LineBytes)
		}
		res := make([]host.Outcome, benchLines)
		out := make([]byte, 0, benchLines*cxl.LineBytes)
		b.ResetTimer()
		cpu := startCPU()
		for range b.N {
			if _, f := dev.Transact(writes, res); f > 0 {
				b.Fatal("failed writes")
			}
			if _, f := dev.Transact(reads, res); f > 0 {
				b.Fatal("failed reads")
			}
			out = out[:0]
			for i := range res {
				out = append(out, res[i].Resp.Data[:]...) // what the service copies into its response
			}
		}
		report(b, cpu)
	})
	b.Run("inprocess-runs", func(b *testing.B) {
		// The device path the service now runs, host.Device.TransactRuns
		// (one run an op), without the socket, the encoding and the server.
		dev, err := host.Open(host.Config{Workers: 8, Capacity: region.End()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dev.MapRegion(region); err != nil {
			b.Fatal(err)
		}
		out := make([]byte, benchLines*cxl.LineBytes)
		runs := []host.Run{
			{Run: cxl.Run{Op: cxl.MemWr, Lines: benchLines, Data: payload}},
			{Run: cxl.Run{Op: cxl.MemRd, Lines: benchLines, Dst: out}},
		}
		res := make([]host.RunOutcome, len(runs))
		b.ResetTimer()
		cpu := startCPU()
		for range b.N {
			if _, f := dev.TransactRuns(runs, res); f > 0 {
				b.Fatal("failed transactions")
			}
		}
		report(b, cpu)
	})
}

// BenchmarkControlRoundTrip is one control event (a step boundary) and its
// actions, through the service over a Unix socket and in process.
func BenchmarkControlRoundTrip(b *testing.B) {
	cfg := control.DefaultConfig("backbone", "head")
	b.Run("service", func(b *testing.B) {
		ts := startServer(b, serve.Options{MaxSessionEvents: 1 << 30})
		c := ts.dial(b)
		s, err := c.OpenSession(context.Background(), client.SessionConfig(cfg))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		cpu := startCPU()
		for i := range b.N {
			if _, err := s.Send(context.Background(), control.Event{Type: control.EvStep, Step: int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, 0)
	})
	b.Run("inprocess", func(b *testing.B) {
		p, _ := control.New(cfg)
		cpu := startCPU()
		for i := range b.N {
			if _, err := p.Step(control.Event{Type: control.EvStep, Step: int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b, 0)
	})
}
