package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/netsim"
)

func TestTelemetryUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"telemetry"}, 0},        // a bare group prints its help
		{[]string{"telemetry", "ns3"}, 2}, // no -o
		{[]string{"telemetry", "ns3", "-o", "x.csv", "--background", "udp=3"}, 2},
		{[]string{"telemetry", "ns3", "-o", "x.csv", "--topology", "ring"}, 2},
		{[]string{"telemetry", "ns3", "-o", "x.csv", "--link", "fast"}, 2},
		{[]string{"telemetry", "ns3", "-o", "x.csv", "--workers", "1"}, 2},
		{[]string{"telemetry", "synthetic"}, 2},
		{[]string{"telemetry", "synthetic", "-o", "x.csv", "--scenario", "stormy"}, 2},
		{[]string{"telemetry", "synthetic", "-o", "x.csv", "--interval", "-1s"}, 2},
	} {
		code, _, stderr := nfabric(t, tt.args...)
		if code != tt.code || (code != 0 && !strings.HasPrefix(stderr, "nfabric: ")) {
			t.Errorf("nfabric %s: exit %d (stderr %q); want %d", strings.Join(tt.args, " "), code, stderr, tt.code)
		}
	}
}

// The synthetic writer's file is what control.ReadTelemetry reads, sample
// for sample the generator's trace.
func TestTelemetrySyntheticRoundTrip(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.csv")
	code, _, stderr := nfabric(t, "telemetry", "synthetic", "--scenario", "congested", "--duration", "1s", "--interval", "10ms", "--seed", "3", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := control.ReadTelemetry(f)
	if err != nil {
		t.Fatal(err)
	}
	c := control.CongestedScenario()
	c.StepNS = 100e6
	want, _ := c.Generate(1e9, 10e6, 3)
	if len(got) != len(want) {
		t.Fatalf("%d samples; want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}

func TestTelemetryNS3Missing(t *testing.T) {
	t.Setenv(netsim.EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "t.csv")
	code, _, stderr := nfabric(t, "telemetry", "ns3", "-o", out)
	if code != 1 || !strings.Contains(stderr, "libns3-dev") {
		t.Errorf("without ns-3: exit %d, stderr %q; want 1 naming libns3-dev", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output file was written")
	}
}

// A bad telemetry file fails before anything trains, naming the file.
func TestPilotTelemetryBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("time,demand\n1,2\n"), 0o644)
	for _, p := range []string{bad, filepath.Join(dir, "missing.csv")} {
		code, _, stderr := nfabric(t, "pilot", "--telemetry", p)
		if code != 1 || !strings.Contains(stderr, filepath.Base(p)) {
			t.Errorf("pilot --telemetry %s: exit %d, stderr %q; want 1 naming the file", p, code, stderr)
		}
	}
}
