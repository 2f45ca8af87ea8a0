package serve

import (
	"fmt"
	"testing"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
)

// TestReadSpansHandComputed: a batch whose read lines' modes and flags
// are known by hand (a G-Binary view line is an aggregate; plain memory
// and an Identity region are stored bytes, mode Identity) gives exactly
// these spans: neighbours that share mode and flag merged across ops,
// a new span at a latch change, shared reads counted in op order.
func TestReadSpansHandComputed(t *testing.T) {
	dev, err := host.Open(host.Config{Workers: 8, Capacity: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.MapRegion(cxl.Region{Name: "em", Size: 1024, Workers: 8, Gate: lowbit.PaperGate}); err != nil {
		t.Fatal(err)
	}
	d := &device{capacity: 1 << 14, dev: dev}
	mode := func(m pb.Mode) *pb.Op {
		return &pb.Op{Op: &pb.Op_SetMode{SetMode: &pb.SetMode{Region: 0, Mode: m}}}
	}
	read := func(addr uint64, n uint32) *pb.Op {
		return &pb.Op{Op: &pb.Op_Read{Read: &pb.Read{Addr: addr, Lines: n}}}
	}
	ops := []*pb.Op{
		mode(pb.Mode_MODE_G_BINARY),
		read(0, 1),    // the region's first view line: an aggregate
		read(8192, 2), // plain memory
		read(8192+128, 1),
		mode(pb.Mode_MODE_IDENTITY),
		read(0, 1), // the region under Identity: stored bytes
		{Op: &pb.Op_SharedRead{SharedRead: &pb.SharedRead{Buffer: 1, Offset: 0, Addr: 64, Lines: 2}}},
		mode(pb.Mode_MODE_G_BINARY),
		read(0, 1),
	}
	steps, cnt, err := decodeOps(ops, 1<<12, 1<<12, 1<<12)
	if err != nil {
		t.Fatal(err)
	}
	buf := &sharedBuf{id: 1, bytes: 4096, mem: make([]byte, 4096)}
	if _, err := bindShared(steps, map[uint64]*sharedBuf{1: buf}, new([]byte)); err != nil {
		t.Fatal(err)
	}
	out, bad := d.run(steps, cnt)
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	want := "[1 MODE_G_BINARY true] [6 MODE_IDENTITY false] [1 MODE_G_BINARY true]"
	got := ""
	for i, sp := range out.GetReadSpans() {
		if i > 0 {
			got += " "
		}
		got += fmt.Sprintf("[%d %v %v]", sp.GetLines(), sp.GetMode(), sp.GetTransformed())
	}
	if got != want {
		t.Fatalf("spans %s, want %s", got, want)
	}
}
