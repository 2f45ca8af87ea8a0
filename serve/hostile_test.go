package serve_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
)

// Regression tests of the service under a hostile client. Each failed on
// the code before its fix; see the commit messages.

// wantCode fails unless err has code c and, when field is not empty, a
// message that starts with field.
func wantCode(t *testing.T, what string, err error, c codes.Code, field string) *status.Status {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != c || !strings.HasPrefix(st.Message(), field) {
		t.Errorf("%s: %v %q, want %v starting %q", what, st.Code(), truncMsg(st.Message()), c, field)
	}
	return st
}

func truncMsg(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestLinesHintClamped: a 64-byte device with the largest lines_hint
// presizes no more than its capacity's lines (the old code built a page
// index for 2^28 lines: about 140 MB of Go heap for one device).
func TestLinesHintClamped(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	before := heapInUse()
	for range 4 {
		if _, err := c.OpenDevice(context.Background(), &pb.OpenDeviceRequest{CapacityBytes: 64, LinesHint: 1 << 28}); err != nil {
			t.Fatal(err)
		}
	}
	if grew := int64(heapInUse()) - int64(before); grew > 8<<20 {
		t.Errorf("4 devices of 64 bytes with lines_hint 2^28: heap grew %d MiB", grew>>20)
	}
}

// TestDeviceCount: devices beyond MaxDevices are refused, however small.
func TestDeviceCount(t *testing.T) {
	ts := startServer(t, serve.Options{MaxDevices: 3})
	c := ts.dial(t)
	ctx := context.Background()
	for i := range 4 {
		_, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64})
		if i < 3 && err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			wantCode(t, "4th device", err, codes.ResourceExhausted, "")
		}
	}
}

// TestNamesBounded: a region name or an event's group name longer than
// serve.MaxNameBytes is refused, and a refused event is not recorded.
func TestNamesBounded(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", serve.MaxNameBytes+1)
	_, err = d.Map(ctx, &pb.MapRegionRequest{Name: long, Size: 1024})
	wantCode(t, "long region name", err, codes.InvalidArgument, "name:")
	if _, err := d.Map(ctx, &pb.MapRegionRequest{Name: long[:serve.MaxNameBytes], Size: 1024}); err != nil {
		t.Errorf("name of %d bytes: %v", serve.MaxNameBytes, err)
	}
	sess, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}, Warmup: wrapperspb.Int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("g", 3<<20)
	_, err = c.Control.Send(ctx, &pb.SendRequest{Session: sess.ID, Event: &pb.Event{Event: &pb.Event_Diag{Diag: &pb.DiagEvent{Step: 1, Group: huge}}}})
	wantCode(t, "3 MB group name", err, codes.InvalidArgument, "event.diag.group")
	st, err := c.Control.Status(ctx, &pb.StatusRequest{Session: sess.ID})
	if err != nil || st.GetEvents() != 0 {
		t.Errorf("after the refused event: %d events recorded, %v", st.GetEvents(), err)
	}
	_, err = c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: long}}})
	wantCode(t, "long group in config", err, codes.InvalidArgument, "config.groups[0].name")
}

// alternate returns n set_mode ops that flip region r between two modes.
func alternate(r uint32, n int) []*pb.Op {
	ops := make([]*pb.Op, n)
	for i := range ops {
		m := cxl.Aggregate(lowbit.Binary)
		if i%2 == 1 {
			m = cxl.FP32Bypass
		}
		ops[i] = client.SetModeOp(r, m, int64(i))
	}
	return ops
}

// TestModeLogBounded: set_mode ops count against the batch limit, and the
// mode-change log stops at MaxModeChanges (old code: unbounded, and
// set_mode ops were not counted).
func TestModeLogBounded(t *testing.T) {
	ts := startServer(t, serve.Options{MaxMessageBytes: 1 << 16, MaxRegions: 8, MaxModeChanges: 100})
	c := ts.dial(t)
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Map(ctx, &pb.MapRegionRequest{Name: "r", Size: 1024})
	if err != nil {
		t.Fatal(err)
	}
	maxLines := 2 * (1 << 16) / cxl.LineBytes
	_, err = d.Transact(ctx, alternate(r.GetId(), maxLines+1)...)
	wantCode(t, "set_mode ops past the batch limit", err, codes.InvalidArgument, "ops")
	if _, err := d.Transact(ctx, alternate(r.GetId(), 100)...); err != nil {
		t.Fatalf("100 mode changes: %v", err)
	}
	_, err = d.Transact(ctx, alternate(r.GetId(), 1)...)
	wantCode(t, "101st change in a batch", err, codes.ResourceExhausted, "set_mode")
	err = d.SetMode(ctx, r.GetId(), cxl.Aggregate(lowbit.Ternary), 0)
	wantCode(t, "101st change by SetMode", err, codes.ResourceExhausted, "set_mode")
	st, err := d.Stats(ctx)
	if err != nil || len(st.GetLog()) != 100 {
		t.Errorf("log %d entries, %v; want 100", len(st.GetLog()), err)
	}
}

// TestRepliesFit: with a 64 KiB message limit, a device's mode-change
// log and a session's record stop growing before GetStats or Dump would
// exceed it (old code: both failed with RESOURCE_EXHAUSTED for the rest of
// the device's or session's life), and the full dump replays.
func TestRepliesFit(t *testing.T) {
	ts := startServer(t, serve.Options{MaxMessageBytes: 1 << 16, MaxRegions: 8})
	c := ts.dial(t)
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Map(ctx, &pb.MapRegionRequest{Name: "r", Size: 1024})
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for range 40 { // up to 8000 changes: old code's log outgrew 64 KiB
		_, err := d.Transact(ctx, alternate(r.GetId(), 200)...)
		if status.Code(err) == codes.ResourceExhausted {
			refused = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !refused {
		t.Error("8000 mode changes accepted under a 64 KiB message limit")
	}
	if _, err := d.Stats(ctx); err != nil {
		t.Errorf("GetStats with a full log: %v", err)
	}

	sess, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}, Warmup: wrapperspb.Int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	refused = false
	for step := int64(1); step < 20000; step++ {
		_, err := c.Control.Send(ctx, &pb.SendRequest{Session: sess.ID, Event: &pb.Event{Event: &pb.Event_NonFinite{NonFinite: &pb.NonFiniteEvent{Step: step, Group: "unknown group " + strings.Repeat("x", 200)}}}})
		if status.Code(err) == codes.ResourceExhausted {
			refused = true
			break
		}
	}
	if !refused {
		t.Error("20000 recorded events accepted under a 64 KiB message limit")
	}
	dump, err := sess.Dump(ctx)
	if err != nil {
		t.Fatalf("Dump of a full session: %v", err)
	}
	rep, err := c.Control.Replay(ctx, dump)
	if err != nil || !rep.GetMatches() {
		t.Errorf("replay of the full dump: %v %s", err, rep.GetMismatch())
	}
}

// TestEchoTruncated: a long bad value is echoed truncated in the message
// and the BadRequest detail (old code echoed all 8 MiB twice and the
// reply broke the connection).
func TestEchoTruncated(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	bad := strings.Repeat("z", 8<<20)
	_, err := c.Controller.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64, Gate: bad})
	st := wantCode(t, "8 MiB gate", err, codes.InvalidArgument, "gate")
	if len(st.Message()) > 1024 || !strings.Contains(st.Message(), "... (") {
		t.Errorf("message of %d bytes: %q", len(st.Message()), truncMsg(st.Message()))
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if len(v.GetDescription()) > 1024 {
					t.Errorf("detail description of %d bytes", len(v.GetDescription()))
				}
			}
		}
	}
	// The connection survives: the device opened next is served.
	if _, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64}); err != nil {
		t.Errorf("after the long error: %v", err)
	}
}

// TestFieldPaths: the paths of item 5 and the BadRequest count promise.
func TestFieldPaths(t *testing.T) {
	ts := startServer(t, serve.Options{MaxMessageBytes: 1 << 16})
	c := ts.dial(t)
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Transact(ctx, client.ReadOp(0, 1000))
	wantCode(t, "too many lines read", err, codes.InvalidArgument, "ops[0].read.lines:")
	_, err = c.Control.Forecast(ctx, &pb.ForecastRequest{Model: "bert-large", Batch: 1 << 21})
	wantCode(t, "batch out of range", err, codes.InvalidArgument, "batch:")
	ops := make([]*pb.Op, 100)
	for i := range ops {
		ops[i] = client.ReadOp(uint64(i)*cxl.LineBytes+3, 1)
	}
	_, err = d.Transact(ctx, ops...)
	st := wantCode(t, "100 bad ops", err, codes.InvalidArgument, "ops[0].read.addr")
	if !strings.Contains(st.Message(), "99 more bad fields; the BadRequest detail lists the first 64") {
		t.Errorf("message %q", st.Message())
	}
	for _, det := range st.Details() {
		if br, ok := det.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) != 64 {
			t.Errorf("detail lists %d", len(br.GetFieldViolations()))
		}
	}
}

// rawCodec sends bytes as they are, to put a malformed frame on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestMalformedFrame: bytes that are not protobuf get INVALID_ARGUMENT
// (grpc's own answer is INTERNAL), and the server keeps serving.
func TestMalformedFrame(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	for _, method := range []string{"/nfabric.v1.Controller/GetStats", "/nfabric.v1.Control/Forecast", "/grpc.health.v1.Health/Check"} {
		req, resp := []byte{0xff, 0xff, 0xff}, []byte(nil)
		err := c.Conn().Invoke(ctx, method, &req, &resp, grpc.ForceCodec(rawCodec{}))
		wantCode(t, method, err, codes.InvalidArgument, "request:")
	}
	if _, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64}); err != nil {
		t.Errorf("after malformed frames: %v", err)
	}
}

// TestBearerCaseInsensitive: "bearer", "BEARER" and "Bearer" all carry
// the token (RFC 7235: the scheme is case-insensitive).
func TestBearerCaseInsensitive(t *testing.T) {
	const tok = "0123456789abcdef-token"
	addr := serveTCP(t, serve.Options{Token: tok})
	c, err := client.Dial(addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", scheme+" "+tok)
		if _, err := c.Control.Forecast(ctx, &pb.ForecastRequest{Model: "bert-large"}); err != nil {
			t.Errorf("scheme %q: %v", scheme, err)
		}
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic "+tok)
	_, err = c.Control.Forecast(ctx, &pb.ForecastRequest{Model: "bert-large"})
	wantCode(t, "Basic scheme", err, codes.Unauthenticated, "")
}

// TestTokenFileMode: a token file others may read is refused.
func TestTokenFileMode(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o644, false}, {0o640, false}, {0o604, false}} {
		p := filepath.Join(dir, fmt.Sprintf("tok%o", c.mode))
		if err := os.WriteFile(p, []byte("0123456789abcdef-token\n"), c.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, c.mode)
		if _, err := serve.ReadToken(p); (err == nil) != c.ok {
			t.Errorf("mode %04o: %v, want ok=%v", c.mode, err, c.ok)
		}
	}
	if _, err := serve.ReadToken("/dev/zero"); err == nil {
		t.Error("/dev/zero accepted as a token file")
	}
}

// TestSocketOwnership: the default socket lives in a 0700 directory of
// its own, and clients refuse a socket another user owns or one in a
// directory others can write (old code: /tmp/nfabric-UID.sock, unchecked).
func TestSocketOwnership(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	if got, want := serve.DefaultSocket(), filepath.Join(xdg, "nfabric", "nfabric.sock"); got != want {
		t.Fatalf("default socket %s, want %s", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	def := serve.DefaultSocket()
	if want := filepath.Join(tmp, fmt.Sprintf("nfabric-%d", os.Geteuid()), "nfabric.sock"); def != want {
		t.Fatalf("default socket %s, want %s", def, want)
	}
	lis, err := serve.ListenUnix(def)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Dir(def))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("default directory: %v %v, want 0700", fi.Mode(), err)
	}
	if err := serve.CheckSocket(def); err != nil {
		t.Errorf("own socket: %v", err)
	}
	lis.Close()
	// A pre-existing default directory others can enter is refused.
	os.Chmod(filepath.Dir(def), 0o755)
	if l, err := serve.ListenUnix(def); err == nil {
		l.Close()
		t.Error("default directory of mode 0755 accepted")
	}

	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	sock := filepath.Join(open, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := serve.CheckSocket(sock); err == nil {
		t.Error("socket in a world-writable, non-sticky directory accepted")
	}
	if _, err := client.Dial("unix://"+sock, client.Options{}); err == nil {
		t.Error("client dialled a socket in a world-writable directory")
	}
	os.Chmod(open, 0o777|os.ModeSticky)
	if err := serve.CheckSocket(sock); err != nil {
		t.Errorf("own socket in a sticky directory: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Chown(sock, 4242, 4242)
		if err := serve.CheckSocket(sock); err == nil || !strings.Contains(err.Error(), "uid 4242") {
			t.Errorf("socket of uid 4242: %v", err)
		}
	}
}

// unreadCall starts a Transact that reads lines on a connection with
// 64 KiB windows and never reads the reply, so that the call stays in
// flight on the server.
func unreadCall(t *testing.T, conn *grpc.ClientConn, dev uint64, lines int) {
	t.Helper()
	st, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/nfabric.v1.Controller/Transact")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&pb.TransactRequest{Device: dev, Ops: []*pb.Op{client.ReadOp(0, lines)}}); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
}

// TestConnectionAndStreamLimits: a connection past MaxConnections waits
// until one closes, and a call past MaxStreams on a connection waits
// until one of its calls' replies is written (old code: no bound, so 40
// unread 15 MB replies pinned 1.7 GB).
func TestConnectionAndStreamLimits(t *testing.T) {
	ts := startServer(t, serve.Options{MaxConnections: 1, MaxStreams: 1})
	conn, err := grpc.NewClient(ts.target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctrl := pb.NewControllerClient(conn)
	d, err := ctrl.OpenDevice(context.Background(), &pb.OpenDeviceRequest{CapacityBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	unreadCall(t, conn, d.GetDevice(), 8192)
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = ctrl.GetStats(ctx, &pb.GetStatsRequest{Device: d.GetDevice()})
	wantCode(t, "second call with one unread", err, codes.DeadlineExceeded, "")

	other, err := client.Dial(ts.target, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	_, err = other.Control.Forecast(ctx2, &pb.ForecastRequest{Model: "bert-large"})
	if code := status.Code(err); code != codes.DeadlineExceeded && code != codes.Unavailable {
		t.Errorf("second connection: %v, want it kept waiting", err)
	}
	conn.Close()
	ctx3, cancel3 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel3()
	if _, err := other.Control.Forecast(ctx3, &pb.ForecastRequest{Model: "bert-large"}, grpc.WaitForReady(true)); err != nil {
		t.Errorf("second connection once the first closed: %v", err)
	}
}
