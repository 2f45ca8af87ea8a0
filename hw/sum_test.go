package hw

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// The sum datapaths under test, by name as a user writes them.
const int8DP, bfp8DP Datapath = "int8", "bfp8"

// sumDatapaths lists the datapaths beyond the paper's vote datapath.
func sumDatapaths() []Datapath {
	var ds []Datapath
	for _, d := range Datapaths() {
		if !d.Paper() {
			ds = append(ds, d)
		}
	}
	return ds
}

// specSum is the test's own reading of FORMATS-SPEC for one aggregate,
// written from the spec's formulas and independent of lowbit: int16 lane
// sums, or the exponent view, as out_data's bytes.
func specSum(c Config, lines []Vector) []byte {
	c = c.Normalized()
	n := c.Elements()
	out := make([]byte, 2*n)
	sat := func(s int) int16 { return int16(max(-32768, min(32767, s))) }
	put := func(i int, v int16) { binary.LittleEndian.PutUint16(out[2*i:], uint16(v)) }
	switch {
	case !c.blockExps():
		for i := range n {
			s := 0
			for _, v := range lines {
				s += int(int8(v.Data[i]))
			}
			put(i, sat(s))
		}
	case lines[len(lines)-1].ExpLine:
		for i := range n {
			e := -127
			for _, v := range lines {
				e = max(e, int(int8(v.Data[i])))
			}
			out[i] = byte(int8(e))
		}
	default:
		for i := range n {
			b := i / lowbit.BFPBlock
			top := -127
			for _, v := range lines {
				top = max(top, int(int8(v.Exp[b])))
			}
			s := 0
			for _, v := range lines {
				m, k := int(int8(v.Data[i])), min(top-int(int8(v.Exp[b])), 8)
				if k > 0 {
					// round to nearest, ties toward +inf: floor(m/2^k + 1/2)
					d := 1 << k
					q := (2*m + d) / (2 * d)
					if (2*m+d)%(2*d) < 0 {
						q-- // Go's division truncates; floor it
					}
					m = q
				}
				s += m
			}
			put(i, sat(s))
		}
	}
	return out
}

// aggregates splits vs into its aggregates' valid lines.
func aggregates(vs []Vector) [][]Vector {
	var out [][]Vector
	var cur []Vector
	for _, v := range vs {
		if !v.Valid {
			continue
		}
		if v.First {
			cur = nil
		}
		cur = append(cur, v)
		if v.Last {
			out = append(out, cur)
		}
	}
	return out
}

// TestExpectSumAgreesWithKernels checks the sum family's co-simulation
// oracle (lowbit's Ref twins, through Expect) against the fast kernels the controller model uses and
// against the test's own reading of the spec, on every aggregate the
// vector generator makes (saturating ones included at 300 workers, two
// blocks per line at 1024 bits).
func TestExpectSumAgreesWithKernels(t *testing.T) {
	for _, c := range []Config{
		{Width: 512, Datapath: int8DP}, {Width: 64, Datapath: int8DP, Workers: 300},
		{Width: 512, Datapath: bfp8DP}, {Width: 1024, Datapath: bfp8DP, Workers: 13}, {Width: 64, Datapath: bfp8DP, Workers: 300},
	} {
		c = c.Normalized()
		vs := Vectors(c, 4000, 5)
		aggs := aggregates(vs)
		if len(aggs) < 10 {
			t.Fatalf("%s: only %d aggregates", c.ModuleName(), len(aggs))
		}
		// Expect answers exactly the aggregates' last lines, in order.
		var answered [][]byte
		for _, r := range Expect(c, vs) {
			if r != nil {
				answered = append(answered, r)
			}
		}
		if len(answered) != len(aggs) {
			t.Fatalf("%s: Expect answers %d lines for %d aggregates", c.ModuleName(), len(answered), len(aggs))
		}
		saturated := false
		for j, a := range aggs {
			got := answered[j]
			if want := specSum(c, a); !slices.Equal(got, want) {
				t.Fatalf("%s: expectSum %x, spec %x", c.ModuleName(), got, want)
			}
			src := make([][]int8, len(a))
			exp := make([][]int8, len(a))
			for k, v := range a {
				src[k], exp[k] = lowbit.BytesInt8(v.Data), lowbit.BytesInt8(v.Exp)
			}
			if a[0].ExpLine {
				continue // the exponent view has no kernel of its own
			}
			sum := make([]int16, c.Elements())
			if !c.blockExps() {
				lowbit.SumInt8(sum, src)
			} else {
				e := make([]int8, c.ExpGroups())
				lowbit.SumBFP8(sum, e, src, exp)
				if !slices.Equal(lowbit.Int8Bytes(e), a[0].EMax) {
					t.Fatalf("%s: the vectors' E %x, SumBFP8's %x", c.ModuleName(), a[0].EMax, lowbit.Int8Bytes(e))
				}
			}
			want := make([]byte, 2*len(sum))
			lowbit.PutInt16s(want, sum)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: expectSum %x, kernel %x", c.ModuleName(), got, want)
			}
			saturated = saturated || slices.Contains(sum, 32767) || slices.Contains(sum, -32768)
		}
		if c.Workers > 258 && !saturated {
			t.Errorf("%s: no aggregate saturates", c.ModuleName())
		}
	}
}

// TestExpectSumHand checks the oracle on hand-computed aggregates.
func TestExpectSumHand(t *testing.T) {
	i8 := func(v ...int) []byte {
		b := make([]byte, 8)
		for i, x := range v {
			b[i] = byte(int8(x))
		}
		return b
	}
	lanes := func(out []byte, n int) []int {
		var v []int
		for i := range n {
			v = append(v, int(int16(binary.LittleEndian.Uint16(out[2*i:]))))
		}
		return v
	}
	c := Config{Width: 64, Datapath: int8DP, Workers: 300}
	got := lanes(expectSum(c, []Vector{{Data: i8(127, -127, 5, -128)}, {Data: i8(127, -127, -7, 1)}, {Data: i8(1, 0, 0, 0)}}), 4)
	if want := []int{255, -254, -2, -127}; !slices.Equal(got, want) {
		t.Errorf("int8 sum %v, want %v", got, want)
	}
	var many []Vector
	for k := range 300 { // 300 x 127 = 38100 saturates; 150 x 127 - 150 x 127 = 0 does not
		many = append(many, Vector{Data: i8(127, -127, []int{127, -127}[k%2])})
	}
	if got, want := lanes(expectSum(c, many), 3), []int{32767, -32768, 0}; !slices.Equal(got, want) {
		t.Errorf("int8 saturation %v, want %v", got, want)
	}
	// BFP8: worker 0 at E = 3, worker 1 two exponents down (k = 2): its
	// mantissas 3, -3, 2, -2, 1 align to round(0.75) = 1, round(-0.75) =
	// -1, 0.5 -> 1, -0.5 -> 0 (ties up), round(0.25) = 0.
	b := Config{Width: 64, Datapath: bfp8DP}
	w0 := Vector{Data: i8(10, 10, 10, 10, 10), Exp: i8(3)[:1]}
	w1 := Vector{Data: i8(3, -3, 2, -2, 1), Exp: i8(1)[:1]}
	if got, want := lanes(expectSum(b, []Vector{w0, w1}), 5), []int{11, 9, 11, 10, 10}; !slices.Equal(got, want) {
		t.Errorf("bfp8 alignment %v, want %v", got, want)
	}
	// k = E - e = 200 is capped at 8: every mantissa of the low worker vanishes.
	w2 := Vector{Data: i8(127, -127, -128), Exp: i8(-100)[:1]}
	w3 := Vector{Data: i8(1, 1, 1), Exp: i8(100)[:1]}
	if got, want := lanes(expectSum(b, []Vector{w2, w3}), 3), []int{1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("bfp8 capped shift %v, want %v", got, want)
	}
	ex := expectSum(b, []Vector{{ExpLine: true, Data: i8(-127, 5, -3)}, {ExpLine: true, Data: i8(-126, -5, 127)}})
	if got, want := []int8{int8(ex[0]), int8(ex[1]), int8(ex[2])}, []int8{-126, 5, 127}; !slices.Equal(got, want) || slices.ContainsFunc(ex[8:], func(x byte) bool { return x != 0 }) {
		t.Errorf("exponent view %v (%x), want %v then zeros", got, ex, want)
	}
}

func TestSumValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"int8 default", Config{Width: 512, Datapath: int8DP}, true},
		{"bfp8 1024 max workers", Config{Width: 1024, Datapath: bfp8DP, Workers: lowbit.MaxWorkers}, true},
		{"int8 explicit depth", Config{Width: 64, Datapath: int8DP, Stages: 3}, true},
		{"int8 wrong depth", Config{Width: 64, Datapath: int8DP, Stages: 5}, false},
		{"bfp8 wrong depth", Config{Width: 64, Datapath: bfp8DP, Stages: 3}, false},
		{"too many workers", Config{Width: 64, Datapath: int8DP, Workers: lowbit.MaxWorkers + 1}, false},
		{"negative workers", Config{Width: 64, Datapath: int8DP, Workers: -1}, false},
		{"odd width", Config{Width: 96, Datapath: bfp8DP}, false},
		{"split count", Config{Width: 64, Datapath: int8DP, SplitCount: true}, false},
		{"vote fault", Config{Width: 64, Datapath: int8DP, Fault: FaultTiePositive}, false},
		{"bfp8 fault on int8", Config{Width: 64, Datapath: int8DP, Fault: FaultTruncShift}, false},
		{"int8 fault on vote", Config{Width: 64, Fault: FaultKeepAcc}, false},
		{"wrap-sum that cannot wrap", Config{Width: 64, Datapath: int8DP, Workers: 256, Fault: FaultWrapSum}, false},
		{"wrap-sum that can", Config{Width: 64, Datapath: int8DP, Workers: 257, Fault: FaultWrapSum}, true},
		{"unknown datapath", Config{Width: 64, Datapath: "fp8-sum"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if (err == nil) != tt.ok {
				t.Errorf("Validate(%+v) = %v; want ok=%v", tt.c, err, tt.ok)
			}
			if _, gerr := tt.c.Verilog(); (gerr == nil) != tt.ok {
				t.Errorf("Verilog(%+v) error = %v; want ok=%v", tt.c, gerr, tt.ok)
			}
		})
	}
	for s, want := range map[string]Datapath{"vote": Vote, "": Vote, "g-binary": Vote, "Ternary": Vote, "int8": int8DP, "BFP8": bfp8DP, "block-fp8": bfp8DP} {
		if d, err := ParseDatapath(s); err != nil || d != want {
			t.Errorf("ParseDatapath(%q) = %q, %v; want %q", s, d, err, want)
		}
	}
	for _, bad := range []string{"int8-sum", "lowbit", "fp32", "fp8"} {
		if _, err := ParseDatapath(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseDatapath(%q) = %v; want an error naming it", bad, err)
		}
	}
}

// TestAccBits checks the accumulator width against its definition: the
// fewest bits b with 2^(b-1) >= 128 W, so that [-128 W, 127 W] fits.
func TestAccBits(t *testing.T) {
	for w := 1; w <= lowbit.MaxWorkers; w++ {
		b := Config{Width: 64, Datapath: int8DP, Workers: w}.AccBits()
		if 1<<(b-1) < 128*w || 1<<(b-2) >= 128*w {
			t.Fatalf("W=%d: %d accumulator bits", w, b)
		}
	}
	if b := (Config{Width: 64, Datapath: int8DP}).AccBits(); b != 11 {
		t.Errorf("default W=8: %d bits, want 11", b)
	}
}

func TestCheckSumVectors(t *testing.T) {
	c := Config{Width: 64, Datapath: bfp8DP}.Normalized()
	d := make([]byte, 8)
	g := []byte{0}
	for name, vs := range map[string][]Vector{
		"short line":     {{Valid: true, First: true, Last: true, Data: d[:7], Exp: g, EMax: g}},
		"no first":       {{Valid: true, Last: true, Data: d, Exp: g, EMax: g}},
		"mixed kinds":    {{Valid: true, First: true, Data: d, Exp: g, EMax: g}, {Valid: true, Last: true, ExpLine: true, Data: d}},
		"no exponent":    {{Valid: true, First: true, Last: true, Data: d}},
		"after the last": {{Valid: true, First: true, Last: true, Data: d, Exp: g, EMax: g}, {Valid: true, Data: d, Exp: g, EMax: g}},
	} {
		if err := c.checkSumVectors(vs); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := Cosim(context.Background(), c, SimIcarus, vs, ""); err == nil {
			t.Errorf("%s: Cosim accepted", name)
		}
	}
	if err := c.checkSumVectors(Vectors(c, 500, 1)); err != nil {
		t.Errorf("the generator's vectors: %v", err)
	}
}

// TestSumCosim drives the sum datapaths through both simulators at 64
// bits and W = 8 (the vote datapath's), and through Icarus at W = 300
// (sums that saturate), two blocks per line at 1024 bits and the 512-bit
// line of the hardware block. -short keeps the 64-bit runs.
func TestSumCosim(t *testing.T) {
	type tc struct {
		c   Config
		sim Simulator
		n   int
	}
	var cases []tc
	for _, d := range sumDatapaths() {
		for _, sim := range Simulators {
			cases = append(cases, tc{Config{Width: 64, Datapath: d}, sim, 1500})
		}
		cases = append(cases, tc{Config{Width: 64, Datapath: d, Workers: 300}, SimIcarus, 2000})
		if !testing.Short() {
			cases = append(cases, tc{Config{Width: 1024, Datapath: d, Workers: 5}, SimIcarus, 200}, tc{Config{Width: 512, Datapath: d}, SimIcarus, 300})
		}
	}
	for _, tc := range cases {
		t.Run(string(tc.sim)+"/"+tc.c.ModuleName(), func(t *testing.T) {
			if err := tc.sim.Check(); err != nil {
				t.Skipf("skipping: %v", err)
			}
			r, err := Cosim(context.Background(), tc.c, tc.sim, Vectors(tc.c, tc.n, 7), "")
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			if !r.Passed() || r.Checked < 20 {
				t.Errorf("%v; first mismatches %+v", r, r.First)
			}
		})
	}
}

// TestSumCosimCatchesFaults shows that the sum co-simulation is not
// vacuous: every deliberately broken sum datapath is caught.
func TestSumCosimCatchesFaults(t *testing.T) {
	for _, d := range sumDatapaths() {
		for _, f := range d.Faults() {
			c := Config{Width: 64, Datapath: d, Fault: f}
			if f == FaultWrapSum {
				c.Workers = 300
			}
			sim := SimIcarus
			if f == FaultZeroExtend {
				sim = SimVerilator // one build shows Verilator catches a fault too
			}
			t.Run(string(sim)+"/"+c.ModuleName(), func(t *testing.T) {
				if err := sim.Check(); err != nil {
					t.Skipf("skipping: %v", err)
				}
				r, err := Cosim(context.Background(), c, sim, Vectors(c, 1500, 9), "")
				if err != nil {
					t.Fatal(err)
				}
				if r.Mismatches == 0 {
					t.Errorf("fault %s went undetected: %v", f, r)
				}
			})
		}
	}
}

// expectedSumRegisters counts the register bits a sum datapath declares,
// from its pipeline description: the request (bfp8: with its 4-bit
// shift per block instead of the exponents), (bfp8) the aligned line, the
// lane accumulators, the done/kind flags and the response. It holds where
// no two response bits are copies of one signal, i.e. for AccBits >= 16.
func expectedSumRegisters(c Config) int {
	c = c.Normalized()
	w, n, a := c.Width, c.Elements(), c.AccBits()
	if !c.blockExps() {
		return (3 + w) + (1 + n*a) + (1 + 2*w)
	}
	// input: flags, k per block, line; round: flags, k, 9-bit t per lane;
	// shift: flags, line; accumulate; response.
	return (4 + 4*c.ExpGroups() + w) + (4 + 4*c.ExpGroups() + 9*n) + (4 + w) + (2 + n*a) + (1 + 2*w)
}

func TestSumSynthRegisters(t *testing.T) {
	skipWithout(t, Yosys)
	for _, c := range []Config{{Width: 64, Datapath: int8DP, Workers: 256}, {Width: 64, Datapath: int8DP, Workers: 300},
		{Width: 64, Datapath: bfp8DP, Workers: 256}, {Width: 128, Datapath: bfp8DP, Workers: 300}} {
		r, err := Synth(context.Background(), c, SynthOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Generic.Registers(), expectedSumRegisters(c); got != want {
			t.Errorf("%s: %d registers, want %d", c.ModuleName(), got, want)
		}
		if r.Datapath != c.Datapath || r.Path.Depth <= 0 || r.Generic.Logic() <= 0 {
			t.Errorf("%s: %+v", c.ModuleName(), r)
		}
		if _, err := NanGate45.Estimate(r); err != nil {
			t.Error(err)
		}
	}
}

func TestSumVerilatorLint(t *testing.T) {
	skipWithout(t, Verilator)
	dir := t.TempDir()
	for _, c := range []Config{{Width: 64, Datapath: int8DP}, {Width: 64, Datapath: int8DP, Workers: 1}, {Width: 512, Datapath: int8DP, Workers: 256},
		{Width: 128, Datapath: int8DP, Workers: 1024}, {Width: 64, Datapath: bfp8DP}, {Width: 1024, Datapath: bfp8DP, Workers: 300}} {
		src, err := c.Verilog()
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, c.ModuleName()+".v")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("verilator", "--lint-only", "-Wall", f).CombinedOutput(); err != nil {
			t.Errorf("%s: verilator -Wall: %v\n%s", c.ModuleName(), err, out)
		}
	}
}

// TestSumWrapperKeepsPipeline checks that the place-and-route wrapper of a
// sum datapath keeps every datapath register (as TestWrapperKeepsPipeline
// does for the vote one).
func TestSumWrapperKeepsPipeline(t *testing.T) {
	skipWithout(t, Yosys)
	c := Config{Width: 64, Datapath: bfp8DP, Workers: 256}
	dir := t.TempDir()
	src, _ := c.Verilog()
	if err := os.WriteFile(filepath.Join(dir, "dut.v"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wrap.v"), []byte(WrapperVerilog(c)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("yosys", "-q", "-p", "read_verilog dut.v wrap.v; synth_ice40 -top nf_pnr_top; tee -q -o stat.json stat -json")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("yosys: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "stat.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseStat(data, "nf_pnr_top")
	if err != nil {
		t.Fatal(err)
	}
	req := 4 + 16 + c.Width // valid, first, last, kind, exp, emax, data
	if got, want := s.Registers(), expectedSumRegisters(c)+2*req+(2*c.Width+1); got != want {
		t.Errorf("wrapped %s: %d flip-flops, want %d", c.ModuleName(), got, want)
	}
}

// FuzzParseDatapath: any name parses to one of Datapaths, whose name
// parses back to it, or fails naming the input.
func FuzzParseDatapath(f *testing.F) {
	for _, s := range []string{"vote", "int8", "BFP8 ", "g-binary", "", "fp32", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDatapath(s)
		if err != nil {
			if !strings.Contains(err.Error(), "unknown datapath") {
				t.Fatalf("ParseDatapath(%q): %v", s, err)
			}
			return
		}
		if !slices.Contains(Datapaths(), d) {
			t.Fatalf("ParseDatapath(%q) = %q, not a datapath", s, d)
		}
		if back, err := ParseDatapath(d.String()); err != nil || back != d {
			t.Fatalf("%q does not round-trip: %q %v", d, back, err)
		}
	})
}
