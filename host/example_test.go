package host_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Three workers' gradients of one bucket go through the controller under
// G-Ternary with the paper's 2-of-3 gate: encode, write, read, decode.
func Example() {
	dev, err := host.Open(host.Config{Workers: 3, Layout: lowbit.ElementMajor})
	if err != nil {
		panic(err)
	}
	b, err := dev.Map(host.BucketConfig{Name: "fc1.weight", Elements: 4, Mode: cxl.Aggregate(lowbit.Ternary)})
	if err != nil {
		panic(err)
	}
	grads := [][]float32{
		{0.5, -1, 2, 0.1},
		{0.2, -3, 1, -0.4},
		{-0.1, 2, 4, -0.2},
	}
	for k, g := range grads {
		if err := b.EncodeWorker(k, g, 0); err != nil {
			panic(err)
		}
	}
	if err := b.Write(); err != nil {
		panic(err)
	}
	mode, err := b.Read()
	if err != nil {
		panic(err)
	}
	u := make([]int8, 4)
	if err := b.Values(u); err != nil {
		panic(err)
	}
	a := dev.Stats().Host
	fmt.Println(mode, u)
	fmt.Printf("%d elements encoded (%d FP32 bytes), %d payload bytes, %d transactions\n", a.Encoded, a.FP32Bytes, a.PayloadBytes, a.Transactions)

	// A NaN keeps the bucket on FP32: the error names bucket, worker and
	// element.
	err = b.EncodeWorker(1, []float32{1, float32(math.NaN()), 0, 0}, 0)
	var nf *host.NonFiniteError
	fmt.Println(errors.As(err, &nf), err)
	// Output:
	// g-ternary [1 -1 0 -1]
	// 12 elements encoded (48 FP32 bytes), 64 payload bytes, 2 transactions
	// true bucket fc1.weight worker 1: element 1 is NaN, not a finite number
}

// A remote client that encodes its own payloads drives the raw surface:
// map a bucket, write its lines by address, flip the latch as the control
// plane, read the aggregate view lines, and read the counters.
func ExampleDevice_WriteLines() {
	dev, err := host.Open(host.Config{Workers: 2, Layout: lowbit.ElementMajor})
	if err != nil {
		panic(err)
	}
	b, err := dev.Map(host.BucketConfig{Name: "remote", Elements: 64, Mode: cxl.FP32Bypass})
	if err != nil {
		panic(err)
	}
	r := b.Region()
	packet := make([]byte, 64) // byte i, bit k: worker k's sign of element i
	packet[0], packet[1], packet[2] = 0b11, 0b01, 0b00
	if err := dev.WriteLines([]uint64{r.SignAddr(0, 0)}, packet); err != nil {
		panic(err)
	}
	if err := dev.ModeWriter().SetMode(b.ID(), cxl.Aggregate(lowbit.Binary), 1); err != nil {
		panic(err)
	}
	resps, err := dev.ReadLines([]uint64{r.ViewAddr(0, 0)})
	if err != nil {
		panic(err)
	}
	st := dev.Stats()
	fmt.Println(resps[0].Mode, resps[0].Data[:3], st.Host.Transactions, st.Controller.ModeChanges)
	// Output: g-binary [2 1 0] 2 1
}

// A raw client maps its own region and runs one batch in which a mode
// write sits between two reads of the same aggregate line, and a bad
// address fails alone.
func ExampleDevice_Transact() {
	dev, err := host.Open(host.Config{Workers: 2, Capacity: 1 << 12})
	if err != nil {
		panic(err)
	}
	r := cxl.Region{Name: "raw", Base: 1024, Mode: cxl.FP32Bypass, Workers: 2, Layout: lowbit.ElementMajor}
	r.Size = r.DataBytes(1)
	id, err := dev.MapRegion(r)
	if err != nil {
		panic(err)
	}
	signs := make([]byte, 64)
	for i := range signs {
		signs[i] = 0b11 // both workers' sign bit set
	}
	steps := []host.Step{
		{Req: cxl.Write(1, r.SignAddr(0, 0), signs)},
		{Req: cxl.Read(2, r.ViewAddr(0, 0))},
		{ModeWrite: true, Region: id, Mode: cxl.Aggregate(lowbit.Binary), Time: 1},
		{Req: cxl.Read(3, r.ViewAddr(0, 0))},
		{Req: cxl.Read(4, 1<<12)},
	}
	out := make([]host.Outcome, len(steps))
	first, failed := dev.Transact(steps, out)
	fmt.Println("first seq", first, "failed", failed)
	for _, o := range out[1:] {
		if o.Resp.Kind == 0 && o.Err == nil {
			fmt.Println("mode write")
			continue
		}
		fmt.Printf("tag %d: %v transformed=%v byte0=%d err=%v\n", o.Resp.Tag, o.Resp.Mode, o.Resp.Transformed, o.Resp.Data[0], o.Err != nil)
	}
	fmt.Printf("%+v\n", dev.Stats().Host)
	// Output:
	// first seq 1 failed 1
	// tag 2: fp32-bypass transformed=false byte0=3 err=false
	// mode write
	// tag 3: g-binary transformed=true byte0=2 err=false
	// tag 4: identity transformed=false byte0=0 err=true
	// {Encoded:0 FP32Bytes:0 PayloadBytes:64 WriteLines:1 ReadLines:3 Transactions:4 Aggregates:0 Rejected:0 ScaleBytes:0}
}
