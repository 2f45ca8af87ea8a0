package main

import (
	"strings"
	"testing"
)

// TestZeroIsNotDefault: a zero or empty flag value is either a valid value
// with its own meaning or a usage error, never a silent default.
func TestZeroIsNotDefault(t *testing.T) {
	for _, args := range [][]string{
		{"train", "run", "--batch", "0"},
		{"train", "run", "--workers", "0"},
		{"train", "run", "--epochs", "0"},
		{"train", "validated", "--workers", "0"},
		{"pilot", "--workers", "0"},
		{"pilot", "--batch", "0"},
		{"hw", "gen", "--stages", "0"},
		{"hw", "gen", "--workers", "0"},
		{"hw", "gen", "--width", "0"},
		{"timing", "replay", "--validate-scale", "0"},
		{"reproduce", "--only", ""},
		{"reproduce", "--only", ","},
	} {
		code, _, stderr := nfabric(t, args...)
		if code != 2 {
			t.Errorf("nfabric %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, stderr)
		}
	}
	// verify --sweeps 0 is valid: no random sweeps at all.
	code, out, stderr := nfabric(t, "verify", "--lines", "64", "--sweeps", "0", "--json")
	if code != 0 {
		t.Fatalf("verify --sweeps 0: exit %d: %s", code, stderr)
	}
	if strings.Contains(out, `"group": "sweep"`) {
		t.Errorf("verify --sweeps 0 ran sweeps")
	}
}
