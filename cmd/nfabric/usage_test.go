package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageMistakesExit2: unknown subcommands and bad flag values are
// usage errors (exit 2) named on stderr, caught before any work; inputs
// that used to panic fail with an error (issue 15, items 9, 13 and 14).
func TestUsageMistakesExit2(t *testing.T) {
	dir := t.TempDir()
	links := filepath.Join(dir, "L.yaml")
	os.WriteFile(links, []byte("links:\n  - name: roce\n    bandwidth: 1e-300Gb/s\n    latency: 3us\n"), 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"payload", "bogus"}, 2, `"bogus"`},
		{[]string{"train", "bogus"}, 2, `"bogus"`},
		{[]string{"hw", "bogus"}, 2, `"bogus"`},
		{[]string{"collective", "--net", "bogus"}, 2, "--net"},
		{[]string{"collective", "--window", "bogus"}, 2, "--window"},
		{[]string{"collective", "--model", "bogus"}, 2, "--model"},
		{[]string{"collective", "--workers", "1"}, 2, "--workers"},
		{[]string{"collective", "--workers", "8", "--per-node", "3"}, 2, "--per-node"},
		{[]string{"collective", "--exposure", "1.67", "--links", links, "--net", "roce"}, 1, "bandwidth"},
		{[]string{"verify", "--lines", "100000000000"}, 2, "--lines"},
		{[]string{"pilot", "--data", "bogus"}, 2, "--data"},
		{[]string{"pilot", "--batch", "0", "--seeds", "1", "--epochs", "1", "--quiet"}, 2, "--batch"},
		{[]string{"timing", "replay", "--validate-scale", "-1"}, 2, "--validate-scale"},
		{[]string{"train", "run", "--epochs", "-1"}, 2, "--epochs"},
	}
	for _, c := range cases {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "panic") {
			t.Errorf("nfabric %s: exit %d, stderr %q; want %d naming %s", strings.Join(c.args, " "), code, stderr, c.code, c.msg)
		}
	}
	// A bare command group still prints its help and succeeds.
	if code, out, _ := nfabric(t, "payload"); code != 0 || !strings.Contains(out, "aggregate") {
		t.Errorf("nfabric payload: exit %d, out %q", code, out)
	}
}

// TestMessagesPointTheRightWay: the error names the flag the user got
// wrong (issue 15, item 15).
func TestMessagesPointTheRightWay(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	os.WriteFile(g, make([]byte, 32), 0o644)
	for _, c := range []struct {
		args    []string
		want    string
		notWant string
	}{
		{[]string{"train", "run", "--epochs", "-1"}, "--epochs -1", "diag-epoch"},
		{[]string{"payload", "encode", "--workers", "-1", "-o", filepath.Join(dir, "x"), g}, "--workers -1", "not 0"},
		{[]string{"payload", "aggregate", "--workers", "-1", "-o", filepath.Join(dir, "x"), g}, "--workers -1", "holds"},
		{[]string{"verify", "--lines", "0"}, "--lines 0", "verify: verify:"},
	} {
		_, _, stderr := nfabric(t, c.args...)
		if !strings.Contains(stderr, c.want) || strings.Contains(stderr, c.notWant) {
			t.Errorf("nfabric %s: stderr %q; want %q, not %q", strings.Join(c.args, " "), stderr, c.want, c.notWant)
		}
	}
}
