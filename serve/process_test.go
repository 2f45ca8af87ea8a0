package serve_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/usage"
)

// TestEndpointCheck: an endpoint that cannot work is a usage error naming
// its flag, found before anything listens; a good token file gives its
// token.
func TestEndpointCheck(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte(strings.Repeat("t", 20)+"\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte(strings.Repeat("t", 20)+"\n"), 0o644)
	for _, c := range []struct {
		e   serve.Endpoint
		msg string
	}{
		{serve.Endpoint{TCP: "bogus"}, "--tcp"},
		{serve.Endpoint{TCP: ":99999"}, "--tcp"},
		{serve.Endpoint{}, "--socket is empty"},
		{serve.Endpoint{Socket: "/" + strings.Repeat("s", 107)}, "108 bytes"},
		{serve.Endpoint{Socket: filepath.Join(dir, "s"), TokenFile: "/dev/zero"}, "--token-file"},
		{serve.Endpoint{Socket: filepath.Join(dir, "s"), TokenFile: open}, "chmod 600"},
	} {
		if _, err := c.e.Check(); !usage.Is(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v; want a usage error naming %q", c.e, err, c.msg)
		}
	}
	e := serve.Endpoint{TCP: "127.0.0.1:7878", TokenFile: tok}
	if got, err := e.Check(); err != nil || got != strings.Repeat("t", 20) || e.Target() != "127.0.0.1:7878" {
		t.Errorf("good endpoint: token %q, %v, target %s", got, err, e.Target())
	}
	if e := (serve.Endpoint{Socket: "/run/x.sock"}); e.Target() != "unix:///run/x.sock" {
		t.Errorf("target %s", e.Target())
	}
}

// TestConfigValidate: the defaults are valid; every limit below its least
// value (a zero is refused, not read as the default), limits that do not
// fit one message, a drain that is not positive and an unknown log format
// are usage errors.
func TestConfigValidate(t *testing.T) {
	if err := serve.DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, edit := range map[string]func(c *serve.Config){
		"zero sessions":     func(c *serve.Config) { c.Limits.MaxSessions = 0 },
		"small messages":    func(c *serve.Config) { c.Limits.MaxMessageBytes = 1 << 15 },
		"tiny device bytes": func(c *serve.Config) { c.Limits.MaxDeviceBytes = 63 },
		"stats do not fit":  func(c *serve.Config) { c.Limits.MaxMessageBytes, c.Limits.MaxRegions = 1<<16, 1<<20 },
		"zero drain":        func(c *serve.Config) { c.Drain = 0 },
		"log format":        func(c *serve.Config) { c.LogFormat = "xml" },
	} {
		c := serve.DefaultConfig()
		edit(&c)
		if err := c.Validate(); !usage.Is(err) {
			t.Errorf("%s: %v; want a usage error", name, err)
		}
	}
}

// TestListenNeedsACredentialOnTCP: TCP without a token file or client
// certificates is refused as a usage error; with a token, or with a client
// CA, it listens. A Unix socket needs neither.
func TestListenNeedsACredentialOnTCP(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte(strings.Repeat("k", 20)), 0o600)
	ca, caKey := newCert(t, nil, nil, true)
	srv, srvKey := newCert(t, ca, caKey, false)
	certFile, keyFile, caFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem"), filepath.Join(dir, "ca.pem")
	der, _ := x509.MarshalECPrivateKey(srvKey)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Raw}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600)
	tcp := serve.Endpoint{TCP: "127.0.0.1:0"}
	for _, c := range []struct {
		name string
		cfg  serve.Config
		ok   bool
	}{
		{"plain tcp", serve.Config{Endpoint: tcp}, false},
		{"tls without client certificates", serve.Config{Endpoint: tcp, TLSCert: certFile, TLSKey: keyFile}, false},
		{"tls without a key", serve.Config{Endpoint: tcp, TLSCert: certFile, TLSClientCA: caFile}, false},
		{"token", serve.Config{Endpoint: serve.Endpoint{TCP: "127.0.0.1:0", TokenFile: tok}}, true},
		{"client certificates", serve.Config{Endpoint: tcp, TLSCert: certFile, TLSKey: keyFile, TLSClientCA: caFile}, true},
		{"unix socket", serve.Config{Endpoint: serve.Endpoint{Socket: filepath.Join(dir, "s.sock")}}, true},
	} {
		var o serve.Options
		lis, err := c.cfg.Listen(&o)
		if c.ok != (err == nil) || (err != nil && !usage.Is(err)) {
			t.Errorf("%s: %v; want ok %v, else a usage error", c.name, err, c.ok)
		}
		if lis != nil {
			lis.Close()
		}
	}
}

// TestRunDrainsOnSignal: Run serves until the first signal, drains, logs
// "drained" and removes its socket.
func TestRunDrainsOnSignal(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	c := serve.DefaultConfig()
	c.Socket = sock
	stop := make(chan os.Signal, 2)
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- serve.Run(c, &log, stop) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "drained") {
		t.Errorf("log %q lacks drained", log.String())
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("socket left behind")
	}
}
