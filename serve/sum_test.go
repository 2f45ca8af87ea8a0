package serve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// TestSumRegionsOverSocket: a client maps Int8 and BFP8 regions by
// element count, writes W workers' encoded lines at the addresses the
// service returns, and reads the aggregate views under the integer-sum
// mode: the sums (and BFP8's exponents) are lowbit's Ref sums of what
// was written, the bytes those of the in-process controller, and the
// view is unmapped under G-Binary.
func TestSumRegionsOverSocket(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	for _, tc := range []struct {
		f    lowbit.Format
		path string
	}{{lowbit.Int8, viaGRPC}, {lowbit.BFP8, viaGRPC}, {lowbit.Int8, viaShared}, {lowbit.BFP8, viaShared}} {
		f := tc.f
		t.Run(f.String()+"/"+tc.path, func(t *testing.T) {
			const w, n = 5, 64*70 + 9 // 71 lines: two BFP8 exponent lines
			m := cxl.Aggregate(f)
			p := newPair(t, c, 1<<20, tc.path)
			pr, err := p.remote.Map(context.Background(), &pb.MapRegionRequest{Name: f.String(), Elements: n, Workers: w,
				Format: wire.Format(f), Mode: wire.Mode(m)})
			if err != nil {
				t.Fatal(err)
			}
			r := cxl.Region{Name: f.String(), Workers: w, Layout: lowbit.WorkerMajor, Sum: f, Mode: m}
			r.Size = r.DataBytes(r.Lines(n))
			if _, err := p.local.Map(r); err != nil {
				t.Fatal(err)
			}
			if pr.GetFormat() != wire.Format(f) || pr.GetSize() != r.Size || pr.GetEnd() != r.End() || pr.GetLayout() != pb.Layout_LAYOUT_WORKER_MAJOR ||
				pr.GetExpLines() != uint64(r.ExpLines()) || (f == lowbit.BFP8 && (pr.GetExpBase() != r.ExpAddr(0, 0) || pr.GetExpViewBase() != r.ExpViewAddr(0))) {
				t.Fatalf("region %v, want %+v", pr, r)
			}
			rng := rand.New(rand.NewPCG(1, uint64(f)))
			g := lowbit.EdgeGradients(rng, w, n)
			lines := int(pr.GetPayloadLines())
			codeLines := make([][]int8, w)
			exps := make([][]int8, w)
			var scale float32
			if f == lowbit.Int8 {
				var agreed float32
				for _, gk := range g {
					a, _ := lowbit.MaxAbs(gk)
					agreed = max(agreed, a)
				}
				scale = lowbit.Int8Scale(agreed)
			}
			for k := range w {
				codeLines[k] = make([]int8, lines*64)
				if f == lowbit.Int8 {
					err = lowbit.EncodeInt8(codeLines[k], g[k], scale)
				} else {
					exps[k] = make([]int8, int(pr.GetExpLines())*64)
					err = lowbit.EncodeBFP8(codeLines[k], exps[k], g[k])
				}
				if err != nil {
					t.Fatal(err)
				}
				p.batch(client.WriteOp(pr.GetBase()+uint64(k)*pr.GetSlabBytes(), lowbit.Int8Bytes(codeLines[k])))
				if f == lowbit.BFP8 {
					p.batch(client.WriteOp(pr.GetExpBase()+uint64(k)*pr.GetExpLines()*64, lowbit.Int8Bytes(exps[k])))
				}
			}
			view := p.batch(client.ReadOp(pr.GetViewBase(), 2*lines))
			sums := make([]int16, lines*64)
			lowbit.Int16s(sums, view)
			var want []int16
			if f == lowbit.Int8 {
				want = lowbit.RefSumInt8(codeLines)
			} else {
				var wantExp []int8
				want, wantExp = lowbit.RefSumBFP8(codeLines, exps, lines*64)
				ev := p.batch(client.ReadOp(pr.GetExpViewBase(), int(pr.GetExpLines())))
				if got := lowbit.BytesInt8(ev)[:lines]; !slices.Equal(got, wantExp) {
					t.Fatalf("exponent view %v, want %v", got, wantExp)
				}
			}
			if !slices.Equal(sums, want) {
				t.Fatal("sum view differs from the Ref sums of the written lines")
			}
			// Under G-Binary the view of a sum region is not mapped.
			_, err = p.remote.Transact(context.Background(), client.SetModeOp(pr.GetId(), cxl.Aggregate(lowbit.Binary), 1), client.ReadOp(pr.GetViewBase(), 1))
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("view read under g-binary: %v", err)
			}
		})
	}
}

// TestSumRegionErrors: an unknown format, or an integer-sum region that
// asks for the element-major layout or a gate, is InvalidArgument naming
// its field.
func TestSumRegionErrors(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	d, err := c.OpenDevice(context.Background(), &pb.OpenDeviceRequest{CapacityBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req   *pb.MapRegionRequest
		field string
	}{
		{&pb.MapRegionRequest{Elements: 64, Format: pb.Format(9)}, "format"},
		{&pb.MapRegionRequest{Elements: 64, Format: pb.Format_FORMAT_INT8, Layout: pb.Layout_LAYOUT_ELEMENT_MAJOR}, "layout"},
		{&pb.MapRegionRequest{Elements: 64, Format: pb.Format_FORMAT_BFP8, Gate: "worker"}, "gate"},
		{&pb.MapRegionRequest{Elements: 64, Mode: pb.Mode(7)}, "mode"},
		// More workers than an int16 lane sums exactly: refused, not
		// saturated.
		{&pb.MapRegionRequest{Elements: 64, Format: pb.Format_FORMAT_INT8, Workers: 300}, "workers"},
		{&pb.MapRegionRequest{Elements: 64, Format: pb.Format_FORMAT_BFP8, Workers: 259}, "workers"},
	} {
		_, err := d.Map(context.Background(), tc.req)
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), tc.field) {
			t.Errorf("%v: %v %q, want InvalidArgument on %s", tc.req, st.Code(), st.Message(), tc.field)
		}
	}
	if _, err := d.Map(context.Background(), &pb.MapRegionRequest{Elements: 64, Format: pb.Format_FORMAT_INT8, Workers: lowbit.MaxSumWorkers}); err != nil {
		t.Errorf("int8 region of %d workers: %v", lowbit.MaxSumWorkers, err)
	}
	if got := fmt.Sprint(wire.Format(lowbit.BFP8)); got != "FORMAT_BFP8" {
		t.Errorf("wire format %s", got)
	}
}
