package cxl_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Eight workers' signs for one element per byte (the paper's packet); the
// same line reads back as stored bytes in identity mode and as the sign
// count c_i in G-Binary mode.
func Example() {
	ctl, _ := cxl.New(cxl.Config{Capacity: 1 << 20})
	id, _ := ctl.Map(cxl.Region{Name: "bucket0", Base: 0, Size: 64, Workers: 8, Layout: lowbit.ElementMajor})
	packet := make([]byte, cxl.LineBytes)
	packet[0] = 0b0011_1111 // element 0: workers 0-5 positive, 6-7 not
	packet[1] = 0b0000_1111 // element 1: a 4-4 tie
	ctl.WriteLine(1, 0, packet)

	r, _ := ctl.ReadLine(2, 0)
	fmt.Println(r.Mode, r.Kind, r.Data[:2])

	ctl.SetMode(id, cxl.Aggregate(lowbit.Binary), 100) // the control path writes the latch
	r, _ = ctl.ReadLine(3, 0)
	fmt.Println(r.Mode, r.Transformed, r.Data[:2])

	ctl.SetMode(id, cxl.Aggregate(lowbit.Ternary), 101) // element 2 mod 3 == 2 is gated to 0
	r, _ = ctl.ReadLine(4, 0)
	fmt.Println(r.Mode, int8(r.Data[0]), int8(r.Data[1]))

	_, err := ctl.ReadLine(5, 3)
	fmt.Println(err)
	fmt.Println(ctl.ModeChanges()[0])
	// Output:
	// identity DRS [63 15]
	// g-binary true [6 4]
	// g-ternary 1 0
	// cxl: MemRd tag 5 seq 5 addr 0x3: address not 64-byte aligned: offset 3 into a line
	// {0 identity g-binary 2 100}
}

// The accept/complete core: a read accepted before a mode change
// completes under the mode it was accepted with.
func ExampleCore_Accept() {
	c, _ := cxl.NewCore(cxl.Config{Capacity: 1 << 20})
	id, _ := c.Map(cxl.Region{Base: 0, Size: 64, Workers: 8, Mode: cxl.Aggregate(lowbit.Binary)})
	c.Do(cxl.Write(1, 0, make([]byte, cxl.LineBytes)))
	c.Accept(cxl.Read(2, 0))
	c.SetMode(id, cxl.Identity, 0)
	c.Accept(cxl.Read(3, 0))
	for c.Pending() > 0 {
		r, _ := c.Complete()
		fmt.Println(r.Tag, r.Seq, r.Mode, r.Transformed)
	}
	// Output:
	// 2 2 g-binary true
	// 3 3 identity false
}
