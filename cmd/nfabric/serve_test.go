package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/neuronfabric/nfabric/api/nfabric/v1"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/client"
)

// TestServeSIGTERM: 'nfabric serve' on a Unix socket serves a client, and
// SIGTERM drains it, exits 0 and removes the socket.
func TestServeSIGTERM(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- execute([]string{"serve", "--socket", sock}, &bytes.Buffer{}, &stderr) }()
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
	c, err := client.Dial("unix://"+sock, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.OpenDevice(context.Background(), &pb.OpenDeviceRequest{CapacityBytes: 64}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	if !strings.Contains(stderr.String(), "drained") {
		t.Errorf("log: %s", stderr.String())
	}
}

// TestServeUsage: TCP without credentials and bad limits are usage errors.
func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--tcp", "127.0.0.1:0"},
		{"serve", "--max-regions", "0"},
		{"serve", "--log-format", "xml"},
		{"serve", "--tcp", "127.0.0.1:0", "--token-file", "/nonexistent"},
	} {
		var stderr bytes.Buffer
		if code := execute(args, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

// TestServeSelftest: --selftest passes and says so.
func TestServeSelftest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"serve", "--selftest"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "6 passed, 0 failed") {
		t.Fatalf("output %s", stdout.String())
	}
}

// TestServeCheckJSON: 'serve check --json' against a running server prints
// one JSON object whose counts agree with its checks.
func TestServeCheckJSON(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := serve.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.New(serve.Options{})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	defer func() {
		srv.Shutdown(context.Background())
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"serve", "check", "--socket", sock, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	var rep client.Report
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("not one JSON object: %v", err)
	}
	passed := 0
	for _, ch := range rep.Checks {
		if ch.Passed {
			passed++
		}
	}
	if rep.Passed != 6 || rep.Failed != 0 || passed != 6 || len(rep.Checks) != 6 || rep.Target != "unix://"+sock {
		t.Errorf("report %+v", rep)
	}
}
