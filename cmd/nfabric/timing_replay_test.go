package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTimingReplayCmd(t *testing.T) {
	for _, use := range [][]string{{"timing", "replay"}} {
		code, out, stderr := nfabric(t, append(use, "--model", "resnet18-cifar10")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", use, code, stderr)
		}
		if !strings.Contains(out, "Fig. 2(b)") || !strings.Contains(out, "resnet18-cifar10") {
			t.Errorf("%v: output %q", use, out)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("bytes,ready_us\n4,2\n4,1\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"timing", "replay", "--model", ""}, 2, "nothing to replay"},
		{[]string{"timing", "replay", "--bucket-mib", "0"}, 2, "bucket-mib"},
		{[]string{"timing", "replay", "--bucket-mode", "odd"}, 2, "bucket-mode"},
		{[]string{"timing", "replay", "--efficiency", "2"}, 2, "efficiency"},
		{[]string{"timing", "replay", "--model", "", "--trace", bad}, 1, "bad.csv:3"},
		{[]string{"timing", "replay", "--model", "nope"}, 1, "unknown model"},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code || !strings.HasPrefix(stderr, "nfabric: ") || !strings.Contains(stderr, c.want) {
			t.Errorf("nfabric %s: exit %d (want %d), stderr %q (want %q)", strings.Join(c.args, " "), code, c.code, stderr, c.want)
		}
	}
}
