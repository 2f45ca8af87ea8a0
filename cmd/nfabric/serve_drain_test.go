package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/serve"
)

// startServeProcess runs the built command as 'serve' on a socket in a
// fresh directory and waits for the socket.
func startServeProcess(t *testing.T, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"serve", "--socket", sock}, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			return cmd, &stderr, sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket: %s", stderr.String())
		}
	}
}

// pendingRead opens a device and starts a 4 MB read on a connection with
// 64 KiB flow-control windows that does not read the reply: the call stays
// in flight on the server until the client reads it.
func pendingRead(t *testing.T, sock string) (grpc.ClientStream, func() error) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := context.Background()
	dev, err := pb.NewControllerClient(conn).OpenDevice(ctx, &pb.OpenDeviceRequest{CapacityBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/nfabric.v1.Controller/Transact")
	if err != nil {
		t.Fatal(err)
	}
	const lines = 60000
	if err := st.SendMsg(&pb.TransactRequest{Device: dev.GetDevice(), Ops: []*pb.Op{{Op: &pb.Op_Read{Read: &pb.Read{Lines: lines}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	return st, func() error {
		var resp pb.TransactResponse
		if err := st.RecvMsg(&resp); err != nil {
			return err
		}
		if len(resp.GetData()) != lines*64 {
			return errors.New("short reply")
		}
		return nil
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestServeDrain: SIGTERM with a call in flight drains up to
// --drain-timeout (a generic signal handler would exit with 143 after
// 2 s and the client would get UNAVAILABLE). A
// drain that completes exits 0 and logs "drained"; one that runs out logs
// "drain timed out" and exits 1.
func TestServeDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildNfabric(t)
	t.Run("drained", func(t *testing.T) {
		cmd, stderr, sock := startServeProcess(t, bin, "--drain-timeout", "30s")
		_, read := pendingRead(t, sock)
		time.Sleep(200 * time.Millisecond) // let the server start the call
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(3 * time.Second) // past the generic handler's 2 s
		if err := read(); err != nil {
			t.Errorf("call in flight during the drain: %v", err)
		}
		code := exitCode(cmd.Wait())
		t.Logf("drained: exit %d after %v", code, time.Since(start).Round(time.Millisecond))
		if code != 0 || !strings.Contains(stderr.String(), "msg=drained") {
			t.Errorf("exit %d, log:\n%s", code, stderr.String())
		}
	})
	t.Run("timed out", func(t *testing.T) {
		cmd, stderr, sock := startServeProcess(t, bin, "--drain-timeout", "3s")
		pendingRead(t, sock)
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		code := exitCode(cmd.Wait())
		took := time.Since(start)
		t.Logf("timed out: exit %d after %v", code, took.Round(time.Millisecond))
		if code != 1 || !strings.Contains(stderr.String(), "drain timed out") || took < 3*time.Second || took > 10*time.Second {
			t.Errorf("exit %d after %v, log:\n%s", code, took, stderr.String())
		}
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("socket left behind: %v", err)
		}
	})
}

// TestServeDrainUsage: a drain timeout of zero or less is a usage error.
func TestServeDrainUsage(t *testing.T) {
	for _, d := range []string{"0", "-1s"} {
		var stderr bytes.Buffer
		if code := execute([]string{"serve", "--socket", filepath.Join(t.TempDir(), "s.sock"), "--drain-timeout", d}, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("--drain-timeout %s: exit %d, want 2 (%s)", d, code, stderr.String())
		}
	}
}

// writePEM writes a certificate and its key as PEM files.
func writePEM(t *testing.T, dir, name string, cert *x509.Certificate, key *ecdsa.PrivateKey) (string, string) {
	t.Helper()
	cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600)
	os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cf, kf
}

func testCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "nfabric test"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: parent == nil}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// TestServeCheckMutualTLS: 'serve check' checks a server that requires
// client certificates, given --tls-ca, --tls-cert and --tls-key, so a
// deployment with mutual TLS can be checked as it runs.
func TestServeCheckMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := testCert(t, nil, nil)
	caFile, _ := writePEM(t, dir, "ca", ca, caKey)
	sc, sk := testCert(t, ca, caKey)
	srvCert, srvKey := writePEM(t, dir, "server", sc, sk)
	cc, ck := testCert(t, ca, caKey)
	cliCert, cliKey := writePEM(t, dir, "client", cc, ck)
	cfg, err := serve.TLSConfig(srvCert, srvKey, caFile)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(serve.Options{TLS: cfg})
	go srv.Serve(lis)
	defer srv.Shutdown(context.Background())
	addr := lis.Addr().String()
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"serve", "check", "--tcp", addr, "--tls-ca", caFile, "--tls-cert", cliCert, "--tls-key", cliKey}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "6 passed, 0 failed") {
		t.Errorf("output %s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := execute([]string{"serve", "check", "--tcp", addr, "--tls-ca", caFile}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String()+stdout.String(), "Unauthenticated") {
		t.Errorf("without a client certificate: exit %d: %s %s", code, stdout.String(), stderr.String())
	}
}
