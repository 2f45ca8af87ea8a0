package hw_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/lowbit"
)

// The oracle a generated datapath is checked against: G-Binary returns the
// count per element, G-Ternary the gated majority as int8.
func ExampleExpect() {
	c := hw.Config{Width: 64}
	line := []byte{0x3f, 0x3f, 0x3f, 0x0f, 0x00, 0x00, 0x01, 0xff}
	fmt.Println(hw.Expect(c, hw.Vector{Mode: cxl.Aggregate(lowbit.Binary), Data: line}))
	var t []int8
	for _, b := range hw.Expect(c, hw.Vector{Mode: cxl.Aggregate(lowbit.Ternary), Base: 0, Data: line}) {
		t = append(t, int8(b))
	}
	fmt.Println(t)
	fmt.Println(hw.EncodeVector(hw.Vector{Valid: true, Mode: cxl.Aggregate(lowbit.Ternary), Base: 7, Data: line}))
	// Output:
	// [6 6 6 4 0 0 1 8]
	// [1 1 0 0 -1 0 -1 1]
	// 1 3 1 ff0100000f3f3f3f
}

func ExampleConfig_StageOps() {
	for k := 1; k <= hw.MaxStages; k++ {
		fmt.Println(k, hw.Config{Width: 512, Stages: k}.StageOps())
	}
	// Output:
	// 1 [[decode unpack count gate select]]
	// 2 [[decode unpack count] [gate select]]
	// 3 [[decode] [unpack count] [gate select]]
	// 4 [[decode] [unpack count] [gate] [select]]
	// 5 [[decode] [unpack] [count] [gate] [select]]
}
