// Package client is the Go client of 'nfabric serve': a connection with
// the Controller and Control stubs, and small typed helpers for a device
// and a control session. Devices and sessions live as long as the
// connection (see package serve), so Close frees them.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/wire"
)

// Options configures Dial.
type Options struct {
	// Token is sent as "authorization: Bearer TOKEN" on every call.
	Token string
	// TLS, when not nil, dials with TLS (add a client certificate for
	// servers that require one).
	TLS *tls.Config
	// MaxMessageBytes bounds messages in both directions (default 16 MiB).
	MaxMessageBytes int
}

// Client is one connection to a server.
type Client struct {
	conn       *grpc.ClientConn
	socket     string // the Unix socket path, "" on TCP
	Controller pb.ControllerClient
	Control    pb.ControlClient
}

// Dial connects to target: "unix:///path/to.sock" (or "unix:path") or
// "host:port". A Unix socket must pass serve.CheckSocket (this user's or
// root's, in a directory no other user can write), so that a client never
// talks to a server another user bound at the path.
func Dial(target string, o Options) (*Client, error) {
	if path, ok := unixPath(target); ok {
		if err := serve.CheckSocket(path); err != nil {
			return nil, fmt.Errorf("client: dial %s: %w", target, err)
		}
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 16 << 20
	}
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxMessageBytes), grpc.MaxCallSendMsgSize(o.MaxMessageBytes))}
	if o.TLS != nil {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(o.TLS)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if o.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{o.Token, o.TLS != nil}))
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", target, err)
	}
	c := &Client{conn: conn, Controller: pb.NewControllerClient(conn), Control: pb.NewControlClient(conn)}
	c.socket, _ = unixPath(target)
	return c, nil
}

// unixPath returns the socket path of a "unix:" target.
func unixPath(target string) (string, bool) {
	if p, ok := strings.CutPrefix(target, "unix://"); ok {
		return p, true
	}
	return strings.CutPrefix(target, "unix:")
}

// Conn returns the underlying connection (for health checks, say).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; the server frees its devices and sessions.
func (c *Client) Close() error { return c.conn.Close() }

type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false so that a token also works over a
// loopback TCP port without TLS; use TLS on any other network.
func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Device is an opened device.
type Device struct {
	c  *Client
	ID uint64
}

// OpenDevice opens a device.
func (c *Client) OpenDevice(ctx context.Context, req *pb.OpenDeviceRequest) (*Device, error) {
	r, err := c.Controller.OpenDevice(ctx, req)
	if err != nil {
		return nil, err
	}
	return &Device{c: c, ID: r.GetDevice()}, nil
}

// Close frees the device.
func (d *Device) Close(ctx context.Context) error {
	_, err := d.c.Controller.CloseDevice(ctx, &pb.CloseDeviceRequest{Device: d.ID})
	return err
}

// Map maps a region; req.Device is set to d.
func (d *Device) Map(ctx context.Context, req *pb.MapRegionRequest) (*pb.Region, error) {
	req.Device = d.ID
	r, err := d.c.Controller.MapRegion(ctx, req)
	return r.GetRegion(), err
}

// Transact runs a batch of ops.
func (d *Device) Transact(ctx context.Context, ops ...*pb.Op) (*pb.TransactResponse, error) {
	return d.c.Controller.Transact(ctx, &pb.TransactRequest{Device: d.ID, Ops: ops})
}

// WriteOp writes data (whole lines) from addr.
func WriteOp(addr uint64, data []byte) *pb.Op {
	return &pb.Op{Op: &pb.Op_Write{Write: &pb.Write{Addr: addr, Data: data}}}
}

// ReadOp reads n lines from addr.
func ReadOp(addr uint64, n int) *pb.Op {
	return &pb.Op{Op: &pb.Op_Read{Read: &pb.Read{Addr: addr, Lines: uint32(n)}}}
}

// SetModeOp writes a region's latch between transactions of a batch.
func SetModeOp(region uint32, m cxl.Mode, ts int64) *pb.Op {
	return &pb.Op{Op: &pb.Op_SetMode{SetMode: &pb.SetMode{Region: region, Mode: wire.Mode(m), Time: ts}}}
}

// Write writes data (whole lines) from addr in one batch.
func (d *Device) Write(ctx context.Context, addr uint64, data []byte) error {
	_, err := d.Transact(ctx, WriteOp(addr, data))
	return err
}

// Read reads n lines from addr: the response bytes and each line's mode.
func (d *Device) Read(ctx context.Context, addr uint64, n int) ([]byte, []cxl.Mode, error) {
	r, err := d.Transact(ctx, ReadOp(addr, n))
	if err != nil {
		return nil, nil, err
	}
	modes, _, err := ReadLines(r, n)
	if err != nil {
		return nil, nil, err
	}
	return r.GetData(), modes, nil
}

// ReadLines expands a Transact response's read_spans into each read
// line's mode and transformed flag, in op order (reads and shared reads
// alike); lines is the batch's read line count. Spans that do not cover
// exactly that many lines, or name an unknown mode, are an error.
func ReadLines(r *pb.TransactResponse, lines int) ([]cxl.Mode, []bool, error) {
	modes, trans, err := wire.ParseReadSpans("read_spans", r.GetReadSpans(), lines)
	if err != nil {
		return nil, nil, fmt.Errorf("client: response: %w", err)
	}
	return modes, trans, nil
}

// SetMode writes a region's mode latch.
func (d *Device) SetMode(ctx context.Context, region uint32, m cxl.Mode, ts int64) error {
	_, err := d.c.Controller.SetMode(ctx, &pb.SetModeRequest{Device: d.ID, Region: region, Mode: wire.Mode(m), Time: ts})
	return err
}

// Stats returns the device's counters, regions and mode-change log.
func (d *Device) Stats(ctx context.Context) (*pb.GetStatsResponse, error) {
	return d.c.Controller.GetStats(ctx, &pb.GetStatsRequest{Device: d.ID})
}

// Session is an open control session.
type Session struct {
	c  *Client
	ID uint64
}

// OpenSession opens a control session.
func (c *Client) OpenSession(ctx context.Context, cfg *pb.SessionConfig) (*Session, error) {
	r, err := c.Control.OpenSession(ctx, &pb.OpenSessionRequest{Config: cfg})
	if err != nil {
		return nil, err
	}
	return &Session{c: c, ID: r.GetSession()}, nil
}

// Send feeds one event and returns the actions.
func (s *Session) Send(ctx context.Context, ev control.Event) ([]control.Action, error) {
	r, err := s.c.Control.Send(ctx, &pb.SendRequest{Session: s.ID, Event: wire.Event(ev)})
	if err != nil {
		return nil, err
	}
	acts := make([]control.Action, len(r.GetActions()))
	for i, a := range r.GetActions() {
		if acts[i], err = wire.ParseAction(fmt.Sprintf("actions[%d]", i), a); err != nil {
			return nil, fmt.Errorf("client: response: %w", err)
		}
	}
	return acts, nil
}

// Dump returns the session's record.
func (s *Session) Dump(ctx context.Context) (*pb.SessionDump, error) {
	return s.c.Control.Dump(ctx, &pb.DumpRequest{Session: s.ID})
}

// Close frees the session.
func (s *Session) Close(ctx context.Context) error {
	_, err := s.c.Control.CloseSession(ctx, &pb.CloseSessionRequest{Session: s.ID})
	return err
}

// SessionConfig returns the wire form of a control configuration (groups
// without parameter counts).
func SessionConfig(cfg control.Config) *pb.SessionConfig { return wire.SessionConfig(cfg, nil) }

// TLSConfig returns a client TLS configuration from PEM files: caFile
// (empty: the system's roots) verifies the server, certFile and keyFile
// (both or neither) are the client certificate for servers that require
// one, serverName (empty: the target's host) is the name to verify.
func TLSConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS13}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("server CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server CA %s: no PEM certificates", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("a client certificate needs both the certificate and the key file")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
