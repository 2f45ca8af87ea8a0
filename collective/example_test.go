package collective_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
)

func ExampleAllReduce_Time() {
	ib := collective.Presets["ib"]
	e, _ := collective.AllReduce{Alg: collective.Ring, N: 8, Link: ib}.Time(1e9)
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
