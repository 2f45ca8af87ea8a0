package netsim_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/netsim"
)

// Every worker of an 8-worker ring sends 14 of the 8 chunks' worth of a
// 32 MiB bucket: 2(W-1)/W of it.
func ExampleRingSendBytes() {
	S := int64(32 << 20)
	fmt.Println(netsim.RingSendBytes(0, 8, S), 2*7*S/8)
	// Output:
	// 58720256 58720256
}

// Judge replays a trace through the control plane's own Commander: a link
// at a steady pressure of 0.9 is congested by the default thresholds
// (relieve at 0.7, release at 0.4).
func ExampleJudge() {
	var tel []control.Telemetry
	for i := range 20 {
		tel = append(tel, control.Telemetry{TimeNS: int64(i) * 1e6, DemandGBps: 45, CapacityGBps: 50})
	}
	v, _ := netsim.Judge(tel, control.DefaultConfig().Commander)
	fmt.Printf("%s: relief on %.0f%% of samples\n", v.Label, 100*v.Relief)
	// Output:
	// congested: relief on 100% of samples
}

func ExampleParseBackground() {
	b, _ := netsim.ParseBackground("bulk=2,onoff=8@0.9,off=0")
	fmt.Printf("%d bulk TCP flows, %d on/off UDP flows at %.0f%% of the link, always on: %v\n", b.Bulk, b.OnOff, 100*b.Share, b.OffNS == 0)
	// Output:
	// 2 bulk TCP flows, 8 on/off UDP flows at 90% of the link, always on: true
}
