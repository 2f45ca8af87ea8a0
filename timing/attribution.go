package timing

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/usage"
)

// Ablation is one run pair of the detailed model with one mechanism
// removed, to attribute the exposed cost to named mechanisms.
type Ablation struct {
	// Mechanism names what was removed ("" for the model as configured).
	Mechanism string `json:"mechanism"`
	// Change is the configuration change that removes it.
	Change string `json:"change"`
	Pair   Pair   `json:"pair"`
}

// Ablation mechanism names.
const (
	MechNone        = "none removed (as configured)"
	MechRefresh     = "refresh"
	MechPipeRate    = "pipeline initiation rate"
	MechBoth        = "refresh and pipeline initiation rate"
	MechDRAM        = "DRAM (row conflicts, refresh, bus turnaround, channel queues)"
	MechLink        = "two-way CXL link (flit packing, port latency, credits)"
	MechRowConflict = "row conflicts (closed page, every access its own ACT)"
)

// RunAblations runs cfg (a detailed configuration, typically the
// full-LLC-miss anchor under a device preset) as configured and with one mechanism
// removed at a time: refresh (t_refi 0), the pipeline's initiation rate
// (initiation_cycles 0: a line may enter every instant), both, the DRAM
// (ideal memory at the DRAM path's own unloaded latency behind the same
// link), the link (the paper's gate in place of the flit link), and the
// open-page row hits (closed page, for contrast). Differences between the
// pairs attribute the exposed cost.
func RunAblations(ctx context.Context, cfg Config) ([]Ablation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Memory.Model != MemoryDRAM {
		return nil, usage.Errorf("ablations need memory.model dram")
	}
	var out []Ablation
	var jobs []PairJob
	add := func(mech, change string, c Config) {
		out = append(out, Ablation{Mechanism: mech, Change: change})
		jobs = append(jobs, PairJob{Config: c, W: Sweep{}, Window: All})
	}
	add(MechNone, "-", cfg)
	c := cfg
	c.Device.Media.TREFINS = 0
	add(MechRefresh, "device.media.t_refi_ns 0", c)
	c = cfg
	c.Controller.InitiationCycles = 0
	add(MechPipeRate, "controller.initiation_cycles 0", c)
	c.Device.Media.TREFINS = 0
	add(MechBoth, "both", c)
	c = cfg
	d := cfg.Device.Media
	c.Memory.Model, c.Link.Model = MemoryIdeal, LinkCXL
	c.Memory.LatencyNS = d.RowMissRead().NS() + d.FrontendNS
	add(MechDRAM, fmt.Sprintf("memory.model ideal at %.1f ns (tRCD+tCL+BL/2+front end), link cxl", c.Memory.LatencyNS), c)
	c = cfg
	c.Link.Model = LinkGate
	add(MechLink, fmt.Sprintf("link.model gate (%g GiB/s)", c.Link.BandwidthGiBps), c)
	c = cfg
	c.Device.Media.PagePolicy = dram.PageClosed
	add(MechRowConflict, "device.media.page_policy closed (adds conflicts)", c)
	pairs, err := RunPairs(ctx, jobs)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Pair = pairs[i]
	}
	return out, nil
}

// RespLinesPerFlit is the read responses per response-direction flit
// (flit packing: up to 3.33 on 256-byte flits, 0.89 on 68-byte ones).
func (r Result) RespLinesPerFlit() float64 {
	if r.Detail == nil || r.Detail.RespFlits == 0 {
		return 0
	}
	return float64(r.ControllerReads) / float64(r.Detail.RespFlits)
}
