package serve_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
)

// waitUsage polls the server until its usage is u.
func waitUsage(t *testing.T, srv *serve.Server, want serve.Usage) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		u := srv.Usage()
		u.Connections = want.Connections
		if u == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage %+v, want %+v", u, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseFreesResources: closing the connection frees its devices and
// sessions; another connection cannot see them while it lives.
func TestCloseFreesResources(t *testing.T) {
	ts := startServer(t, serve.Options{MaxDeviceBytes: 1 << 20})
	ctx := context.Background()
	a := ts.dial(t)
	d, err := a.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}}); err != nil {
		t.Fatal(err)
	}
	waitUsage(t, ts.srv, serve.Usage{Devices: 1, Sessions: 1, DeviceBytes: 1 << 20})
	b := ts.dial(t)
	if _, err := b.Controller.GetStats(ctx, &pb.GetStatsRequest{Device: d.ID}); status.Code(err) != codes.NotFound {
		t.Fatalf("another connection sees the device: %v", err)
	}
	a.Close()
	waitUsage(t, ts.srv, serve.Usage{})
	if _, err := b.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 20}); err != nil {
		t.Fatalf("device memory not given back: %v", err)
	}
}

// TestKilledMidBatch: a client process killed (SIGKILL) while it streams
// write batches leaves no device, session or device memory behind.
func TestKilledMidBatch(t *testing.T) {
	ts := startServer(t, serve.Options{})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NFABRIC_SERVE_CHILD="+ts.target)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait until the child holds a device and is writing.
	deadline := time.Now().Add(20 * time.Second)
	for ts.srv.Usage().Devices == 0 {
		if time.Now().After(deadline) {
			t.Fatal("child never opened a device")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // mid-batch: the child writes 4 MiB batches back to back
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitUsage(t, ts.srv, serve.Usage{})
}

// TestMain runs the test binary as TestKilledMidBatch's client when
// NFABRIC_SERVE_CHILD names a server.
func TestMain(m *testing.M) {
	if sock := os.Getenv("NFABRIC_SERVE_LIMITS_CHILD"); sock != "" {
		limitsServer(sock)
		os.Exit(0)
	}
	if target := os.Getenv("NFABRIC_SERVE_CHILD"); target != "" {
		childWriter(target)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childWriter opens a device and a session and writes 4 MiB batches until
// it is killed.
func childWriter(target string) {
	c, err := client.Dial(target, client.Options{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	d, err := c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 1 << 30})
	if err != nil {
		panic(err)
	}
	if _, err := c.OpenSession(ctx, &pb.SessionConfig{Groups: []*pb.Group{{Name: "g"}}}); err != nil {
		panic(err)
	}
	buf := make([]byte, 4<<20)
	for addr := uint64(0); ; addr = (addr + uint64(len(buf))) % (1 << 30) {
		if err := d.Write(ctx, addr, buf); err != nil {
			panic(err)
		}
	}
}

// TestUnixSocket: the socket is created 0600, a second server on the same
// path is refused, and the file is removed on shutdown.
func TestUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := serve.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v (%v)", fi.Mode(), err)
	}
	srv := serve.New(serve.Options{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	if _, err := serve.ListenUnix(sock); err == nil {
		t.Fatal("a second server took a live socket")
	}
	srv.Shutdown(context.Background())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	// A stale socket file (nobody listening) is replaced.
	l, _ := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	l.SetUnlinkOnClose(false)
	l.Close()
	lis, err = serve.ListenUnix(sock)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	lis.Close()
}

// TestHealthAndReflection: the health service says SERVING for both
// services, and reflection lists them (what grpcurl needs).
func TestHealthAndReflection(t *testing.T) {
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	for _, name := range []string{"", "nfabric.v1.Controller", "nfabric.v1.Control"} {
		r, err := healthpb.NewHealthClient(c.Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v %v", name, r, err)
		}
	}
	st, err := reflectpb.NewServerReflectionClient(c.Conn()).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, s := range resp.GetListServicesResponse().GetService() {
		found[s.GetName()] = true
	}
	if !found["nfabric.v1.Controller"] || !found["nfabric.v1.Control"] || !found["grpc.health.v1.Health"] {
		t.Fatalf("reflection lists %v", found)
	}
}

func serveTCP(t *testing.T, opts serve.Options) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(opts)
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return lis.Addr().String()
}

func openErr(t *testing.T, target string, o client.Options) error {
	t.Helper()
	c, err := client.Dial(target, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 64})
	return err
}

// TestTokenAuth: over TCP with a bearer token, calls without it or with a
// wrong one (health included) get UNAUTHENTICATED.
func TestTokenAuth(t *testing.T) {
	const tok = "0123456789abcdef-token"
	addr := serveTCP(t, serve.Options{Token: tok})
	for _, tc := range []struct {
		token string
		code  codes.Code
	}{{"", codes.Unauthenticated}, {"wrong-token-wrong-token", codes.Unauthenticated}, {tok, codes.OK}} {
		if err := openErr(t, addr, client.Options{Token: tc.token}); status.Code(err) != tc.code {
			t.Errorf("token %q: %v, want %v", tc.token, err, tc.code)
		}
	}
	c, _ := client.Dial(addr, client.Options{})
	defer c.Close()
	if _, err := healthpb.NewHealthClient(c.Conn()).Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("health without a token: %v", err)
	}
}

// TestMutualTLS: with client certificates required, a client with a
// certificate from the CA is served and one without gets UNAUTHENTICATED
// (not a failed handshake, which the client sees as UNAVAILABLE).
func TestMutualTLS(t *testing.T) {
	ca, caKey := newCert(t, nil, nil, true)
	srvCert, srvKey := newCert(t, ca, caKey, false)
	cliCert, cliKey := newCert(t, ca, caKey, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	addr := serveTCP(t, serve.Options{TLS: &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientCAs:    pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}})
	good := &tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{{Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey}}}
	if err := openErr(t, addr, client.Options{TLS: good}); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	if err := openErr(t, addr, client.Options{TLS: &tls.Config{RootCAs: pool, ServerName: "localhost"}}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("client without a certificate: %v, want UNAUTHENTICATED", err)
	}
}

func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "nfabric test"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: isCA}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
