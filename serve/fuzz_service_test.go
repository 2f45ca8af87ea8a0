package serve_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/serve"
)

// fuzzMethods are the calls FuzzService sends, each with a fresh request
// of its type and a function that points the request at the fuzzing
// connection's device and session.
var fuzzMethods = []struct {
	name string
	req  func() proto.Message
	own  func(m proto.Message, dev, sess uint64)
}{
	{"/nfabric.v1.Controller/OpenDevice", func() proto.Message { return &pb.OpenDeviceRequest{} }, func(proto.Message, uint64, uint64) {}},
	{"/nfabric.v1.Controller/MapRegion", func() proto.Message { return &pb.MapRegionRequest{} }, func(m proto.Message, d, _ uint64) { m.(*pb.MapRegionRequest).Device = d }},
	{"/nfabric.v1.Controller/UnmapRegion", func() proto.Message { return &pb.UnmapRegionRequest{} }, func(m proto.Message, d, _ uint64) { m.(*pb.UnmapRegionRequest).Device = d }},
	{"/nfabric.v1.Controller/Transact", func() proto.Message { return &pb.TransactRequest{} }, func(m proto.Message, d, _ uint64) { m.(*pb.TransactRequest).Device = d }},
	{"/nfabric.v1.Controller/SetMode", func() proto.Message { return &pb.SetModeRequest{} }, func(m proto.Message, d, _ uint64) { m.(*pb.SetModeRequest).Device = d }},
	{"/nfabric.v1.Controller/GetMode", func() proto.Message { return &pb.GetModeRequest{} }, func(m proto.Message, d, _ uint64) { m.(*pb.GetModeRequest).Device = d }},
	{"/nfabric.v1.Controller/GetStats", func() proto.Message { return &pb.GetStatsRequest{} }, func(m proto.Message, d, _ uint64) { m.(*pb.GetStatsRequest).Device = d }},
	{"/nfabric.v1.Controller/OpenShared", func() proto.Message { return &pb.OpenSharedRequest{} }, func(proto.Message, uint64, uint64) {}},
	{"/nfabric.v1.Controller/CloseShared", func() proto.Message { return &pb.CloseSharedRequest{} }, func(proto.Message, uint64, uint64) {}},
	{"/nfabric.v1.Control/OpenSession", func() proto.Message { return &pb.OpenSessionRequest{} }, func(proto.Message, uint64, uint64) {}},
	{"/nfabric.v1.Control/Send", func() proto.Message { return &pb.SendRequest{} }, func(m proto.Message, _, s uint64) { m.(*pb.SendRequest).Session = s }},
	{"/nfabric.v1.Control/Status", func() proto.Message { return &pb.StatusRequest{} }, func(m proto.Message, _, s uint64) { m.(*pb.StatusRequest).Session = s }},
	{"/nfabric.v1.Control/Dump", func() proto.Message { return &pb.DumpRequest{} }, func(m proto.Message, _, s uint64) { m.(*pb.DumpRequest).Session = s }},
	{"/nfabric.v1.Control/Replay", func() proto.Message { return &pb.SessionDump{} }, func(proto.Message, uint64, uint64) {}},
	{"/nfabric.v1.Control/Forecast", func() proto.Message { return &pb.ForecastRequest{} }, func(proto.Message, uint64, uint64) {}},
}

// fuzzConn is one in-process server (over bufconn) and a connection to it
// holding a device with a region and a session, shared by the inputs.
var fuzzConn struct {
	once      sync.Once
	conn      *grpc.ClientConn
	dev, sess uint64
	err       error
}

func fuzzTarget() (*grpc.ClientConn, uint64, uint64, error) {
	f := &fuzzConn
	f.once.Do(func() {
		lis := bufconn.Listen(1 << 20)
		srv := serve.New(serve.Options{MaxMessageBytes: 1 << 20, MaxDeviceBytes: 1 << 22, MaxDevices: 16, MaxSessions: 16, MaxRegions: 16, MaxModeChanges: 1024})
		go srv.Serve(lis)
		f.conn, f.err = grpc.NewClient("passthrough:///fuzz", grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
		if f.err != nil {
			return
		}
		ctx := context.Background()
		d, err := pb.NewControllerClient(f.conn).OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 16})
		if err != nil {
			f.err = err
			return
		}
		f.dev = d.GetDevice()
		if _, f.err = pb.NewControllerClient(f.conn).MapRegion(ctx, &pb.MapRegionRequest{Device: f.dev, Name: "r", Size: 4096, Mode: pb.Mode_MODE_G_BINARY}); f.err != nil {
			return
		}
		s, err := pb.NewControlClient(f.conn).OpenSession(ctx, &pb.OpenSessionRequest{Config: &pb.SessionConfig{Groups: []*pb.Group{{Name: "g", Parameters: 8}}, Warmup: wrapperspb.Int64(0)}})
		f.sess, f.err = s.GetSession(), err
	})
	return f.conn, f.dev, f.sess, f.err
}

// FuzzService sends arbitrary requests through the real server (codec,
// interceptors, handlers) in-process: the first byte picks the method and
// whether the bytes go as they are (malformed frames included) or decoded,
// pointed at the connection's device and session and re-encoded, so that
// validation is reached past the id lookup. Every reply is OK or a
// client's error, never INTERNAL or UNKNOWN (a panic or a bug), its
// message is short (echoed values are truncated), and the server keeps
// serving.
func FuzzService(f *testing.F) {
	seeds := []proto.Message{
		&pb.TransactRequest{Ops: []*pb.Op{{Op: &pb.Op_Read{Read: &pb.Read{Lines: 2}}}, {Op: &pb.Op_SetMode{SetMode: &pb.SetMode{Region: 1, Mode: pb.Mode_MODE_G_TERNARY}}}}},
		&pb.MapRegionRequest{Name: "x", Base: 8192, Size: 1024, Gate: "pattern:3"},
		&pb.SendRequest{Event: &pb.Event{Event: &pb.Event_Step{Step: &pb.StepEvent{Step: 1}}}},
		&pb.ForecastRequest{Model: "bert-large", Batch: 8},
	}
	idx := []byte{3, 1, 8, 12}
	for i, m := range seeds {
		b, _ := proto.Marshal(m)
		f.Add(append([]byte{idx[i] | 0x80}, b...))
		f.Add(append([]byte{idx[i]}, b...))
	}
	f.Add([]byte{0x06, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		conn, dev, sess, err := fuzzTarget()
		if err != nil {
			t.Fatal(err)
		}
		m := fuzzMethods[int(in[0]&0x7f)%len(fuzzMethods)]
		body := in[1:]
		if in[0]&0x80 != 0 {
			req := m.req()
			if proto.Unmarshal(body, req) != nil {
				return
			}
			m.own(req, dev, sess)
			if body, err = proto.Marshal(req); err != nil {
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var resp []byte
		err = conn.Invoke(ctx, m.name, &body, &resp, grpc.ForceCodec(rawCodec{}))
		st := status.Convert(err)
		switch st.Code() {
		case codes.Internal, codes.Unknown, codes.Unavailable, codes.DeadlineExceeded, codes.Unimplemented:
			t.Fatalf("%s: %v", m.name, err)
		}
		if len(st.Message()) > 4096 {
			t.Fatalf("%s: message of %d bytes", m.name, len(st.Message()))
		}
	})
}
