package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/neuronfabric/nfabric/control"
)

// TestHostileSizesExit2: sizes that used to end in an out-of-memory crash,
// an overflow or a run of hours are usage errors naming the flag or the
// limit, given before any work and with no output written.
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
// on stderr, and no file named "-" appears.
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

// TestHostileFlagsExit2: zero, empty and inapplicable values and secondary
// output paths that cannot be written are usage errors before any work.
func TestHostileFlagsExit2(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "regular")
	os.WriteFile(file, []byte("keep"), 0o644)
	missing := filepath.Join(dir, "no", "such", "f")
	g := filepath.Join(dir, "g.f32")
	os.WriteFile(g, make([]byte, 64), 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"timing", "run", "--memory", ""}, "--memory"},
		{[]string{"timing", "run", "--layout", ""}, "--layout"},
		{[]string{"timing", "run", "--memory", "ideal", "--dram-channels", "4"}, "--dram-channels"},
		{[]string{"timing", "run", "--dram-preset", "ddr5-6400"}, "--dram-preset"},
		{[]string{"timing", "run", "--host-bridge-ns", "50"}, "--host-bridge-ns"},
		{[]string{"timing", "run", "--cxl-device", "gpu"}, "--cxl-device"},
		{[]string{"timing", "run", "--cxl-device", "asic-pcie5-x8", "--memory", "ideal"}, "--cxl-device"},
		{[]string{"timing", "run", "--cxl-device", "asic-pcie5-x8", "--device-response-queue", "0"}, "device.response_queue"},
		{[]string{"timing", "loaded-latency", "--cxl-link", "pcie7-x16"}, "--cxl-link"},
		{[]string{"train", "sweep", "--workers", "9", "--layout", "element-major"}, "8 workers"},
		{[]string{"train", "run", "--epochs", "50", "--checkpoint", missing}, "--checkpoint"},
		{[]string{"timing", "run", "--trace-out", missing}, "--trace-out"},
		{[]string{"telemetry", "ns3", "-o", filepath.Join(dir, "t.csv"), "--figure", missing}, "--figure"},
		{[]string{"telemetry", "ns3", "-o", filepath.Join(dir, "t.csv"), "--links-out", missing}, "--links-out"},
		{[]string{"hw", "pnr", "--dir", file}, "--dir"},
		{[]string{"payload", "encode", "--workers", "4", "--format", "g-ternary", "--gate", "pattern:0", "-o", filepath.Join(dir, "x"), g}, "pattern:0"},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("nfabric %s: exit %d, stderr %q; want 2 naming %q", strings.Join(c.args, " "), code, stderr, c.msg)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the regular file now holds %q", b)
	}
}

// TestCollectiveRowAbsentSaysWhy: 13 workers with the default --per-node 4
// run, and the hierarchical row that cannot be built is named as absent;
// a --per-node the user gives must still divide.
func TestCollectiveRowAbsentSaysWhy(t *testing.T) {
	code, out, stderr := nfabric(t, "collective", "--workers", "13", "--exposure", "1.67")
	if code != 0 || strings.Contains(out, "| FP32 hierarchical") || !strings.Contains(out, "No FP32 hierarchical row: 13 workers do not form whole nodes of 4") {
		t.Errorf("collective --workers 13: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
	if code, _, _ := nfabric(t, "collective", "--workers", "13", "--per-node", "4", "--exposure", "1.67"); code != 2 {
		t.Errorf("explicit --per-node 4 with 13 workers: exit %d; want 2", code)
	}
}

// TestProfileNameIsNotAPath: a profile whose name holds ../.. and a / has
// its figure written inside --out, never outside it.
func TestProfileNameIsNotAPath(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.yaml")
	os.WriteFile(prof, []byte("name: ../../a/b<script>\nlayers:\n  - name: fc\n    tensors: [{name: weight, shape: [256, 784]}]\n"), 0o644)
	out := filepath.Join(dir, "o", "p")
	code, _, stderr := nfabric(t, "collective", "--model", prof, "--models", "gpt2-xl", "--exposure", "1.67", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	if len(svgs) != 1 || filepath.Base(svgs[0]) != "fig7a-.._.._a_b_script_.svg" {
		t.Errorf("figures in --out: %v", svgs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d entries beside --out; want p.yaml and o", len(ents))
	}
	md, _ := os.ReadFile(filepath.Join(out, "collective.md"))
	if strings.Contains(string(md), "<script>") {
		t.Error("raw <script> in collective.md")
	}
}

// TestPayloadEncodeFromFIFO: gradients from a FIFO are read whole and
// encode to the same payload as from the file (a pipe once encoded 0
// elements and exited 0).
func TestPayloadEncodeFromFIFO(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	if code, _, e := nfabric(t, "payload", "random", "--workers", "4", "--elements", "1000", "-o", g); code != 0 {
		t.Fatal(e)
	}
	fromFile := filepath.Join(dir, "a.nfp")
	if code, _, e := nfabric(t, "payload", "encode", "--workers", "4", "-o", fromFile, g); code != 0 {
		t.Fatal(e)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	data, _ := os.ReadFile(g)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.Write(data)
			w.Close()
		}
	}()
	fromFIFO := filepath.Join(dir, "b.nfp")
	code, _, stderr := nfabric(t, "payload", "encode", "--workers", "4", "-o", fromFIFO, fifo)
	a, _ := os.ReadFile(fromFile)
	b, _ := os.ReadFile(fromFIFO)
	if code != 0 || !bytes.Equal(a, b) || !strings.Contains(stderr, "4 workers x 1000 elements") {
		t.Errorf("encode from a FIFO: exit %d, %d bytes (file: %d), stderr %q", code, len(b), len(a), stderr)
	}
}

// TestPilotHeaderOnlyTelemetry: a telemetry file with only its header is
// an error naming the file, before anything trains, not an empty trace
// the pilot would replace with its synthetic episodes.
func TestPilotHeaderOnlyTelemetry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.csv")
	os.WriteFile(p, []byte(control.TelemetryHeader+"\n"), 0o644)
	code, _, stderr := nfabric(t, "pilot", "--telemetry", p)
	if code != 1 || !strings.Contains(stderr, "h.csv") || !strings.Contains(stderr, "no sample") {
		t.Errorf("pilot --telemetry header-only: exit %d, stderr %q", code, stderr)
	}
}
