package cxldev_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Builders are values: a partly configured builder makes several
// components, and WithX never changes the builder it is called on.
func ExampleMakeStackBuilder() {
	base := cxldev.MakeStackBuilder().WithMemLatency(40 * sim.Nanosecond)
	s0 := base.Build("Device[0].Ctrl")
	s1 := base.WithPipeline(cxldev.MakePipelineBuilder().WithStages(10)).Build("Device[1].Ctrl")
	fmt.Println(s0.Name(), s0.Pipe.Latency(), s0.Accept(0, cxl.Aggregate(lowbit.Binary)))
	fmt.Println(s1.Name(), s1.Pipe.Latency(), s1.Accept(0, cxl.Aggregate(lowbit.Binary)))
	// Output:
	// Device[0].Ctrl 2.5ns 42.966ns
	// Device[1].Ctrl 5ns 45.466ns
}
