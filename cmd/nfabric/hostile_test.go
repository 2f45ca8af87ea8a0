package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/control"
)

// TestHostileSizesExit2: sizes that used to end in an out-of-memory crash,
// an overflow or a run of hours are usage errors naming the flag or the
// limit, given before any work and with no output written (issue 25,
// items 6, 11 and 12).
func TestHostileSizesExit2(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x")
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte(strings.Repeat("t", 32)+"\n"), 0o600)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"telemetry", "synthetic", "--duration", "1000h", "-o", out}, "limit"},
		{[]string{"telemetry", "synthetic", "--interval", "1ns", "-o", out}, "limit"},
		{[]string{"telemetry", "ns3", "--interval", "1ns", "-o", out}, "limit"},
		{[]string{"telemetry", "ns3", "--steps", "100000000", "-o", out}, "steps"},
		{[]string{"telemetry", "ns3", "--scale", "0", "-o", out}, "--scale 0"},
		{[]string{"timing", "run", "--trace-out", out, "--trace-until-ns", "1e300"}, "--trace-until-ns"},
		{[]string{"timing", "run", "--trace-out", out, "--trace-max", "100000000", "--trace-until-ns", "1e12"}, "--trace-max"},
		{[]string{"train", "run", "--hidden", "100000000"}, "limit"},
		{[]string{"train", "run", "--model", "mlp", "--hidden", "100000000"}, "limit"},
		{[]string{"train", "sweep", "--rule", "sign", "--hidden", "100000000"}, "limit"},
		{[]string{"serve", "--token-file", "/dev/zero", "--socket", filepath.Join(dir, "s.sock")}, "--token-file"},
		{[]string{"serve", "--tcp", "bogus", "--token-file", tok}, "--tcp"},
		{[]string{"serve", "--tcp", ":99999", "--token-file", tok}, "--tcp"},
		{[]string{"serve", "--socket", ""}, "--socket"},
		{[]string{"serve", "check", "--tcp", "bogus"}, "--tcp"},
		{[]string{"verify", "--sweeps", "1000000000"}, "--sweeps"},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "panic") {
			t.Errorf("nfabric %s: exit %d, stderr %q; want 2 naming %q", strings.Join(c.args, " "), code, stderr, c.msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("nfabric %s wrote %s", strings.Join(c.args, " "), out)
		}
	}
}

// TestDashIsStdout: -o - and --trace-out - write stdout, with the summary
// on stderr, and no file named "-" appears (issue 25, item 9).
func TestDashIsStdout(t *testing.T) {
	t.Chdir(t.TempDir())
	code, out, stderr := nfabric(t, "telemetry", "synthetic", "--duration", "1s", "--interval", "100ms", "-o", "-")
	if code != 0 {
		t.Fatalf("telemetry synthetic -o -: exit %d: %s", code, stderr)
	}
	tel, err := control.ReadTelemetry(strings.NewReader(out))
	if err != nil || len(tel) != 11 || !strings.Contains(stderr, "11 samples") {
		t.Errorf("telemetry synthetic -o -: %d samples on stdout (%v), stderr %q; want 11 (0 to 1 s every 100 ms)", len(tel), err, stderr)
	}
	code, out, stderr = nfabric(t, "timing", "run", "--memory", "ideal", "--trace-out", "-", "--trace-until-ns", "500")
	if code != 0 {
		t.Fatalf("timing run --trace-out -: exit %d: %s", code, stderr)
	}
	var doc struct {
		TraceEvents []json.RawMessage `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.TraceEvents) == 0 || !strings.Contains(stderr, "exposed") {
		t.Errorf("timing run --trace-out -: stdout is not a trace (%v, %d events); stderr %q", err, len(doc.TraceEvents), stderr)
	}
	if code, _, _ := nfabric(t, "timing", "run", "--trace-out", "-", "--json"); code != 2 {
		t.Errorf("--trace-out - --json: exit %d; want 2", code)
	}
	// A duration and interval near the largest duration are two samples
	// (the loop used to overflow past the duration and never end).
	code, out, stderr = nfabric(t, "telemetry", "synthetic", "--duration", "2562047h", "--interval", "2562047h", "-o", "-")
	if tel, err := control.ReadTelemetry(strings.NewReader(out)); code != 0 || err != nil || len(tel) != 2 {
		t.Errorf("--duration = --interval = 2562047h: exit %d, %d samples (%v), stderr %q; want 2", code, len(tel), err, stderr)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`a file named "-" was written`)
	}
}
