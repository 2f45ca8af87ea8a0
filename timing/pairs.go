package timing

import (
	"context"
	"runtime"
	"sync"
)

// PairJob is one identity/low-bit pair to run: Config with workload W
// (nil: Sweep), its exposed cost measured over Window (see RunWindowPair).
type PairJob struct {
	Config Config
	W      Workload
	Window Window
}

// RunPairs runs the pairs on up to GOMAXPROCS goroutines. Each pair runs on
// its own engine and results land by index, so the output does not depend
// on scheduling or GOMAXPROCS. A cancelled ctx stops it between pairs; the
// first error (in job order) is returned.
func RunPairs(ctx context.Context, jobs []PairJob) ([]Pair, error) {
	out := make([]Pair, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				out[i], errs[i] = RunWindowPair(jobs[i].Config, jobs[i].W, jobs[i].Window)
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WithLinkGiBps returns c with each stack's link bandwidth set to bw GiB/s
// per direction: link.bandwidth_gibps under the gate; under the cxl link
// the transfer rate that gives a raw rate of bw GiB/s on the configured
// lanes (flit framing and headers then take their share of it).
func (c Config) WithLinkGiBps(bw float64) Config {
	c.Link.BandwidthGiBps = bw
	if c.LinkModel() == LinkCXL {
		x := &c.Device.Link
		x.TransferGTps = bw * (1 << 30) * 8 / (float64(x.Lanes) * x.EncodingEfficiency * 1e9)
	}
	return c
}

// WithAccessLatencyNS returns c with the memory access latency the Fig. 3(b)
// panel sweeps set to ns: memory.latency_ns under the ideal memory; under
// dram, whose DRAM latency follows from its timing, the CXL port latency
// is set to ns/2 per direction, so the sweep adds the same fixed round trip
// to the device's other stages.
func (c Config) WithAccessLatencyNS(ns float64) Config {
	c.Memory.LatencyNS = ns
	if c.Memory.Model == MemoryDRAM {
		c.Device.Link.PortLatencyNS = ns / 2
	}
	return c
}
