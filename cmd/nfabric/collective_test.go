package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCollectiveCmd(t *testing.T) {
	code, out, stderr := nfabric(t, "collective", "--model", "resnet18-cifar100", "--exposure", "1.5", "--models", "resnet18-cifar10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"G-Binary (CXL controller)", "GPT-scale sanity check", "1.5"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	dir := t.TempDir()
	links := filepath.Join(dir, "l.yaml")
	os.WriteFile(links, []byte("links:\n  - name: slow\n    bandwidth: 1GB/s\n    colour: red\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"collective", "--workers", "0"}, 2},
		{[]string{"collective", "--exposure", "-1"}, 2},
		{[]string{"collective", "--model", "nope", "--exposure", "1"}, 2}, // a name typo is a usage error (issue 15, item 14)
		{[]string{"collective", "--links", links, "--exposure", "1"}, 1},
		{[]string{"collective", "--links", "/no/such.yaml", "--exposure", "1"}, 1},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code || !strings.HasPrefix(stderr, "nfabric: ") {
			t.Errorf("nfabric %s: exit %d (want %d), stderr %q", strings.Join(c.args, " "), code, c.code, stderr)
		}
	}
}
