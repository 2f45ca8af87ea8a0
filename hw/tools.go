package hw

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Tool is an external program the flow drives, with the Debian package
// that provides it.
type Tool struct {
	Name    string // executable name
	Package string // Debian package
	// VersionArgs print the version (first line of the output is kept).
	VersionArgs []string
}

// The tools of the flow.
var (
	Yosys     = Tool{"yosys", "yosys", []string{"-V"}}
	Verilator = Tool{"verilator", "verilator", []string{"--version"}}
	Iverilog  = Tool{"iverilog", "iverilog", []string{"-V"}}
	Vvp       = Tool{"vvp", "iverilog", []string{"-V"}}
	Nextpnr   = Tool{"nextpnr-ice40", "nextpnr-ice40", []string{"--version"}}
	Icepack   = Tool{"icepack", "fpga-icestorm", nil}
)

// AllTools lists every tool in the order versions are reported.
var AllTools = []Tool{Yosys, Verilator, Iverilog, Nextpnr}

// MissingToolError reports an external tool that is not installed.
type MissingToolError struct{ Tool Tool }

func (e *MissingToolError) Error() string {
	return fmt.Sprintf("%s not found in PATH (install the Debian package %s: apt-get install -y %s)",
		e.Tool.Name, e.Tool.Package, e.Tool.Package)
}

// Path returns the tool's path or a *MissingToolError.
func (t Tool) Path() (string, error) {
	p, err := exec.LookPath(t.Name)
	if err != nil {
		return "", &MissingToolError{Tool: t}
	}
	return p, nil
}

// Available reports whether the tool is installed.
func (t Tool) Available() bool {
	_, err := t.Path()
	return err == nil
}

// Version returns the first line the tool prints for its version flags,
// or "not installed (Debian package P)".
func (t Tool) Version(ctx context.Context) string {
	p, err := t.Path()
	if err != nil {
		return fmt.Sprintf("not installed (Debian package %s)", t.Package)
	}
	if t.VersionArgs == nil {
		return "installed"
	}
	out, _ := exec.CommandContext(ctx, p, t.VersionArgs...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "unknown version"
	}
	return line
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
	if err := cmd.Run(); err != nil {
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
