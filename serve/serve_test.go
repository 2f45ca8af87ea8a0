package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// testServer serves on a real Unix socket in a temporary directory.
type testServer struct {
	srv    *serve.Server
	target string
	sock   string
}

func startServer(t testing.TB, opts serve.Options) *testServer {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "nf.sock")
	lis, err := serve.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(opts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &testServer{srv: srv, target: "unix://" + sock, sock: sock}
}

func (ts *testServer) dial(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.Dial(ts.target, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pair is one device on the server and its in-process twin, a
// cxl.Controller fed the same transactions one at a time with Do; writes
// and reads count the line transactions issued, for the host accounting.
// With shared set, batch sends its writes and reads through that
// shared-memory buffer (toShared) instead of the messages.
type pair struct {
	t             *testing.T
	remote        *client.Device
	local         *cxl.Controller
	ids           map[uint32]cxl.RegionID
	writes, reads int64
	shared        *client.Shared
}

// The two data paths a pair can use.
const (
	viaGRPC   = "grpc"
	viaShared = "shared"
)

// eachPath runs f as a subtest on each data path.
func eachPath(t *testing.T, f func(t *testing.T, path string)) {
	for _, path := range []string{viaGRPC, viaShared} {
		t.Run(path, func(t *testing.T) { f(t, path) })
	}
}

// pairBufferBytes is the size of a pair's shared buffer: the most line
// bytes one batch of these tests writes and reads.
const pairBufferBytes = 1 << 20

func newPair(t *testing.T, c *client.Client, capacity uint64, path string) *pair {
	t.Helper()
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: capacity})
	if err != nil {
		t.Fatal(err)
	}
	l, err := cxl.New(cxl.Config{Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{t: t, remote: d, local: l, ids: map[uint32]cxl.RegionID{}}
	if path == viaShared {
		if p.shared, err = c.OpenShared(ctx, pairBufferBytes); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.shared.Close(context.Background()) })
	}
	return p
}

// transact runs ops on the remote device, through the shared buffer when
// the pair has one: every whole-line write's bytes are stored into the
// buffer and sent as a shared_write, every read as a shared_read, and the
// response's data is gathered back from the buffer in read order, so the
// caller sees what the gRPC path returns.
func (p *pair) transact(ops ...*pb.Op) (*pb.TransactResponse, error) {
	p.t.Helper()
	ctx := context.Background()
	if p.shared == nil {
		return p.remote.Transact(ctx, ops...)
	}
	conv, reads := toShared(p.t, p.shared, ops)
	resp, err := p.remote.Transact(ctx, conv...)
	if err != nil {
		return resp, err
	}
	if len(resp.GetData()) != 0 {
		p.t.Fatalf("shared batch: %d bytes of data in the response", len(resp.GetData()))
	}
	for _, r := range reads {
		resp.Data = append(resp.Data, p.shared.Mem[r[0]:r[0]+r[1]]...)
	}
	return resp, nil
}

// toShared rewrites ops for buffer s (see pair.transact) and returns the
// buffer ranges (offset, bytes) of the reads, in order.
func toShared(t *testing.T, s *client.Shared, ops []*pb.Op) ([]*pb.Op, [][2]uint64) {
	t.Helper()
	var out []*pb.Op
	var reads [][2]uint64
	off := uint64(0)
	room := func(n uint64) {
		if off+n > uint64(len(s.Mem)) {
			t.Fatalf("shared batch needs more than the buffer's %d bytes", len(s.Mem))
		}
	}
	for _, op := range ops {
		switch x := op.GetOp().(type) {
		case *pb.Op_Write:
			d := x.Write.GetData()
			if len(d) == 0 || len(d)%cxl.LineBytes != 0 {
				out = append(out, op) // not expressible as lines of a buffer
				continue
			}
			room(uint64(len(d)))
			copy(s.Mem[off:], d)
			out = append(out, &pb.Op{Op: &pb.Op_SharedWrite{SharedWrite: &pb.SharedWrite{Buffer: s.ID, Offset: off, Addr: x.Write.GetAddr(), Lines: uint32(len(d) / cxl.LineBytes), Tag: x.Write.GetTag()}}})
			off += uint64(len(d))
		case *pb.Op_Read:
			n := uint64(x.Read.GetLines()) * cxl.LineBytes
			room(n)
			out = append(out, &pb.Op{Op: &pb.Op_SharedRead{SharedRead: &pb.SharedRead{Buffer: s.ID, Offset: off, Addr: x.Read.GetAddr(), Lines: x.Read.GetLines(), Tag: x.Read.GetTag()}}})
			reads = append(reads, [2]uint64{off, n})
			off += n
		default:
			out = append(out, op)
		}
	}
	return out, reads
}

func (p *pair) mapRegion(r cxl.Region) uint32 {
	p.t.Helper()
	pr, err := p.remote.Map(context.Background(), &pb.MapRegionRequest{Name: r.Name, Base: r.Base, Size: r.Size, Mode: wire.Mode(r.Mode),
		Workers: uint32(r.Workers), Layout: wire.Layout(r.Layout), Gate: r.Gate.String(), Element0: uint64(r.Element0)})
	if err != nil {
		p.t.Fatal(err)
	}
	id, err := p.local.Map(r)
	if err != nil {
		p.t.Fatal(err)
	}
	if pr.GetId() != uint32(id) || pr.GetEnd() != r.End() || pr.GetSlabBytes() != r.SlabBytes() || pr.GetViewBase() != r.ViewAddr(0, 0) {
		p.t.Fatalf("region %+v: service says %v", r, pr)
	}
	p.ids[pr.GetId()] = id
	return pr.GetId()
}

// localResult is what the in-process controller answered to a batch.
type localResult struct {
	data     []byte
	modes    []pb.Mode
	trans    []bool
	failed   int
	firstSeq uint64
}

// runLocal runs ops on the in-process controller with Do and SetMode, the
// public API's path (one transaction at a time), not the service's
// accept-all-then-complete batch.
func (p *pair) runLocal(ops []*pb.Op) localResult {
	var r localResult
	for _, op := range ops {
		switch x := op.GetOp().(type) {
		case *pb.Op_Write:
			w := x.Write
			for k := 0; k*cxl.LineBytes < len(w.GetData()); k++ {
				resp, _ := p.local.Do(cxl.Write(uint16(w.GetTag())+uint16(k), w.GetAddr()+uint64(k)*cxl.LineBytes, w.GetData()[k*cxl.LineBytes:min(len(w.GetData()), (k+1)*cxl.LineBytes)]))
				r.note(resp)
				p.writes++
			}
		case *pb.Op_Read:
			for k := range x.Read.GetLines() {
				resp, _ := p.local.Do(cxl.Read(uint16(x.Read.GetTag())+uint16(k), x.Read.GetAddr()+uint64(k)*cxl.LineBytes))
				r.note(resp)
				p.reads++
				r.data = append(r.data, resp.Data[:]...)
				r.modes = append(r.modes, wire.Mode(resp.Mode))
				r.trans = append(r.trans, resp.Transformed)
			}
		case *pb.Op_SetMode:
			m, _ := wire.ParseMode("", x.SetMode.GetMode())
			if err := p.local.SetMode(cxl.RegionID(x.SetMode.GetRegion()), m, x.SetMode.GetTime()); err != nil {
				r.failed++
			}
		}
	}
	return r
}

// wireModes is modes as the wire spells them.
func wireModes(modes []cxl.Mode) []pb.Mode {
	w := make([]pb.Mode, len(modes))
	for i, m := range modes {
		w[i] = wire.Mode(m)
	}
	return w
}

func (r *localResult) note(resp cxl.Resp) {
	if r.firstSeq == 0 {
		r.firstSeq = resp.Seq
	}
	if resp.Err != nil {
		r.failed++
	}
}

// batch runs ops on both and checks that the service gave the same bytes,
// modes and flags as the in-process controller; it returns the bytes.
func (p *pair) batch(ops ...*pb.Op) []byte {
	p.t.Helper()
	want := p.runLocal(ops)
	got, err := p.transact(ops...)
	if want.failed > 0 {
		if status.Code(err) != codes.InvalidArgument {
			p.t.Fatalf("in process %d transactions failed; service: %v", want.failed, err)
		}
		return nil
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if !bytes.Equal(got.GetData(), want.data) {
		p.t.Fatalf("read bytes differ from in-process cxl (%d vs %d bytes)", len(got.GetData()), len(want.data))
	}
	modes, trans, err := client.ReadLines(got, len(want.modes))
	if err != nil {
		p.t.Fatal(err)
	}
	if fmt.Sprint(wireModes(modes)) != fmt.Sprint(want.modes) || fmt.Sprint(trans) != fmt.Sprint(want.trans) {
		p.t.Fatalf("read modes or flags differ: %v %v vs %v %v", modes, trans, want.modes, want.trans)
	}
	if want.firstSeq != 0 && got.GetFirstSeq() != want.firstSeq {
		p.t.Fatalf("first seq %d, in process %d", got.GetFirstSeq(), want.firstSeq)
	}
	return got.GetData()
}

// sameState checks counters, mode-change logs and stored lines.
func (p *pair) sameState() {
	p.t.Helper()
	st, err := p.remote.Stats(context.Background())
	if err != nil {
		p.t.Fatal(err)
	}
	want := wire.Stats(p.local.Stats())
	for _, c := range p.local.ModeChanges() {
		want.Log = append(want.Log, wire.ModeChange(c))
	}
	// The host runtime's accounting: every line transaction issued, failed
	// ones included; the client encoded nothing through the service.
	wantHost := &pb.HostAccounting{WriteLines: p.writes, ReadLines: p.reads, Transactions: p.writes + p.reads, PayloadBytes: 64 * p.writes}
	if !proto.Equal(st.GetHost(), wantHost) {
		p.t.Fatalf("host accounting %v, want %v", st.GetHost(), wantHost)
	}
	st.Regions, st.Host = nil, nil
	if fmt.Sprint(st) != fmt.Sprint(want) {
		p.t.Fatalf("state differs:\nservice    %v\nin process %v", st, want)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestSec6OverSocket is the paper's Sec. 6 packet test through the service:
// W workers' sign packets read back under every mode give the in-process
// controller's bytes, and those bytes are the closed forms (identity: as
// written; G-Binary: popcount c; G-Ternary: sgn(2c-W), zero on element mod
// 3 == 2). The naive read-equals-write oracle passes identity and bypass
// and flags the transformed modes.
func TestSec6OverSocket(t *testing.T) { eachPath(t, testSec6) }

func testSec6(t *testing.T, path string) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	for _, w := range []int{1, 5, 8} {
		t.Run(fmt.Sprintf("W=%d", w), func(t *testing.T) {
			const lines = 1024
			p := newPair(t, c, lines*cxl.LineBytes, path)
			id := p.mapRegion(cxl.Region{Name: "sec6", Size: lines * cxl.LineBytes, Workers: w, Layout: lowbit.ElementMajor, Gate: lowbit.PaperGate})
			rng := rand.New(rand.NewPCG(uint64(w), 6))
			written := randBytes(rng, lines*cxl.LineBytes)
			p.batch(client.WriteOp(0, written))
			for ts, m := range cxl.Modes() {
				got := p.batch(client.SetModeOp(id, m, int64(ts)), client.ReadOp(0, lines))
				naive := 0
				for l := range lines {
					if !bytes.Equal(got[l*64:(l+1)*64], written[l*64:(l+1)*64]) {
						naive++
					}
				}
				for e, b := range written {
					c := bits.OnesCount8(b & byte(1<<w-1))
					want := b
					switch m {
					case cxl.Aggregate(lowbit.Binary):
						want = byte(c)
					case cxl.Aggregate(lowbit.Ternary):
						want = byte(int8(sgn(2*c - w)))
						if e%3 == 2 {
							want = 0
						}
					}
					if got[e] != want {
						t.Fatalf("%v element %d: %d, closed form %d", m, e, got[e], want)
					}
				}
				if m.LowBit() != (naive > 0) {
					t.Errorf("%v: naive oracle flags %d lines", m, naive)
				}
			}
			p.sameState()
		})
	}
}

func sgn(a int) int {
	switch {
	case a > 0:
		return 1
	case a < 0:
		return -1
	}
	return 0
}

// TestLatchAtTransactionBoundary: in one batch, a read accepted before a
// set_mode completes under the old mode and one after under the new, for
// every ordered pair of modes and both layouts; the logged change sits
// between their sequence numbers.
func TestLatchAtTransactionBoundary(t *testing.T) { eachPath(t, testLatch) }

func testLatch(t *testing.T, path string) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	for _, lay := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		p := newPair(t, c, 1<<16, path)
		r := cxl.Region{Name: "latch", Workers: 5, Layout: lay, Gate: lowbit.PaperGate}
		r.Size = uint64(r.Slabs()) * cxl.LineBytes
		id := p.mapRegion(r)
		rng := rand.New(rand.NewPCG(1, uint64(lay)))
		p.batch(client.WriteOp(0, randBytes(rng, int(r.Size))))
		for _, from := range cxl.Modes() {
			for _, to := range cxl.Modes() {
				if from == to || (lay == lowbit.WorkerMajor && !(from.LowBit() && to.LowBit())) {
					continue // worker-major views are unmapped outside low-bit modes (an error case, below)
				}
				p.batch(client.SetModeOp(id, from, 0))
				resp, err := p.transact(client.ReadOp(r.ViewAddr(0, 0), 1), client.SetModeOp(id, to, 7), client.ReadOp(r.ViewAddr(0, 0), 1))
				want := p.runLocal([]*pb.Op{client.ReadOp(r.ViewAddr(0, 0), 1), client.SetModeOp(id, to, 7), client.ReadOp(r.ViewAddr(0, 0), 1)})
				if err != nil {
					t.Fatal(err)
				}
				modes, _, err := client.ReadLines(resp, 2)
				if err != nil || fmt.Sprint(modes) != fmt.Sprint([]cxl.Mode{from, to}) || !bytes.Equal(resp.GetData(), want.data) {
					t.Fatalf("%v %v->%v: modes %v (%v)", lay, from, to, modes, err)
				}
				st, _ := p.remote.Stats(context.Background())
				last := st.GetLog()[len(st.GetLog())-1]
				if last.GetAfterSeq() != resp.GetFirstSeq() || last.GetTime() != 7 {
					t.Fatalf("%v %v->%v: change logged after seq %d, first read seq %d", lay, from, to, last.GetAfterSeq(), resp.GetFirstSeq())
				}
			}
		}
		p.sameState()
	}
}

// TestSweepsOverSocket: random regions beyond the paper (W up to lowbit.MaxWorkers, both
// layouts, every gate kind, random bases and element offsets), random
// payloads, then reads of every line of the footprint in random order
// with random mode switches between them, all in batches: every response
// equals the in-process controller's, and so does the final state.
func TestSweepsOverSocket(t *testing.T) { eachPath(t, testSweeps) }

func testSweeps(t *testing.T, path string) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	n := 24
	if testing.Short() {
		n = 8
	}
	for i := range n {
		rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
		r := randomRegion(rng)
		p := newPair(t, c, r.End()+4*cxl.LineBytes, path)
		id := p.mapRegion(r)
		p.batch(client.WriteOp(r.Base, randBytes(rng, int(r.Size))))
		nl := int((r.End() - r.Base) / cxl.LineBytes)
		var ops []*pb.Op
		for _, l := range rng.Perm(nl) {
			if rng.IntN(4) == 0 {
				ops = append(ops, client.SetModeOp(id, cxl.Mode(2+rng.IntN(2)), int64(l)))
			}
			ops = append(ops, client.ReadOp(r.Base+uint64(l)*cxl.LineBytes, 1))
		}
		p.batch(ops...)
		p.sameState()
	}
}

func randomRegion(rng *rand.Rand) cxl.Region {
	r := cxl.Region{Layout: lowbit.Layout(rng.IntN(2)), Element0: rng.IntN(4096), Mode: cxl.Aggregate(lowbit.Binary)}
	if r.Layout == lowbit.ElementMajor {
		r.Workers = 1 + rng.IntN(lowbit.MaxPacketWorkers)
	} else {
		r.Workers = 1 + rng.IntN(lowbit.MaxWorkers)
	}
	switch rng.IntN(4) {
	case 0:
		r.Gate = lowbit.PaperGate
	case 1:
		r.Gate = lowbit.Gate{Kind: lowbit.GatePattern, Period: 2 + rng.IntN(63)}
	case 2:
		r.Gate = lowbit.Gate{Kind: lowbit.GateWorker}
	case 3:
		r.Gate = lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 1 + rng.IntN(2*r.Workers)}
	}
	lines := 1 + rng.IntN(16)
	r.Base = cxl.LineBytes * uint64(rng.IntN(64))
	r.Size = uint64(r.Slabs()*lines) * cxl.LineBytes
	r.Name = fmt.Sprintf("W=%d %v gate %v", r.Workers, r.Layout, r.Gate)
	return r
}

// TestConcurrentWriters: W client goroutines each write their worker's
// slab of a worker-major region through one connection, in batches, while
// a control goroutine flips the mode; the aggregate read afterwards equals
// the in-process controller's with the same payloads written one worker
// after another.
func TestConcurrentWriters(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	const w, lines = 8, 256
	p := newPair(t, c, 1<<20, viaGRPC)
	r := cxl.Region{Name: "workers", Size: w * lines * cxl.LineBytes, Workers: w, Layout: lowbit.WorkerMajor, Gate: lowbit.PaperGate, Mode: cxl.Aggregate(lowbit.Binary)}
	id := p.mapRegion(r)
	rng := rand.New(rand.NewPCG(8, 8))
	slabs := make([][]byte, w)
	for k := range slabs {
		slabs[k] = randBytes(rng, lines*cxl.LineBytes)
	}
	var wg sync.WaitGroup
	errs := make(chan error, w+1)
	for k := range w {
		wg.Go(func() {
			for l := 0; l < lines; l += 32 {
				addr := r.SignAddr(k, l)
				if err := p.remote.Write(context.Background(), addr, slabs[k][l*64:(l+32)*64]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for j := range 16 {
			if err := p.remote.SetMode(context.Background(), id, cxl.Mode(j%cxl.NumModes), int64(j)); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for k := range w {
		for l := range lines {
			p.local.WriteLine(0, r.SignAddr(k, l), slabs[k][l*64:(l+1)*64])
		}
	}
	for _, m := range []cxl.Mode{cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Ternary)} {
		p.local.SetMode(cxl.RegionID(id), m, 100)
		p.remote.SetMode(context.Background(), id, m, 100)
		want := p.runLocal([]*pb.Op{client.ReadOp(r.ViewAddr(0, 0), 2*lines), client.ReadOp(r.Base, w*lines)})
		got, err := p.remote.Transact(context.Background(), client.ReadOp(r.ViewAddr(0, 0), 2*lines), client.ReadOp(r.Base, w*lines))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.GetData(), want.data) {
			t.Fatalf("%v: aggregate differs from in-process cxl", m)
		}
	}
}
