package main

import (
	"encoding/json"
	"math"
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
		{[]string{"collective", "--model", "nope", "--exposure", "1"}, 2}, // a name typo is a usage error, found before any work
		{[]string{"collective", "--links", links, "--exposure", "1"}, 1},
		{[]string{"collective", "--links", "/no/such.yaml", "--exposure", "1"}, 1},
	} {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code || !strings.HasPrefix(stderr, "nfabric: ") {
			t.Errorf("nfabric %s: exit %d (want %d), stderr %q", strings.Join(c.args, " "), code, c.code, stderr)
		}
	}
}

// rtTemplateFiles writes astra-sim/astra-sim's tests/rt_template/inputs
// network_cfg.yml and system_cfg.json (their contents as ASTRA-sim ships
// them) into dir.
func rtTemplateFiles(t *testing.T, dir string) (network, system string) {
	t.Helper()
	network, system = filepath.Join(dir, "network_cfg.yml"), filepath.Join(dir, "system_cfg.json")
	os.WriteFile(network, []byte("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]  # GB/s\nlatency: [ 500.0 ]  # ns\n"), 0o644)
	os.WriteFile(system, []byte(`{
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    "all-reduce-implementation": ["ring"],
    "all-gather-implementation": ["ring"],
    "reduce-scatter-implementation": ["ring"],
    "all-to-all-implementation": ["ring"],
    "collective-optimization": "localBWAware",
    "local-mem-bw": 50,
    "boost-mode": 0
}
`), 0o644)
	return network, system
}

// TestCollectiveAstraRTTemplate: with ASTRA-sim's rt_template configs, the
// 1 MiB (262,144-element) ring All-Reduce on 8 NPUs is 117,780 cycles, as
// ASTRA-sim prints (tests/rt_template/refs/stdout.txt), and the workers
// come from the network file.
func TestCollectiveAstraRTTemplate(t *testing.T) {
	net, sys := rtTemplateFiles(t, t.TempDir())
	code, out, stderr := nfabric(t, "collective", "--astra-network", net, "--astra-system", sys, "--elements", "262144",
		"--exposure", "1.67", "--models", "resnet18-cifar10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Data struct {
			Fig7 struct {
				Rows []struct {
					Path    string  `json:"path"`
					Seconds float64 `json:"seconds"`
				} `json:"rows"`
			} `json:"fig7"`
		} `json:"data"`
		Tables []struct {
			Name string     `json:"name"`
			Rows [][]string `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range r.Data.Fig7.Rows {
		if strings.HasPrefix(row.Path, "FP32 ASTRA-sim ring") {
			found = math.Abs(row.Seconds-117780e-9) < 1e-15
		}
	}
	astraCycles := ""
	for _, tb := range r.Tables {
		if tb.Name == "astra" && len(tb.Rows) > 0 {
			astraCycles = tb.Rows[0][1]
		}
	}
	if !found || astraCycles != "117780" {
		t.Errorf("rt_template all-reduce: fig7 row found %v, astra table %q cycles; want 117780", found, astraCycles)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"collective", "--astra-network", net, "--exposure", "1"}, 2},                        // one file without the other
		{[]string{"collective", "--astra-network", net, "--astra-system", sys, "--workers", "4"}, 2},  // the network has 8 NPUs
		{[]string{"collective", "--astra-network", net, "--astra-system", net, "--exposure", "1"}, 1}, // YAML given as the JSON
	} {
		if code, _, stderr := nfabric(t, c.args...); code != c.code {
			t.Errorf("nfabric %s: exit %d (want %d): %s", strings.Join(c.args, " "), code, c.code, stderr)
		}
	}
}
