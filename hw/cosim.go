package hw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/report"
)

// Simulator is an HDL simulator the co-simulation drives.
type Simulator string

const (
	// SimVerilator compiles the RTL to C++ with Verilator (primary).
	SimVerilator Simulator = "verilator"
	// SimIcarus interprets the RTL with Icarus Verilog (second opinion).
	SimIcarus Simulator = "iverilog"
)

// Simulators lists the supported simulators, primary first.
var Simulators = []Simulator{SimVerilator, SimIcarus}

// Tools returns the programs sim needs.
func (s Simulator) Tools() []Tool {
	if s == SimIcarus {
		return []Tool{Iverilog, Vvp}
	}
	return []Tool{Verilator}
}

// Check returns a *MissingToolError if sim's tools are not installed.
func (s Simulator) Check() error {
	switch s {
	case SimVerilator, SimIcarus:
	default:
		return fmt.Errorf("unknown simulator %q (want verilator or iverilog)", string(s))
	}
	for _, t := range s.Tools() {
		if _, err := t.Path(); err != nil {
			return err
		}
	}
	return nil
}

// Vector is one request presented to the datapath in one clock cycle.
type Vector struct {
	Valid bool
	// Mode is the controller mode latched for the request: one of the
	// paper's four (cxl.Modes), driven on in_mode as its value 0 to 3.
	Mode cxl.Mode
	// Base is the flattened index of element 0 (the datapath sees Base mod 3).
	Base int
	// Data holds Width/8 bytes; byte i is element i.
	Data []byte
	// The sum datapaths' fields (Mode and Base are theirs unused): First
	// and Last mark an aggregate's first and last line; ExpLine marks a
	// BFP8 exponent line (the first pass); Exp and EMax hold, for a
	// BFP8 mantissa line, the worker's exponent and the block maximum
	// E of each of the line's ExpGroups blocks (int8 bytes).
	First, Last, ExpLine bool
	Exp, EMax            []byte
}

// Expect returns, for each of vs in turn, the response the datapath
// must give Latency() rising edges after it: nil where out_valid must
// stay low, else out_data's OutWidth()/8 bytes, element first. The vote
// datapath answers every valid line (lowbit.RefCountPacket under
// G-Binary, lowbit.RefAggregatePacket under G-Ternary, the line itself in
// identity and FP32 bypass); a sum datapath answers an aggregate's last
// line with its view (lowbit.Format.RefSumCodes of the lines since its
// first). The oracles are lowbit's Ref twins, never the generated RTL's
// logic.
func Expect(c Config, vs []Vector) [][]byte {
	c = c.Normalized()
	if f := c.Datapath.fam(); f != nil {
		return f.expect(c, vs)
	}
	return make([][]byte, len(vs))
}

// Vectors returns n requests for c: the family's corner cases first (the
// vote datapath's all-zero and all-one lines, every tie pattern, single
// workers, each base phase in every mode; a sum datapath's extreme codes,
// saturating aggregates and every alignment shift), with idle cycles,
// then random ones. The same seed gives the same vectors.
func Vectors(c Config, n int, seed uint64) []Vector {
	c = c.Normalized()
	if f := c.Datapath.fam(); f != nil {
		return f.vectors(c, n, seed)
	}
	return nil
}

// Mismatch is one response that differs from the oracle.
type Mismatch struct {
	Cycle int    `json:"cycle"`
	Input string `json:"input"`
	Got   string `json:"got"`
	Want  string `json:"want"`
}

// CosimResult is the outcome of one co-simulation run.
type CosimResult struct {
	Width     int       `json:"width"`
	Stages    int       `json:"stages"`
	Workers   int       `json:"workers"`
	Datapath  Datapath  `json:"datapath,omitempty"`
	Fault     Fault     `json:"fault,omitempty"`
	Split     bool      `json:"split_count,omitempty"`
	Simulator Simulator `json:"simulator"`
	// Vectors is the number of requests driven, Checked the valid
	// responses compared with the oracle, Mismatches those that differed
	// (including valid-bit errors).
	Vectors    int        `json:"vectors"`
	Checked    int        `json:"checked"`
	Mismatches int        `json:"mismatches"`
	First      []Mismatch `json:"first_mismatches,omitempty"`
}

// Passed reports whether every response matched.
func (r CosimResult) Passed() bool { return r.Mismatches == 0 && r.Checked > 0 }

// String is one summary line.
func (r CosimResult) String() string {
	status := "PASS"
	if !r.Passed() {
		status = "FAIL"
	}
	f := ""
	if r.Split {
		f += " split-count"
	}
	if r.Fault != FaultNone {
		f = " fault=" + string(r.Fault)
	}
	return fmt.Sprintf("%s %-9s %s width=%-4d stages=%d workers=%d%s: %d vectors, %d responses checked, %d mismatches",
		status, r.Simulator, r.Datapath, r.Width, r.Stages, r.Workers, f, r.Vectors, r.Checked, r.Mismatches)
}

// EncodeVector writes the line-protocol form of v for c's datapath: one
// field per request port (inputs order), each (width+3)/4 hex digits,
// most significant first. For the vote datapath that is "valid mode base
// data", base reduced mod 3; for a sum datapath "valid first last [kind
// exp emax] data" (kind, exp and emax with block exponents).
func (c Config) EncodeVector(v Vector) string {
	c = c.Normalized()
	ps := c.Datapath.fam().inputs(c)
	f := make([]string, len(ps))
	for i, p := range ps {
		f[i] = hexField(p.value(v), p.w)
	}
	return strings.Join(f, " ")
}

// ParseResponse parses one output line "valid hex" of a datapath of
// width bits; the bytes come back element-first.
func ParseResponse(line string, width int) (valid bool, data []byte, err error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return false, nil, fmt.Errorf("response %q: want 2 fields, got %d", trunc(line), len(f))
	}
	switch f[0] {
	case "0":
	case "1":
		valid = true
	default:
		return false, nil, fmt.Errorf("response %q: valid bit %q is not 0 or 1", trunc(line), f[0])
	}
	if len(f[1]) != width/4 {
		return false, nil, fmt.Errorf("response %q: %d hex digits, want %d", trunc(line), len(f[1]), width/4)
	}
	raw, err := hex.DecodeString(f[1])
	if err != nil {
		// x or z bits (uninitialised registers) show as non-hex digits.
		if !valid {
			return false, nil, nil
		}
		return false, nil, fmt.Errorf("response %q: %v", trunc(line), err)
	}
	data = make([]byte, len(raw))
	for i, b := range raw {
		data[len(raw)-1-i] = b
	}
	return valid, data, nil
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Cosim generates c's RTL, builds it with sim in a fresh directory under
// dir (a temporary directory when dir is ""), drives vs through it one
// vector per clock and compares every response with Expect. It returns an
// error only when the flow itself fails (a missing tool, a compile error,
// vectors the datapath cannot answer); wrong responses are counted in the
// result.
func Cosim(ctx context.Context, c Config, sim Simulator, vs []Vector, dir string) (CosimResult, error) {
	if err := c.Validate(); err != nil {
		return CosimResult{}, err
	}
	c = c.Normalized()
	f := c.Datapath.fam()
	res := CosimResult{Width: c.Width, Stages: c.Stages, Workers: c.Workers, Datapath: c.Datapath, Fault: c.Fault, Split: c.SplitCount, Simulator: sim, Vectors: len(vs)}
	if err := f.check(c, vs); err != nil {
		return res, err
	}
	var in bytes.Buffer
	for _, v := range vs {
		in.WriteString(c.EncodeVector(v))
		in.WriteByte('\n')
	}
	idle := Vector{Data: make([]byte, c.Elements())}
	for range c.Latency() - 1 { // flush the pipeline
		in.WriteString(c.EncodeVector(idle))
		in.WriteByte('\n')
	}
	out, err := simulate(ctx, c, sim, in.Bytes(), dir)
	if err != nil {
		return res, err
	}
	compare(c, vs, f.expect(c, vs), out, &res)
	return res, nil
}

// simulate writes c's Verilog (c validated and normalized) into a work
// directory under dir, runs sim on the encoded input lines in and returns
// its output lines.
func simulate(ctx context.Context, c Config, sim Simulator, in []byte, dir string) ([]byte, error) {
	if err := sim.Check(); err != nil {
		return nil, err
	}
	work, cleanup, err := workDir(dir, "cosim-"+c.ModuleName()+"-"+string(sim))
	if err != nil {
		return nil, err
	}
	defer cleanup()
	src, err := c.Verilog()
	if err != nil {
		return nil, err
	}
	vfile := c.ModuleName() + ".v"
	if err := os.WriteFile(filepath.Join(work, vfile), []byte(src), 0o644); err != nil {
		return nil, err
	}
	switch sim {
	case SimVerilator:
		return runVerilator(ctx, c, work, vfile, in)
	case SimIcarus:
		return runIcarus(ctx, c, work, vfile, in)
	}
	return nil, fmt.Errorf("unknown simulator %q", sim)
}

// compare checks the simulator's output lines against the oracle. Output
// line j (after the j-th clock edge) answers input j-(k-1).
// mismatch records m, keeping the first five.
func (res *CosimResult) mismatch(m Mismatch) {
	res.Mismatches++
	if len(res.First) < 5 {
		res.First = append(res.First, m)
	}
}

// responseLines returns the simulator's non-empty output lines, trimmed.
func responseLines(out []byte) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// compare checks the simulator's output against want (Expect of vs):
// output line j answers input j-(k-1), which must be valid exactly when
// want has a response for it, and then equal it.
func compare(c Config, vs []Vector, want [][]byte, out []byte, res *CosimResult) {
	k := c.Latency()
	bad := res.mismatch
	j := 0
	for _, line := range responseLines(out) {
		valid, got, err := ParseResponse(line, c.OutWidth())
		i := j - (k - 1)
		j++
		if err != nil {
			bad(Mismatch{Cycle: j - 1, Got: err.Error()})
			continue
		}
		var exp []byte
		in := ""
		if i >= 0 && i < len(vs) {
			exp, in = want[i], trunc(c.EncodeVector(vs[i]))
		}
		if valid != (exp != nil) {
			if in == "" {
				bad(Mismatch{Cycle: j - 1, Got: "valid response with no request", Want: "out_valid=0"})
				continue
			}
			bad(Mismatch{Cycle: j - 1, Input: in, Got: fmt.Sprintf("out_valid=%v", valid), Want: fmt.Sprintf("out_valid=%v", exp != nil)})
			continue
		}
		if !valid {
			continue
		}
		res.Checked++
		if !bytes.Equal(got, exp) {
			bad(Mismatch{Cycle: j - 1, Input: in, Got: hexMSB(got), Want: hexMSB(exp)})
		}
	}
	if wantLines := len(vs) + k - 1; j != wantLines {
		bad(Mismatch{Cycle: j, Got: fmt.Sprintf("%d response lines", j), Want: fmt.Sprintf("%d", wantLines)})
	}
}

// workDir makes a fresh directory named after stem under dir (or a temp
// directory) and returns it with a cleanup that removes temp directories.
func workDir(dir, stem string) (string, func(), error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "nfabric-hw-"+stem+"-")
		if err != nil {
			return "", nil, fmt.Errorf("create work directory: %w", err)
		}
		release := report.RegisterTemp(d) // an interrupt removes it too
		return d, func() { os.RemoveAll(d); release() }, nil
	}
	d := filepath.Join(dir, stem)
	if err := os.RemoveAll(d); err != nil {
		return "", nil, fmt.Errorf("clear work directory %s: %w", d, err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", nil, fmt.Errorf("create work directory %s: %w", d, err)
	}
	return d, func() {}, nil
}

// runVerilator builds the RTL with a generated C++ harness and runs it.
func runVerilator(ctx context.Context, c Config, work, vfile string, in []byte) ([]byte, error) {
	harness := verilatorHarness(c)
	if err := os.WriteFile(filepath.Join(work, "harness.cpp"), []byte(harness), 0o644); err != nil {
		return nil, err
	}
	args := []string{"--cc", "--exe", "--build", "-O1", "-Wno-fatal", "--x-assign", "fast", "--x-initial", "fast",
		"--prefix", "Vdut", "--top-module", c.ModuleName(), "-Mdir", "obj", "-o", "simv",
		"-CFLAGS", "-O0", "-MAKEFLAGS", "-j2", vfile, "harness.cpp"}
	if _, err := run(ctx, work, nil, Verilator, args...); err != nil {
		return nil, fmt.Errorf("verilator build of %s: %w", c.ModuleName(), err)
	}
	out, err := runBinary(ctx, filepath.Join(work, "obj", "simv"), work, in)
	if err != nil {
		return nil, fmt.Errorf("verilator simulation of %s: %w", c.ModuleName(), err)
	}
	return out, nil
}

// runIcarus compiles the RTL with a $fscanf testbench and runs it in vvp.
func runIcarus(ctx context.Context, c Config, work, vfile string, in []byte) ([]byte, error) {
	bench := icarusBench(c)
	if err := os.WriteFile(filepath.Join(work, "tb.v"), []byte(bench), 0o644); err != nil {
		return nil, err
	}
	if _, err := run(ctx, work, nil, Iverilog, "-g2005", "-o", "simv.vvp", "-s", "tb", vfile, "tb.v"); err != nil {
		return nil, fmt.Errorf("iverilog compile of %s: %w", c.ModuleName(), err)
	}
	out, err := run(ctx, work, in, Vvp, "-n", "simv.vvp")
	if err != nil {
		return nil, fmt.Errorf("vvp simulation of %s: %w", c.ModuleName(), err)
	}
	return out, nil
}

func runBinary(ctx context.Context, path, dir string, in []byte) ([]byte, error) {
	return run(ctx, dir, in, Tool{Name: path, Package: "(built)"})
}
