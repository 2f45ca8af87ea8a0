package serve

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/usage"
)

// Options configures a Server. Zero values take the defaults in
// DefaultOptions.
type Options struct {
	// MaxMessageBytes bounds a request and a response (default 16 MiB).
	MaxMessageBytes int
	// MaxConnections bounds the client connections served at once
	// (default 64); further ones wait in the listen backlog.
	MaxConnections int
	// MaxStreams bounds the calls in flight on one connection, a call
	// counting until its response is written (default 4).
	MaxStreams int
	// MaxDevices bounds the open devices of the server (default 64).
	MaxDevices int
	// MaxRegions bounds the mapped regions of one device (default 4096).
	MaxRegions int
	// MaxModeChanges bounds the mode-change log of one device
	// (default 65536 entries).
	MaxModeChanges int
	// MaxSessions bounds the open control sessions of the server
	// (default 256).
	MaxSessions int
	// MaxSessionEvents bounds the events one session records for Dump
	// (default 1 Mi).
	MaxSessionEvents int
	// MaxDeviceBytes bounds the sum of the open devices' capacities
	// (default 4 GiB).
	MaxDeviceBytes uint64
	// MaxSharedBuffers bounds the open shared-memory buffers of the
	// server (default 64), MaxSharedBytes the sum of their sizes
	// (default 1 GiB).
	MaxSharedBuffers int
	MaxSharedBytes   uint64
	// Token, when not empty, is the bearer token every call must carry
	// ("authorization: Bearer TOKEN").
	Token string
	// TLS, when not nil, serves TLS with this configuration (set ClientAuth
	// to tls.RequireAndVerifyClientCert for client certificates).
	TLS *tls.Config
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

// DefaultOptions returns the defaults of 'nfabric serve'.
func DefaultOptions() Options {
	return Options{MaxMessageBytes: 16 << 20, MaxConnections: 64, MaxStreams: 4, MaxDevices: 64, MaxRegions: 4096,
		MaxModeChanges: 1 << 16, MaxSessions: 256, MaxSessionEvents: 1 << 20, MaxDeviceBytes: 4 << 30,
		MaxSharedBuffers: 64, MaxSharedBytes: 1 << 30}
}

// Validate reports, as a usage error, options that cannot work together:
// a device's GetStats reply (its region table and mode-change log) must
// fit one message, so that GetStats never fails for size.
func (o Options) Validate() error {
	o = o.withDefaults()
	if need := statsBound(o.MaxRegions, o.MaxModeChanges); need > o.MaxMessageBytes {
		return usage.Errorf("a GetStats reply of %d regions and %d mode changes takes up to %d bytes, more than the message limit %d: lower the regions or mode changes, or raise the message limit",
			o.MaxRegions, o.MaxModeChanges, need, o.MaxMessageBytes)
	}
	return nil
}

// Bounds on encoded sizes, for the reply budgets. A region entry holds a
// name of at most MaxNameBytes and a dozen varints; a mode change five.
const (
	regionWireBytes     = MaxNameBytes + 128
	modeChangeWireBytes = 48
	statsFixedBytes     = 4096
)

// statsBound is the largest encoded GetStats reply of a device with at
// most regions regions and changes mode changes.
func statsBound(regions, changes int) int {
	return statsFixedBytes + regions*regionWireBytes + changes*modeChangeWireBytes
}

// MemoryBound is the documented bound on the memory a server with
// options o can be made to hold above its idle size, by row of the
// package documentation's limits table, in bytes.
type MemoryBound struct {
	Devices   uint64 // device memory, page indexes and device structures
	Tables    uint64 // region tables and mode-change logs
	Sessions  uint64 // session configurations, records and planes
	Transport uint64 // connections and the calls in flight on them
	Shared    uint64 // shared-memory buffers (their pages, once touched)
}

// Total is the sum of the rows.
func (b MemoryBound) Total() uint64 {
	return b.Devices + b.Tables + b.Sessions + b.Transport + b.Shared
}

// Bound returns the memory bound of a server with options o.
func Bound(o Options) MemoryBound {
	o = o.withDefaults().fit()
	return MemoryBound{
		Devices:   o.MaxDeviceBytes*gcHeadroom + uint64(o.MaxDevices)*deviceFixedBytes,
		Tables:    uint64(o.MaxDevices) * (uint64(o.MaxRegions)*regionHeldBytes + uint64(o.MaxModeChanges)*modeChangeHeldBytes),
		Sessions:  uint64(o.MaxSessions) * uint64(recordBytes(o)) * sessionHeldPerWireByte,
		Transport: uint64(o.MaxConnections) * (connFixedBytes + uint64(o.MaxStreams)*uint64(o.MaxMessageBytes)*streamHeldPerMessageByte),
		Shared:    o.MaxSharedBytes + uint64(o.MaxSharedBuffers)*sharedFixedBytes,
	}
}

// The memory factors of Bound, from TestLimitsRSS's peak resident sets
// (so the garbage collector's headroom is in them), rounded up.
const (
	gcHeadroom               = 2        // live device memory plus the garbage of the writes that filled it
	deviceFixedBytes         = 64 << 10 // a device's structures
	regionHeldBytes          = 4 << 10  // a region with a 256-byte name
	modeChangeHeldBytes      = 256      // a mode-change log entry, slice growth and GC headroom included
	sessionHeldPerWireByte   = 10       // a session record in memory, per encoded byte
	connFixedBytes           = 1 << 20  // a connection's buffers
	streamHeldPerMessageByte = 4        // a call in flight, per byte of the message limit
	sharedFixedBytes         = 4 << 10  // a shared buffer's structures and page tables
)

// MaxNameBytes bounds a region name and a control group name (in a
// session configuration or an event).
const MaxNameBytes = 256

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = d.MaxMessageBytes
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = d.MaxConnections
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = d.MaxStreams
	}
	if o.MaxDevices <= 0 {
		o.MaxDevices = d.MaxDevices
	}
	if o.MaxRegions <= 0 {
		o.MaxRegions = d.MaxRegions
	}
	if o.MaxModeChanges <= 0 {
		o.MaxModeChanges = d.MaxModeChanges
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = d.MaxSessions
	}
	if o.MaxSessionEvents <= 0 {
		o.MaxSessionEvents = d.MaxSessionEvents
	}
	if o.MaxDeviceBytes == 0 {
		o.MaxDeviceBytes = d.MaxDeviceBytes
	}
	if o.MaxSharedBuffers <= 0 {
		o.MaxSharedBuffers = d.MaxSharedBuffers
	}
	if o.MaxSharedBytes == 0 {
		o.MaxSharedBytes = d.MaxSharedBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// fit lowers MaxModeChanges, then MaxRegions, until Validate passes.
func (o Options) fit() Options {
	room := o.MaxMessageBytes - statsFixedBytes
	if statsBound(o.MaxRegions, o.MaxModeChanges) > o.MaxMessageBytes {
		o.MaxModeChanges = max(1, (room-o.MaxRegions*regionWireBytes)/modeChangeWireBytes)
	}
	if statsBound(o.MaxRegions, o.MaxModeChanges) > o.MaxMessageBytes {
		o.MaxRegions = max(1, (room-o.MaxModeChanges*modeChangeWireBytes)/regionWireBytes)
	}
	return o
}

// Server serves the Controller and Control services, health and
// reflection.
type Server struct {
	opts     Options
	needCert bool // calls must come with a verified client certificate
	log      *slog.Logger
	grpc     *grpc.Server
	health   *health.Server

	nextConn atomic.Uint64
	mu       sync.Mutex
	conns    map[uint64]*owner
	nextID   uint64
	devBytes uint64 // sum of open devices' capacities
	devices  int    // open devices
	sessions int    // open sessions

	shared      int    // open shared buffers
	sharedBytes uint64 // sum of their sizes
	tickets     map[[TicketBytes]byte]*sharedBuf
}

// owner is what one client connection holds; closed is set when the
// connection has ended and its resources were released.
type owner struct {
	peer     string
	devices  map[uint64]*device
	sessions map[uint64]*session
	shared   map[uint64]*sharedBuf
	closed   bool
}

// owned returns the calling connection's resource id from the map pick
// selects (its devices or its sessions), with the server locked, or a
// NotFound status naming kind. With a non-nil release it also removes the
// resource and calls release on it, still under the lock, so the caller
// can return what the resource held.
func owned[T any](s *Server, ctx context.Context, kind string, id uint64, pick func(*owner) map[uint64]*T, release func(*T)) (*T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	m := pick(o)
	r := m[id]
	if r == nil {
		return nil, notFound(kind, id)
	}
	if release != nil {
		delete(m, id)
		release(r)
	}
	return r, nil
}

// Usage is a snapshot of what the server holds.
type Usage struct {
	Connections, Devices, Sessions, Shared int
	DeviceBytes, SharedBytes               uint64
}

// New returns a server; serve it with Serve. Options that fail Validate
// are fitted: New lowers MaxModeChanges, then MaxRegions, until they pass.
func New(opts Options) *Server {
	opts = opts.withDefaults().fit()
	s := &Server{opts: opts, log: opts.Logger, conns: map[uint64]*owner{}, health: health.NewServer(),
		tickets: map[[TicketBytes]byte]*sharedBuf{}}
	if opts.TLS != nil && opts.TLS.ClientAuth == tls.RequireAndVerifyClientCert {
		// Verify a certificate in the handshake when one is sent, and
		// refuse calls without one with UNAUTHENTICATED: a handshake that
		// fails reaches the client as UNAVAILABLE, which reads as "server
		// down".
		cfg := opts.TLS.Clone()
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		s.opts.TLS, s.needCert = cfg, true
	}
	gopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(opts.MaxMessageBytes),
		grpc.MaxConcurrentStreams(uint32(opts.MaxStreams)),
		grpc.StatsHandler(connTracker{s}),
		grpc.ForceServerCodecV2(checkedCodec{encoding.GetCodecV2(protoCodecName)}),
		grpc.ChainUnaryInterceptor(s.logCall, s.recoverUnary, s.authUnary, malformedUnary),
		grpc.ChainStreamInterceptor(s.authStream, malformedStream),
		// Find peers that vanished without closing their connection.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
	if s.opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(s.opts.TLS)))
	}
	s.grpc = grpc.NewServer(gopts...)
	pb.RegisterControllerServer(s.grpc, &controllerService{s: s})
	pb.RegisterControlServer(s.grpc, &controlService{s: s})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	for _, name := range []string{"", pb.Controller_ServiceDesc.ServiceName, pb.Control_ServiceDesc.ServiceName} {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	reflection.Register(s.grpc)
	return s
}

// Serve accepts connections on lis until Shutdown. On a Unix socket it
// also answers the shared-memory descriptor handoffs (OpenShared).
func (s *Server) Serve(lis net.Listener) error {
	s.log.Info("serving", "addr", lis.Addr().String(), "network", lis.Addr().Network(), "tls", s.opts.TLS != nil, "token", s.opts.Token != "")
	if lis.Addr().Network() == "unix" {
		lis = newHandoffListener(s, lis)
	}
	err := s.grpc.Serve(limitListener(lis, s.opts.MaxConnections))
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown drains: health turns NOT_SERVING, new calls are refused,
// calls in flight finish (GracefulStop); when ctx ends first, the rest
// are cut off (Stop). It logs "drained" or "drain timed out" and returns
// whether every call finished.
func (s *Server) Shutdown(ctx context.Context) bool {
	start := time.Now()
	s.health.Shutdown()
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
		s.log.Info("drained", "ms", time.Since(start).Milliseconds())
		return true
	case <-ctx.Done():
		s.log.Warn("drain timed out, stopping", "ms", time.Since(start).Milliseconds(), "err", ctx.Err())
		s.grpc.Stop()
		<-done
		return false
	}
}

// Usage returns what the server holds now.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := Usage{Connections: len(s.conns), DeviceBytes: s.devBytes, Sessions: s.sessions, Shared: s.shared, SharedBytes: s.sharedBytes}
	for _, o := range s.conns {
		u.Devices += len(o.devices)
	}
	return u
}

// connKey tags a connection's context with its id.
type connKey struct{}

// connTracker ties resources to connections.
type connTracker struct{ s *Server }

func (t connTracker) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	id := t.s.nextConn.Add(1)
	t.s.mu.Lock()
	t.s.conns[id] = &owner{peer: info.RemoteAddr.String(), devices: map[uint64]*device{}, sessions: map[uint64]*session{}, shared: map[uint64]*sharedBuf{}}
	t.s.mu.Unlock()
	return context.WithValue(ctx, connKey{}, id)
}

func (t connTracker) HandleConn(ctx context.Context, st stats.ConnStats) {
	if _, ok := st.(*stats.ConnEnd); ok {
		if id, ok := ctx.Value(connKey{}).(uint64); ok {
			t.s.release(id)
		}
	}
}

func (connTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTracker) HandleRPC(context.Context, stats.RPCStats)                       {}

// release frees everything connection id owned.
func (s *Server) release(id uint64) {
	s.mu.Lock()
	o := s.conns[id]
	if o == nil {
		s.mu.Unlock()
		return
	}
	delete(s.conns, id)
	o.closed = true
	var bytes, shared uint64
	for _, d := range o.devices {
		bytes += d.capacity
	}
	for _, b := range o.shared {
		shared += b.bytes
	}
	s.devBytes -= bytes
	s.devices -= len(o.devices)
	s.sessions -= len(o.sessions)
	s.shared -= len(o.shared)
	s.sharedBytes -= shared
	s.mu.Unlock()
	for _, b := range o.shared {
		s.unmap(b)
	}
	if len(o.devices) > 0 || len(o.sessions) > 0 || len(o.shared) > 0 {
		s.log.Info("connection closed, resources freed", "conn", id, "peer", o.peer, "devices", len(o.devices), "device_bytes", bytes, "sessions", len(o.sessions), "shared", len(o.shared), "shared_bytes", shared)
	}
}

// ownerOf returns the calling connection's owner; s.mu must be held.
func (s *Server) ownerOf(ctx context.Context) (*owner, error) {
	id, _ := ctx.Value(connKey{}).(uint64)
	o := s.conns[id]
	if o == nil {
		return nil, status.Error(codes.Unavailable, "connection is closing")
	}
	return o, nil
}

// logCall logs every unary call: failures at info, the rest at debug.
func (s *Server) logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	id, _ := ctx.Value(connKey{}).(uint64)
	lvl := slog.LevelDebug
	if err != nil {
		lvl = slog.LevelInfo
	}
	s.log.Log(ctx, lvl, "call", "method", info.FullMethod, "conn", id, "code", status.Code(err).String(), "us", time.Since(start).Microseconds(), "err", errString(err))
	return resp, err
}

// recoverUnary turns a panic in a handler into INTERNAL for that call, so
// that one bad request can never stop the server for other clients.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in handler", "method", info.FullMethod, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "%s: internal error (logged)", info.FullMethod)
		}
	}()
	return h(ctx, req)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return status.Convert(err).Message()
}

// authorize checks the client certificate and the bearer token, when
// they are required.
func (s *Server) authorize(ctx context.Context) error {
	if s.needCert {
		p, _ := peer.FromContext(ctx)
		ti, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok || len(ti.State.VerifiedChains) == 0 {
			return status.Error(codes.Unauthenticated, "no client certificate: this server requires TLS client certificates signed by its client CA")
		}
	}
	if s.opts.Token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := bearerToken(v); ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "missing or wrong bearer token (send metadata 'authorization: Bearer TOKEN')")
}

// bearerToken returns the credentials of an "authorization" value of the
// Bearer scheme, whose name is case-insensitive (RFC 7235, Sec. 2.1).
func bearerToken(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	return strings.TrimLeft(tok, " "), true
}

func (s *Server) authUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.authorize(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// newID returns a fresh device or session id; s.mu must be held.
func (s *Server) newID() uint64 {
	s.nextID++
	return s.nextID
}

func notFound(kind string, id uint64) error {
	return status.Errorf(codes.NotFound, "%s %d: no such %s on this connection", kind, id, kind)
}

func exhausted(format string, args ...any) error {
	return status.Errorf(codes.ResourceExhausted, format, args...)
}
