package hw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
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
	// bfp8-sum exponent line (the first pass); Exp and EMax hold, for a
	// bfp8-sum mantissa line, the worker's exponent and the block maximum
	// E of each of the line's ExpGroups blocks (int8 bytes).
	First, Last, ExpLine bool
	Exp, EMax            []byte
}

// Expect returns the response the low-bit datapath must give for v,
// computed by the lowbit reference oracles (RefCountPacket,
// RefAggregatePacket). A sum datapath answers an aggregate, not a line:
// see ExpectSum.
func Expect(c Config, v Vector) []byte {
	c = c.Normalized()
	out := make([]byte, len(v.Data))
	switch v.Mode {
	case cxl.Aggregate(lowbit.Binary):
		for i, n := range lowbit.RefCountPacket(v.Data, c.Workers) {
			out[i] = byte(n)
		}
	case cxl.Aggregate(lowbit.Ternary):
		s := lowbit.Spec{Workers: c.Workers, Layout: lowbit.ElementMajor, Format: lowbit.Ternary, Gate: lowbit.PaperGate}
		for i, u := range lowbit.RefAggregatePacket(v.Data, nil, s, v.Base) {
			out[i] = byte(u)
		}
	default:
		copy(out, v.Data)
	}
	return out
}

// Vectors returns n requests for c: first the corner cases (all-zero and
// all-one lines, every tie pattern, single workers, each base phase, in
// every mode, plus idle cycles), then random lines, modes and bases. The
// same seed gives the same vectors.
func Vectors(c Config, n int, seed uint64) []Vector {
	c = c.Normalized()
	if c.Datapath.IsSum() {
		return sumVectors(c, n, seed)
	}
	nb := c.Elements()
	rng := rand.New(rand.NewPCG(seed, uint64(c.Width)))
	fill := func(f func(i int) byte) []byte {
		d := make([]byte, nb)
		for i := range d {
			d[i] = f(i)
		}
		return d
	}
	var lines [][]byte
	for _, b := range []byte{0x00, 0xff, 0x0f, 0xf0, 0x55, 0xaa, 0x33, 0xcc, 0x80, 0x01, 0x7f, 0xfe} {
		lines = append(lines, fill(func(int) byte { return b }))
	}
	// Every byte value somewhere: bytes i, i+nb, ...
	for off := 0; off < 256; off += nb {
		lines = append(lines, fill(func(i int) byte { return byte(off + i) }))
	}
	var vs []Vector
	for _, d := range lines {
		for _, m := range cxl.Modes() {
			for base := range 3 {
				if m != cxl.Aggregate(lowbit.Ternary) && base > 0 {
					continue
				}
				vs = append(vs, Vector{Valid: true, Mode: m, Base: base, Data: d})
			}
		}
		vs = append(vs, Vector{Data: make([]byte, nb)}) // an idle cycle
	}
	for len(vs) < n {
		v := Vector{Valid: rng.IntN(8) != 0, Mode: cxl.Modes()[rng.IntN(4)], Base: rng.IntN(1 << 20)}
		v.Data = fill(func(int) byte { return byte(rng.Uint32()) })
		if rng.IntN(4) == 0 { // biased bytes make ties and near-ties common
			v.Data = fill(func(int) byte { return []byte{0x0f, 0x1f, 0x07, 0x3c, 0x00, 0xff}[rng.IntN(6)] })
		}
		vs = append(vs, v)
	}
	if n < len(vs) && n > 0 {
		vs = vs[:n]
	}
	return vs
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
	if r.Datapath.IsSum() {
		return fmt.Sprintf("%s %-9s %s width=%-4d stages=%d workers=%d%s: %d vectors, %d aggregates checked, %d mismatches",
			status, r.Simulator, r.Datapath, r.Width, r.Stages, r.Workers, f, r.Vectors, r.Checked, r.Mismatches)
	}
	return fmt.Sprintf("%s %-9s width=%-4d stages=%d workers=%d%s: %d vectors, %d responses checked, %d mismatches",
		status, r.Simulator, r.Width, r.Stages, r.Workers, f, r.Vectors, r.Checked, r.Mismatches)
}

// EncodeVector writes the line-protocol form of v: "valid mode base hex",
// base reduced mod 3 and the data as hex, most significant byte first.
func EncodeVector(v Vector) string {
	valid := 0
	if v.Valid {
		valid = 1
	}
	return fmt.Sprintf("%d %d %d %s", valid, v.Mode, v.Base%3, hexMSB(v.Data))
}

// hexMSB renders bytes as hex with the last byte first (Verilog order).
func hexMSB(d []byte) string {
	r := make([]byte, len(d))
	for i, b := range d {
		r[len(d)-1-i] = b
	}
	return hex.EncodeToString(r)
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
// error only when the flow itself fails (a missing tool, a compile error);
// wrong responses are counted in the result.
func Cosim(ctx context.Context, c Config, sim Simulator, vs []Vector, dir string) (CosimResult, error) {
	if err := c.Validate(); err != nil {
		return CosimResult{}, err
	}
	c = c.Normalized()
	res := CosimResult{Width: c.Width, Stages: c.Stages, Workers: c.Workers, Datapath: c.Datapath, Fault: c.Fault, Split: c.SplitCount, Simulator: sim, Vectors: len(vs)}
	encode := EncodeVector
	if c.Datapath.IsSum() {
		if err := c.checkSumVectors(vs); err != nil {
			return res, err
		}
		encode = c.EncodeSumVector
	}
	var in bytes.Buffer
	for _, v := range vs {
		in.WriteString(encode(v))
		in.WriteByte('\n')
	}
	idle := Vector{Data: make([]byte, c.Elements())}
	for range c.Latency() - 1 { // flush the pipeline
		in.WriteString(encode(idle))
		in.WriteByte('\n')
	}
	out, err := simulate(ctx, c, sim, in.Bytes(), dir)
	if err != nil {
		return res, err
	}
	if c.Datapath.IsSum() {
		compareSum(c, vs, out, &res)
	} else {
		compare(c, vs, out, &res)
	}
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

func compare(c Config, vs []Vector, out []byte, res *CosimResult) {
	k := c.Latency()
	bad := res.mismatch
	j := 0
	for _, line := range responseLines(out) {
		valid, got, err := ParseResponse(line, c.Width)
		i := j - (k - 1)
		j++
		if err != nil {
			bad(Mismatch{Cycle: j - 1, Got: err.Error()})
			continue
		}
		if i < 0 || i >= len(vs) {
			if valid {
				bad(Mismatch{Cycle: j - 1, Got: "valid response with no request", Want: "out_valid=0"})
			}
			continue
		}
		v := vs[i]
		if valid != v.Valid {
			bad(Mismatch{Cycle: j - 1, Input: EncodeVector(v), Got: fmt.Sprintf("out_valid=%v", valid), Want: fmt.Sprintf("out_valid=%v", v.Valid)})
			continue
		}
		if !valid {
			continue
		}
		res.Checked++
		if want := Expect(c, v); !bytes.Equal(got, want) {
			bad(Mismatch{Cycle: j - 1, Input: EncodeVector(v), Got: hexMSB(got), Want: hexMSB(want)})
		}
	}
	if want := len(vs) + k - 1; j != want {
		bad(Mismatch{Cycle: j, Got: fmt.Sprintf("%d response lines", j), Want: fmt.Sprintf("%d", want)})
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
	if c.Datapath.IsSum() {
		harness = sumVerilatorHarness(c)
	}
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
	if c.Datapath.IsSum() {
		bench = sumIcarusBench(c)
	}
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
