package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// TestSharedMatchesGRPC: the same random batches (writes, reads and mode
// writes on random regions) on two devices, one through messages and one
// through a shared buffer, give identical read bytes, modes, flags and
// sequence numbers, and identical device state (counters, region table,
// mode-change log, host accounting, every stored line read back).
func TestSharedMatchesGRPC(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	for i := range 8 {
		rng := rand.New(rand.NewPCG(uint64(i), 0x5a5))
		r := randomRegion(rng)
		capacity := r.End() + 8*cxl.LineBytes
		var devs [2]*client.Device
		for k := range devs {
			d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: capacity})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Map(ctx, &pb.MapRegionRequest{Name: r.Name, Base: r.Base, Size: r.Size, Mode: wire.Mode(r.Mode),
				Workers: uint32(r.Workers), Layout: wire.Layout(r.Layout), Gate: r.Gate.String(), Element0: uint64(r.Element0)}); err != nil {
				t.Fatal(err)
			}
			devs[k] = d
		}
		sh, err := c.OpenShared(ctx, pairBufferBytes)
		if err != nil {
			t.Fatal(err)
		}
		nl := int(capacity / cxl.LineBytes)
		for range 6 {
			var ops []*pb.Op
			for range 1 + rng.IntN(12) {
				l := rng.IntN(nl)
				n := 1 + rng.IntN(min(8, nl-l))
				addr := uint64(l) * cxl.LineBytes
				switch rng.IntN(3) {
				case 0:
					ops = append(ops, client.WriteOp(addr, randBytes(rng, n*cxl.LineBytes)))
				case 1:
					ops = append(ops, client.ReadOp(addr, n))
				case 2:
					ops = append(ops, client.SetModeOp(0, cxl.Modes()[rng.IntN(len(cxl.Modes()))], int64(l)))
				}
			}
			want, werr := devs[0].Transact(ctx, ops...)
			conv, reads := toShared(t, sh, ops)
			got, gerr := devs[1].Transact(ctx, conv...)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("batch %d: grpc %v, shared %v", i, werr, gerr)
			}
			if werr != nil {
				continue // a bad transaction (a view write, say): the state comparison below still holds
			}
			var data []byte
			for _, rd := range reads {
				data = append(data, sh.Mem[rd[0]:rd[0]+rd[1]]...)
			}
			if !bytes.Equal(data, want.GetData()) || len(got.GetData()) != 0 {
				t.Fatalf("batch %d: shared read bytes differ from grpc's", i)
			}
			got.Data, want.Data = nil, nil
			if !proto.Equal(got, want) {
				t.Fatalf("batch %d: shared response %v, grpc %v", i, got, want)
			}
		}
		var st [2]*pb.GetStatsResponse
		var lines [2][]byte
		for k, d := range devs {
			if st[k], err = d.Stats(ctx); err != nil {
				t.Fatal(err)
			}
			// Every stored line, as stored bytes (plain memory once unmapped).
			if _, err := c.Controller.UnmapRegion(ctx, &pb.UnmapRegionRequest{Device: d.ID, Region: 0}); err != nil {
				t.Fatal(err)
			}
			if lines[k], _, err = d.Read(ctx, 0, nl); err != nil {
				t.Fatal(err)
			}
		}
		if !proto.Equal(st[0], st[1]) || !bytes.Equal(lines[0], lines[1]) {
			t.Fatalf("region %v: state differs:\ngrpc   %v\nshared %v", r, st[0], st[1])
		}
		if err := sh.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSharedSnapshot is the consistency rule: a batch's shared writes are
// copied from the buffer before its first transaction, so a shared read
// earlier in the batch that lands on the same buffer lines does not change
// what a later shared write stores; and bytes stored into the buffer
// after the call do not reach the device.
func TestSharedSnapshot(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	// More read lines than one chunk of the device batch (256), so that
	// the read's first lines reach the buffer before the write is
	// accepted: only the snapshot keeps them out of the write.
	const n = 300
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 2 * n * cxl.LineBytes})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := c.OpenShared(ctx, n*cxl.LineBytes)
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte{0x5c}, cxl.LineBytes)
	other := bytes.Repeat([]byte{0xa3}, n*cxl.LineBytes)
	if err := d.Write(ctx, 0, other); err != nil {
		t.Fatal(err)
	}
	copy(sh.Mem, line)
	// Read lines [0, n) (0xa3) into the buffer from offset 0, then write
	// the buffer's first line to line n: it must get the snapshot's 0x5c.
	if _, err := d.Transact(ctx, client.SharedReadOp(sh.ID, 0, 0, n), client.SharedWriteOp(sh.ID, 0, n*cxl.LineBytes, 1)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sh.Mem[:n*cxl.LineBytes], other) {
		t.Fatalf("shared read put %x", sh.Mem[:4])
	}
	got, _, err := d.Read(ctx, n*cxl.LineBytes, 1)
	if err != nil || !bytes.Equal(got, line) {
		t.Fatalf("line %d is %x (err %v), want the snapshot's %x", n, got[:4], err, line[:4])
	}
	copy(sh.Mem, bytes.Repeat([]byte{0xff}, 64)) // after the call: not committed
	if got, _, _ = d.Read(ctx, n*cxl.LineBytes, 1); !bytes.Equal(got, line) {
		t.Fatalf("a store after the call reached the device: %x", got[:4])
	}
}

// sharedMaps counts this process's mappings of shared buffers.
func sharedMaps(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	return strings.Count(string(b), "memfd:nfabric-shared")
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(es)
}

// TestSharedLifecycle: CloseShared, the connection's end and the server's
// shutdown each unmap the server's side and close its descriptor, and free
// the buffer's share of the limits; a batch naming a closed buffer is
// NOT_FOUND.
func TestSharedLifecycle(t *testing.T) {
	ctx := context.Background()
	maps0, fds0 := sharedMaps(t), openFDs(t)
	ts := startServer(t, serve.Options{})
	a := ts.dial(t)
	d, err := a.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := a.OpenShared(ctx, 8192)
	if err != nil {
		t.Fatal(err)
	}
	waitUsage(t, ts.srv, serve.Usage{Devices: 1, DeviceBytes: 4096, Shared: 1, SharedBytes: 8192})
	if n := sharedMaps(t) - maps0; n != 2 { // the server's and this client's
		t.Fatalf("%d mappings of the buffer, want 2", n)
	}
	id := sh.ID
	if err := sh.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitUsage(t, ts.srv, serve.Usage{Devices: 1, DeviceBytes: 4096})
	if n := sharedMaps(t) - maps0; n != 0 {
		t.Fatalf("%d mappings after CloseShared", n)
	}
	_, err = d.Transact(ctx, client.SharedWriteOp(id, 0, 0, 1))
	wantCode(t, "closed buffer", err, codes.NotFound, "buffer")

	// The connection's end: a buffer whose ticket was never redeemed too.
	if _, err := a.OpenShared(ctx, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: 4096}); err != nil {
		t.Fatal(err)
	}
	waitUsage(t, ts.srv, serve.Usage{Devices: 1, DeviceBytes: 4096, Shared: 2, SharedBytes: 8192})
	a.Close()
	waitUsage(t, ts.srv, serve.Usage{})
	if n := sharedMaps(t) - maps0; n != 1 { // the client's mapping of the first stays until it unmaps
		t.Fatalf("%d mappings after the connection closed, want the client's 1", n)
	}

	// The server's shutdown.
	ts2 := startServer(t, serve.Options{})
	b := ts2.dial(t)
	sh2, err := b.OpenShared(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ts2.srv.Shutdown(sctx)
	waitUsage(t, ts2.srv, serve.Usage{})
	copy(sh2.Mem, "still mapped here") // the client's mapping stays valid memory
	if n := sharedMaps(t) - maps0; n != 2 {
		t.Fatalf("%d mappings after shutdown, want the client's 2", n)
	}
	unix.Munmap(sh2.Mem)
	if n := openFDs(t) - fds0; n > 8 { // the connections' sockets at most
		t.Errorf("%d more descriptors open than at the start", n)
	}
}

// TestSharedOnlyOverUnix: a TCP client (here with a token) cannot open
// shared memory, and the Go client refuses without calling.
func TestSharedOnlyOverUnix(t *testing.T) {
	const tok = "0123456789abcdef-token"
	addr := serveTCP(t, serve.Options{Token: tok})
	c, err := client.Dial(addr, client.Options{Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Controller.OpenShared(context.Background(), &pb.OpenSharedRequest{Bytes: 4096})
	wantCode(t, "OpenShared over TCP", err, codes.FailedPrecondition, "shared memory is served only over the Unix socket")
	if _, err := c.OpenShared(context.Background(), 4096); err == nil {
		t.Fatal("client.OpenShared over TCP succeeded")
	}
}

// TestSharedHostile: bad sizes and limits, ranges outside the buffer, a
// buffer of another connection, bad and reused tickets, junk and silent
// handoff connections, descriptors sent to the server, a client that
// truncates its descriptor or unmaps: each fails alone, changes nothing,
// and another client's shared batch keeps working throughout.
func TestSharedHostile(t *testing.T) {
	ts := startServer(t, serve.Options{MaxSharedBuffers: 4, MaxSharedBytes: 1 << 20})
	ctx := context.Background()
	good := ts.dial(t)
	gd, err := good.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	gsh, err := good.OpenShared(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte{0x3c}, 128)
	stillWorks := func(what string) {
		t.Helper()
		copy(gsh.Mem, payload)
		if _, err := gd.Transact(ctx, client.SharedWriteOp(gsh.ID, 0, 0, 2), client.SharedReadOp(gsh.ID, 1024, 0, 2)); err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
		if !bytes.Equal(gsh.Mem[1024:1024+128], payload) {
			t.Fatalf("after %s: read back %x", what, gsh.Mem[1024:1028])
		}
	}
	bad := ts.dial(t)
	bd, err := bad.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []uint64{0, 63, 1<<20 + 64} {
		_, err := bad.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: n})
		wantCode(t, "bytes", err, codes.InvalidArgument, "bytes")
	}
	bsh, err := bad.OpenShared(ctx, 1<<19)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: 1 << 19})
	wantCode(t, "past the byte limit", err, codes.ResourceExhausted, "bytes")
	for range 2 {
		if _, err := bad.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: 64}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = bad.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: 64})
	wantCode(t, "past the buffer limit", err, codes.ResourceExhausted, "the server holds 4 shared buffers")
	stillWorks("the limits")

	// Ranges: each names its op's field; nothing is stored.
	for _, tc := range []struct {
		op    *pb.Op
		code  codes.Code
		field string
	}{
		{client.SharedWriteOp(bsh.ID, 1<<19-64, 0, 2), codes.InvalidArgument, "ops[0].shared_write.lines"},
		{client.SharedReadOp(bsh.ID, 1<<19, 0, 1), codes.InvalidArgument, "ops[0].shared_read.lines"},
		{client.SharedWriteOp(bsh.ID, 1<<63, 0, 1), codes.InvalidArgument, "ops[0].shared_write"},
		{client.SharedWriteOp(bsh.ID, 32, 0, 1), codes.InvalidArgument, "ops[0].shared_write.offset"},
		{client.SharedWriteOp(bsh.ID, 0, 0, 0), codes.InvalidArgument, "ops[0].shared_write.lines"},
		{client.SharedWriteOp(bsh.ID, 0, 0, 1<<20), codes.InvalidArgument, "ops[0].shared_write.lines"},
		{client.SharedWriteOp(gsh.ID, 0, 0, 1), codes.NotFound, "buffer"}, // the other connection's
		{client.SharedWriteOp(bsh.ID, 0, 1<<20, 1), codes.InvalidArgument, "ops[0].shared_write.addr"},
	} {
		_, err := bd.Transact(ctx, tc.op)
		wantCode(t, tc.field, err, tc.code, tc.field)
	}
	if st, _ := bd.Stats(ctx); st.GetHost().GetWriteLines() != 1 { // only the out-of-range address was issued
		t.Errorf("bad ranges issued %d writes, want 1", st.GetHost().GetWriteLines())
	}
	stillWorks("bad ranges")

	// Handoffs that fail: no descriptor, an error line.
	handoff := func(b []byte) (string, int) {
		t.Helper()
		conn, err := net.Dial("unix", ts.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write(b)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf, oob := make([]byte, 512), make([]byte, unix.CmsgSpace(16))
		n, oobn, _, _, _ := conn.(*net.UnixConn).ReadMsgUnix(buf, oob)
		fds := 0
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				f, _ := unix.ParseUnixRights(&m)
				for _, fd := range f {
					unix.Close(fd)
				}
				fds += len(f)
			}
		}
		return string(buf[:n]), fds
	}
	bad.Controller.CloseShared(ctx, &pb.CloseSharedRequest{Buffer: bsh.ID})
	tk, err := bad.Controller.OpenShared(ctx, &pb.OpenSharedRequest{Bytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	wrong := append([]byte(serve.HandoffMagic), bytes.Repeat([]byte{1}, serve.TicketBytes)...)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"wrong ticket", wrong, "error: unknown or used ticket"},
		{"short ticket", append([]byte(serve.HandoffMagic), 1, 2, 3), "error: reading the ticket"},
		{"junk", []byte("GET / HTTP/1.1\r\n\r\n"), ""},
		{"the right ticket", append([]byte(serve.HandoffMagic), tk.GetTicket()...), "Y"},
		{"the ticket again", append([]byte(serve.HandoffMagic), tk.GetTicket()...), "error: unknown or used ticket"},
	} {
		if tc.name == "short ticket" {
			// The server waits for the rest up to its timeout: close
			// our side instead of waiting.
			conn, _ := net.Dial("unix", ts.sock)
			conn.Write(tc.in)
			conn.(*net.UnixConn).CloseWrite()
			buf := make([]byte, 512)
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _ := conn.Read(buf)
			conn.Close()
			if !strings.HasPrefix(string(buf[:n]), tc.want) {
				t.Errorf("%s: %q", tc.name, buf[:n])
			}
			continue
		}
		got, fds := handoff(tc.in)
		if wantFD := tc.want == "Y"; (fds == 1) != wantFD || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q with %d descriptors", tc.name, got, fds)
		}
		stillWorks(tc.name)
	}
	// A silent connection and one that sends descriptors: others go on,
	// and the server holds none of the descriptors sent.
	silent, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	stillWorks("a silent connection")
	fds0 := openFDs(t)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	sender, _ := net.Dial("unix", ts.sock)
	sender.(*net.UnixConn).WriteMsgUnix(append([]byte(serve.HandoffMagic), bytes.Repeat([]byte{2}, serve.TicketBytes)...), unix.UnixRights(p[0], p[1]), nil)
	unix.Close(p[0])
	unix.Close(p[1])
	buf := make([]byte, 512)
	sender.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := sender.Read(buf)
	sender.Close()
	if !strings.HasPrefix(string(buf[:n]), "error:") {
		t.Errorf("descriptors sent: %q", buf[:n])
	}
	time.Sleep(50 * time.Millisecond)
	if n := openFDs(t) - fds0; n > 0 {
		t.Errorf("%d descriptors more after a client sent 2", n)
	}
	stillWorks("descriptors sent to the server")

	// A client that tries to shrink or grow its buffer (sealed), then
	// unmaps it: the server's side is unaffected.
	bad.Controller.CloseShared(ctx, &pb.CloseSharedRequest{Buffer: tk.GetBuffer()})
	mine, err := bad.OpenShared(ctx, 4096)
	if err != nil {
		t.Fatal(err)
	}
	copy(mine.Mem, payload)
	fd := memfdOf(t, mine.Mem)
	if fd >= 0 {
		if err := unix.Ftruncate(fd, 0); err == nil {
			t.Error("the client shrank its buffer")
		}
		if err := unix.Ftruncate(fd, 1<<20); err == nil {
			t.Error("the client grew its buffer")
		}
		unix.Close(fd)
	}
	unix.Munmap(mine.Mem)
	mine.Mem = nil
	if _, err := bd.Transact(ctx, client.SharedWriteOp(mine.ID, 0, 0, 64), client.ReadOp(0, 2)); err != nil {
		t.Fatalf("after the client unmapped: %v", err)
	}
	if got, _, _ := bd.Read(ctx, 0, 2); !bytes.Equal(got, payload) {
		t.Fatalf("after the client unmapped: stored %x", got[:4])
	}
	stillWorks("a client that unmapped")
	hc := healthpb.NewHealthClient(good.Conn())
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
}

// memfdOf reopens the memfd behind a mapping through
// /proc/self/map_files (the client closed its descriptor after mapping),
// or returns -1 where that is not allowed.
func memfdOf(t *testing.T, mem []byte) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return -1
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&mem[0])))
	for _, ln := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(ln, start) && strings.Contains(ln, "memfd:nfabric-shared") {
			fd, err := unix.Open("/proc/self/map_files/"+strings.Fields(ln)[0], unix.O_RDWR, 0)
			if err != nil {
				t.Logf("cannot reopen the memfd (%v): truncation not tried", err)
				return -1
			}
			return fd
		}
	}
	return -1
}

// handoffTarget is one server on a Unix socket for FuzzHandoff, with a
// buffer whose ticket is never sent, shared by the inputs.
var handoffTarget struct {
	once sync.Once
	sock string
	c    *client.Client
	err  error
}

// FuzzHandoff sends arbitrary first bytes on a new connection to the
// server's Unix socket (the descriptor-handoff decoder and the gRPC
// classification in front of it): no descriptor ever comes back (no
// input holds the open buffer's ticket), a handoff with a ticket's worth
// of bytes gets an error line, and the server still answers calls.
func FuzzHandoff(f *testing.F) {
	f.Add([]byte(serve.HandoffMagic + "0123456789abcdef"))
	f.Add([]byte(serve.HandoffMagic))
	f.Add([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	f.Add([]byte("NFABRIC-SHM/1\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		h := &handoffTarget
		h.once.Do(func() {
			dir, err := os.MkdirTemp("", "nfabric-fuzz-")
			if err != nil {
				h.err = err
				return
			}
			h.sock = dir + "/nf.sock"
			lis, err := serve.ListenUnix(h.sock)
			if err != nil {
				h.err = err
				return
			}
			go serve.New(serve.Options{}).Serve(lis)
			if h.c, h.err = client.Dial("unix://"+h.sock, client.Options{}); h.err == nil {
				_, h.err = h.c.Controller.OpenShared(context.Background(), &pb.OpenSharedRequest{Bytes: 4096})
			}
		})
		if h.err != nil {
			t.Fatal(h.err)
		}
		conn, err := net.Dial("unix", h.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		uc := conn.(*net.UnixConn)
		uc.Write(in)
		uc.CloseWrite()
		uc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(16))
		n, oobn, _, _, _ := uc.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				fds, _ := unix.ParseUnixRights(&m)
				for _, fd := range fds {
					unix.Close(fd)
				}
			}
			t.Fatalf("input %q got %d bytes of descriptors", in, oobn)
		}
		if len(in) >= len(serve.HandoffMagic)+serve.TicketBytes && string(in[:len(serve.HandoffMagic)]) == serve.HandoffMagic && !strings.HasPrefix(string(buf[:n]), "error: ") {
			t.Fatalf("handoff %q: answer %q", in, buf[:n])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := healthpb.NewHealthClient(h.c.Conn()).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("after %q: %v", in, err)
		}
	})
}

// TestSharedCloseDuringCalls: batches naming two buffers in both orders
// run while the buffers are closed under them (and the connection then
// ends): every call succeeds or gets NOT_FOUND, none faults or hangs (the
// server unmaps only after the calls using a buffer finish, and a batch
// locks its buffers in id order), and the server serves on.
func TestSharedCloseDuringCalls(t *testing.T) {
	ts := startServer(t, serve.Options{})
	ctx := context.Background()
	const lines, bufBytes = 4096, 2 * 4096 * cxl.LineBytes
	for round := range 4 {
		c, err := client.Dial(ts.target, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: lines * cxl.LineBytes})
		if err != nil {
			t.Fatal(err)
		}
		var bufs [2]*client.Shared
		for k := range bufs {
			if bufs[k], err = c.OpenShared(ctx, bufBytes); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var done atomic.Int64
		errs := make(chan error, 64)
		for g := range 4 {
			a, b := bufs[g%2], bufs[1-g%2]
			wg.Go(func() {
				for range 1000 {
					_, err := d.Transact(ctx, client.SharedWriteOp(a.ID, 0, 0, lines), client.SharedReadOp(b.ID, 0, 0, lines), client.SharedReadOp(a.ID, bufBytes/2, 0, lines))
					if status.Code(err) == codes.NotFound {
						return
					}
					if err != nil {
						errs <- err
						return
					}
					done.Add(1)
				}
			})
		}
		// Close while calls are in flight: after a few have completed.
		for done.Load() < int64(4+round) {
			time.Sleep(100 * time.Microsecond)
		}
		for _, b := range bufs {
			if _, err := c.Controller.CloseShared(ctx, &pb.CloseSharedRequest{Buffer: b.ID}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, b := range bufs {
			unix.Munmap(b.Mem)
		}
		c.Close()
	}
	waitUsage(t, ts.srv, serve.Usage{})
	c := ts.dial(t)
	if _, err := c.OpenShared(ctx, 4096); err != nil {
		t.Fatal(err)
	}
}
