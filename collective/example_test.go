package collective_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
)

func ExampleAlphaBeta_Time() {
	ib := collective.Presets["ib"]
	e, _ := collective.AlphaBeta{Alg: collective.Ring, N: 8, Link: ib}.Time(collective.Call{Op: collective.AllReduce, Bytes: 1e9})
	fmt.Printf("ring, 8 workers, 1 GB over %s: %.2f ms, algbw %.2f GB/s, busbw %.2f GB/s\n",
		ib.Name, e.Seconds*1e3, e.AlgBW/1e9, e.BusBW/1e9)
	// Output:
	// ring, 8 workers, 1 GB over ib: 70.07 ms, algbw 14.27 GB/s, busbw 24.98 GB/s
}

// The exposure 0.0167 is the paper's full-LLC-miss figure, used here only to
// show how the path reproduces Fig. 7's G-Binary row for a 1.5B payload.
func ExampleCXLPath_Time() {
	p := collective.CXLPath{Link: collective.Presets["cxl"], Workers: 8, Exposure: 0.0167}
	fp32, _ := p.Time(1_500_000_000, 32, false)
	bin, _ := p.Time(1_500_000_000, 1, true)
	fmt.Printf("FP32 bypass %.2f ms, G-Binary %.2f ms\n", fp32.Seconds*1e3, bin.Seconds*1e3)
	// Output:
	// FP32 bypass 87.31 ms, G-Binary 2.77 ms
}

// ASTRA-sim's published ring All-Reduce regression (tests/rt_template): 1 MiB
// on an 8-NPU ring of 50 GB/s (GiB/s in its conversion) and 500 ns.
func ExampleAstra_Cycles() {
	m, _ := collective.NewAstra(collective.RTTemplateSystem, []collective.AstraDim{collective.RTTemplateNetwork})
	e, _ := m.Cycles(collective.Call{Op: collective.AllReduce, Bytes: 1 << 20})
	fmt.Printf("%d cycles: %d chunks, messages of %d B, hop %d + bus %d + reduce %d cycles\n",
		e.Cycles, e.Chunks, e.MsgBytes, e.NetCycles, e.BusCycles, e.ReduceCycles)
	// Output:
	// 117780 cycles: 4 chunks, messages of 32768 B, hop 1110 + bus 10 + reduce 1965 cycles
}
