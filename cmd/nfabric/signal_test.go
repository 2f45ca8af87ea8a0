package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// buildNfabric builds the command into a temporary directory, so that a
// test can send it real signals.
func buildNfabric(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nfabric")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSignalRemovesTemps interrupts a large write with SIGINT and SIGTERM
// and checks the shell's exit status (128 + signal) and that no temporary
// file is left next to the output.
func TestSignalRemovesTemps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildNfabric(t)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "big.f32")
			cmd := exec.Command(bin, "payload", "random", "--workers", "16", "--elements", "16777216", "-o", out)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the temporary file exists, then signal.
			deadline := time.Now().Add(20 * time.Second)
			for {
				m, _ := filepath.Glob(filepath.Join(dir, ".big.f32.tmp*"))
				if len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("no temporary file appeared")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(c.sig)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Errorf("exit %v, want status %d", err, c.code)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				t.Errorf("left behind: %s", e.Name())
			}
		})
	}
}
