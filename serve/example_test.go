package serve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
)

// A server on a Unix socket and a client: one packet of eight workers'
// signs written into a G-Binary region reads back as the counts c_i; a
// set_mode inside the batch switches the next read to identity.
func Example() {
	dir, _ := os.MkdirTemp("", "nfabric-example-")
	defer os.RemoveAll(dir)
	lis, _ := serve.ListenUnix(filepath.Join(dir, "nf.sock"))
	srv := serve.New(serve.Options{})
	go srv.Serve(lis)
	defer srv.Shutdown(context.Background())

	c, _ := client.Dial("unix://"+filepath.Join(dir, "nf.sock"), client.Options{})
	defer c.Close()
	ctx := context.Background()
	d, _ := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 20, Workers: 8})
	r, _ := d.Map(ctx, &pb.MapRegionRequest{Name: "bucket0", Elements: 64, Mode: pb.Mode_MODE_G_BINARY})
	packet := make([]byte, cxl.LineBytes)
	packet[0] = 0b0011_1111 // element 0: workers 0-5 positive
	packet[1] = 0b0000_1111 // element 1: a 4-4 tie
	d.Write(ctx, r.GetBase(), packet)
	resp, _ := d.Transact(ctx, client.ReadOp(r.GetBase(), 1), client.SetModeOp(r.GetId(), cxl.Identity, 1), client.ReadOp(r.GetBase(), 1))
	for _, sp := range resp.GetReadSpans() { // one span per run of lines sharing a mode
		fmt.Println(sp.GetLines(), sp.GetMode(), sp.GetTransformed())
	}
	fmt.Println(resp.GetData()[:2], resp.GetData()[64:66])
	// Output:
	// 1 MODE_G_BINARY true
	// 1 MODE_IDENTITY false
	// [6 4] [63 15]
}
