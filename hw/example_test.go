package hw_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/hw"
	"github.com/neuronfabric/nfabric/lowbit"
)

// The oracle a generated datapath is checked against, one response per
// request: G-Binary returns the count per element, G-Ternary the gated
// majority as int8, an idle cycle nothing. EncodeVector is the request's
// line on the simulator's stdin: valid, mode, base mod 3, data.
func ExampleExpect() {
	c := hw.Config{Width: 64}
	line := []byte{0x3f, 0x3f, 0x3f, 0x0f, 0x00, 0x00, 0x01, 0xff}
	vs := []hw.Vector{
		{Valid: true, Mode: cxl.Aggregate(lowbit.Binary), Data: line},
		{Valid: true, Mode: cxl.Aggregate(lowbit.Ternary), Base: 0, Data: line},
		{Data: line},
	}
	want := hw.Expect(c, vs)
	fmt.Println(want[0])
	var t []int8
	for _, b := range want[1] {
		t = append(t, int8(b))
	}
	fmt.Println(t, want[2] == nil)
	fmt.Println(c.EncodeVector(hw.Vector{Valid: true, Mode: cxl.Aggregate(lowbit.Ternary), Base: 7, Data: line}))
	// Output:
	// [6 6 6 4 0 0 1 8]
	// [1 1 0 0 -1 0 -1 1] true
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
