package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestOutputCheckedFirst: a bad output path fails at once, before any work
// is spent, as a usage error naming the path.
func TestOutputCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "regular")
	os.WriteFile(file, []byte("keep"), 0o644)
	cases := [][]string{
		{"timing", "table4", "--out", file},
		{"train", "run", "--epochs", "50", "--out", file},
		{"train", "boundary", "--out", file},
		{"reproduce", "--out", file},
		{"collective", "--out", file},
		{"pilot", "--out", file},
		{"payload", "random", "-o", dir},
		{"payload", "random", "-o", filepath.Join(dir, "no", "such", "dir", "f")},
		{"hw", "gen", "-o", dir},
	}
	for _, args := range cases {
		start := time.Now()
		code, _, stderr := nfabric(t, args...)
		if code != 2 || !strings.Contains(stderr, dir) {
			t.Errorf("nfabric %s: exit %d, stderr %q; want 2 naming the path", strings.Join(args, " "), code, stderr)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("nfabric %s: took %v before failing", strings.Join(args, " "), d)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the regular file now holds %q", b)
	}
}

// TestOutputToDevices: -o /dev/null and a FIFO-like target are written in
// place, not replaced by a renamed temporary file.
func TestOutputToDevices(t *testing.T) {
	code, _, stderr := nfabric(t, "payload", "random", "--workers", "2", "--elements", "16", "-o", "/dev/null")
	if code != 0 {
		t.Fatalf("-o /dev/null: exit %d, %s", code, stderr)
	}
	if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", st.Mode(), err)
	}
}

// TestOutputFlagKinds: --out/-o of telemetry names a file (an existing
// regular file is replaced), --out of the report commands a directory.
func TestOutputFlagKinds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(file, []byte("old"), 0o444)
	if code, _, stderr := nfabric(t, "telemetry", "synthetic", "-o", file); code != 0 {
		t.Fatalf("telemetry -o FILE: exit %d: %s", code, stderr)
	}
	st, _ := os.Stat(file)
	if b, _ := os.ReadFile(file); !strings.HasPrefix(string(b), "time_ns,") || st.Mode().Perm() != 0o444 {
		t.Errorf("telemetry -o FILE wrote %.20q with mode %v", b, st.Mode().Perm())
	}
}

// TestOutputFlagsDeclared walks every command and fails on a string flag
// whose name says it is written (output, out, dir, checkpoint, figure,
// html, *-out) but that was not declared with fileFlag or dirFlag: such a
// flag would escape the check of output paths before any work.
func TestOutputFlagsDeclared(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			written := strings.HasSuffix(f.Name, "-out") || slices.Contains([]string{"output", "out", "dir", "checkpoint", "figure", "html"}, f.Name)
			if written && f.Value.Type() == "string" && outputKindOf(f) == "" {
				t.Errorf("%s --%s: an output flag not declared with fileFlag or dirFlag", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}
