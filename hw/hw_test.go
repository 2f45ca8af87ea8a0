package hw

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

var update = flag.Bool("update", false, "rewrite the golden .v files in testdata")

// goldens pin the generator's formatting; correctness comes from co-simulation.
var goldens = []Config{
	{Width: 64},
	{Width: 512},
	{Width: 64, Stages: 1},
	{Width: 128, Stages: 3, Workers: 5},
	{Width: 64, SplitCount: true},
	{Width: 64, Datapath: "int8"},
	{Width: 128, Datapath: "int8", Workers: 300},
	{Width: 1024, Datapath: "bfp8", Workers: 300},
}

func TestGoldenVerilog(t *testing.T) {
	for _, c := range goldens {
		t.Run(c.ModuleName(), func(t *testing.T) {
			got, err := c.Verilog()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.ModuleName()+".v")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./hw -run TestGoldenVerilog -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the generator's output; review and rerun with -update", path)
			}
		})
	}
}

func TestGeneratedHeader(t *testing.T) {
	src, err := Config{Width: 256}.Verilog()
	if err != nil {
		t.Fatal(err)
	}
	// The Go convention for generated files.
	if !regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`).MatchString(src) {
		t.Error("missing the 'Code generated ... DO NOT EDIT.' header")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"default 512", Config{Width: 512}, true},
		{"all widths", Config{Width: 1024, Stages: 1, Workers: 1}, true},
		{"odd width", Config{Width: 96}, false},
		{"zero width", Config{}, false},
		{"too deep", Config{Width: 64, Stages: 6}, false},
		{"negative stages", Config{Width: 64, Stages: -1}, false},
		{"nine workers", Config{Width: 64, Workers: 9}, false},
		{"unknown fault", Config{Width: 64, Fault: "cosmic-ray"}, false},
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
}

func TestStageOps(t *testing.T) {
	for k := 1; k <= MaxStages; k++ {
		ops := Config{Width: 64, Stages: k}.StageOps()
		if len(ops) != k {
			t.Errorf("k=%d: %d stages", k, len(ops))
		}
		next := OpDecode
		for _, st := range ops {
			for _, o := range st {
				if o != next {
					t.Errorf("k=%d: op %v out of order", k, o)
				}
				next++
			}
		}
		if next != numOps {
			t.Errorf("k=%d: %d ops placed, want %d", k, next, numOps)
		}
		if last := ops[len(ops)-1]; last[len(last)-1] != OpSelect {
			t.Errorf("k=%d: the response is not registered", k)
		}
	}
}

// TestExpectAgreesWithKernels checks the oracle the co-simulation uses
// (the lowbit reference loops) against the fast kernels the cxl model
// uses, so that the RTL, the refs and the kernels all agree.
func TestExpectAgreesWithKernels(t *testing.T) {
	for _, w := range []int{1, 5, 8} {
		c := Config{Width: 512, Workers: w}
		vs := Vectors(c, 400, 3)
		want := Expect(c, vs)
		for j, v := range vs {
			if !v.Valid {
				if want[j] != nil {
					t.Fatalf("W=%d: an idle cycle owes a response", w)
				}
				continue
			}
			got := want[j]
			switch v.Mode {
			case cxl.Aggregate(lowbit.Binary):
				want := make([]byte, len(v.Data))
				lowbit.CountPacket(want, v.Data, w)
				if string(got) != string(want) {
					t.Fatalf("W=%d G-Binary %x: Expect %x, CountPacket %x", w, v.Data, got, want)
				}
			case cxl.Aggregate(lowbit.Ternary):
				s := lowbit.Spec{Workers: w, Layout: lowbit.ElementMajor, Format: lowbit.Ternary, Gate: lowbit.PaperGate}
				want := make([]int8, len(v.Data))
				if err := lowbit.VotePacket(want, v.Data, nil, s, v.Base); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if int8(got[i]) != want[i] {
						t.Fatalf("W=%d G-Ternary base %d element %d: Expect %d, VotePacket %d", w, v.Base, i, int8(got[i]), want[i])
					}
				}
			default:
				if string(got) != string(v.Data) {
					t.Fatalf("mode %v does not return the line", v.Mode)
				}
			}
		}
	}
}

func TestExpectPaperExample(t *testing.T) {
	// Paper Sec. 2: six positive, two negative votes return +1 in G-Binary;
	// G-Ternary returns zero where the gate is zero (element 2 of base 0).
	d := []byte{0x3f, 0x3f, 0x3f, 0x0f, 0, 0, 0, 0}
	c := Config{Width: 64}
	if got := Expect(c, []Vector{{Valid: true, Mode: cxl.Aggregate(lowbit.Binary), Data: d}})[0]; got[0] != 6 || got[3] != 4 || got[4] != 0 {
		t.Errorf("G-Binary counts %v", got)
	}
	got := Expect(c, []Vector{{Valid: true, Mode: cxl.Aggregate(lowbit.Ternary), Data: d}})[0]
	want := []int8{1, 1, 0, 0, -1, 0, -1, -1} // element 3 is a tie; 2 and 5 are gated
	for i := range want {
		if int8(got[i]) != want[i] {
			t.Errorf("G-Ternary element %d = %d; want %d", i, int8(got[i]), want[i])
		}
	}
}

func TestParseResponse(t *testing.T) {
	v, d, err := ParseResponse("1 0807060504030201", 64)
	if err != nil || !v || d[0] != 1 || d[7] != 8 {
		t.Errorf("ParseResponse = %v %x %v", v, d, err)
	}
	for _, bad := range []string{"", "1", "2 00", "1 0807", "1 zz07060504030201", "1 00 00"} {
		if _, _, err := ParseResponse(bad, 64); err == nil {
			t.Errorf("ParseResponse(%q) accepted", bad)
		}
	}
	if v, _, err := ParseResponse("0 xxxxxxxxxxxxxxxx", 64); err != nil || v {
		t.Errorf("an invalid response with x bits: %v %v", v, err)
	}
}

func skipWithout(t *testing.T, tools ...Tool) {
	t.Helper()
	for _, tl := range tools {
		if _, err := tl.Path(); err != nil {
			t.Skipf("skipping: %v", err)
		}
	}
}

func TestVerilatorLint(t *testing.T) {
	skipWithout(t, Verilator)
	dir := t.TempDir()
	for _, c := range []Config{{Width: 64}, {Width: 1024}, {Width: 128, Stages: 1, Workers: 3}, {Width: 256, Stages: 3}, {Width: 64, Stages: 2}, {Width: 64, Stages: 4}, {Width: 256, SplitCount: true, Workers: 7}} {
		src, _ := c.Verilog()
		f := filepath.Join(dir, c.ModuleName()+".v")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("verilator", "--lint-only", "-Wall", f).CombinedOutput(); err != nil {
			t.Errorf("%s: verilator -Wall: %v\n%s", c.ModuleName(), err, out)
		}
	}
}

// TestCosim drives every width through Verilator and Icarus and compares
// each response with the lowbit oracle. Each Verilator width is a C++
// build (about 6 s at 64 bits to 18 s at 1024 bits on an idle 2-core
// machine); -short builds only the 64-bit one.
func TestCosim(t *testing.T) {
	ctx := context.Background()
	n := 1500
	if testing.Short() {
		n = 300
	}
	var cases []struct {
		c   Config
		sim Simulator
	}
	for _, w := range Widths {
		for _, sim := range Simulators {
			if sim == SimVerilator && testing.Short() && w != 64 {
				continue // one C++ build per width: -short keeps one
			}
			cases = append(cases, struct {
				c   Config
				sim Simulator
			}{Config{Width: w}, sim})
		}
	}
	for k := 1; k < MaxStages; k++ {
		cases = append(cases, struct {
			c   Config
			sim Simulator
		}{Config{Width: 128, Stages: k}, SimIcarus})
	}
	for _, c := range []Config{{Width: 128, SplitCount: true}, {Width: 64, Stages: 3, SplitCount: true, Workers: 6}} {
		cases = append(cases, struct {
			c   Config
			sim Simulator
		}{c, SimIcarus})
	}
	for _, w := range []int{1, 3, 7} {
		cases = append(cases, struct {
			c   Config
			sim Simulator
		}{Config{Width: 64, Workers: w}, SimIcarus})
	}
	passed, failed := 0, 0
	for _, tc := range cases {
		t.Run(string(tc.sim)+"/"+tc.c.ModuleName(), func(t *testing.T) {
			if err := tc.sim.Check(); err != nil {
				t.Skipf("skipping: %v", err)
			}
			r, err := Cosim(ctx, tc.c, tc.sim, Vectors(tc.c, n, 7), "")
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			if !r.Passed() {
				failed++
				t.Errorf("%v; first mismatches %+v", r, r.First)
				return
			}
			passed++
		})
	}
	t.Logf("%d passed, %d failed", passed, failed)
}

// TestCosimCatchesFaults shows that co-simulation is not vacuous: each
// deliberately broken datapath is caught.
func TestCosimCatchesFaults(t *testing.T) {
	ctx := context.Background()
	for _, f := range Vote.Faults() {
		for _, sim := range Simulators {
			if sim == SimVerilator && f != FaultTiePositive {
				continue // one verilator build is enough to show it also catches faults
			}
			t.Run(string(sim)+"/"+string(f), func(t *testing.T) {
				if err := sim.Check(); err != nil {
					t.Skipf("skipping: %v", err)
				}
				c := Config{Width: 64, Fault: f}
				r, err := Cosim(ctx, c, sim, Vectors(c, 300, 9), "")
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

// expectedRegisters counts the register bits the generator declares, from
// the stage table: an independent count of what synthesis must keep.
func expectedRegisters(c Config) int {
	c = c.Normalized()
	w, n := c.Width, c.Elements()
	after := [numOps]int{
		OpDecode: 3 + 2 + w,         // valid, bypass, ter, base, data
		OpUnpack: 3 + 2 + w,         // same
		OpCount:  3 + 2 + w + 4*n,   // + counts
		OpGate:   3 + w + 4*n + 2*n, // base dropped, + pos/neg
		OpSelect: 1 + w,             // response
	}
	if c.SplitCount {
		after[OpUnpack] += 6 * n // nibble counts
	}
	total := 0
	for o := range numOps {
		if stageRegs[c.Stages][o] {
			total += after[o]
		}
	}
	return total
}

func TestSynthRegistersAndPath(t *testing.T) {
	skipWithout(t, Yosys)
	ctx := context.Background()
	for _, c := range []Config{{Width: 64}, {Width: 64, Stages: 1}, {Width: 64, Stages: 3}, {Width: 64, SplitCount: true}} {
		dir := t.TempDir()
		r, err := Synth(ctx, c, SynthOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Generic.Registers(), expectedRegisters(c); got != want {
			t.Errorf("%s: %d registers, want %d", c.ModuleName(), got, want)
		}
		if r.Generic.Logic() <= 0 || r.Path.Depth <= 0 {
			t.Errorf("%s: %+v", c.ModuleName(), r)
		}
		// Cross-check the path depth with Yosys's own ltp -noff on the
		// same netlist: it counts the cells of the longest path too.
		work := filepath.Join(dir, "synth-yosys-"+c.ModuleName())
		cmd := exec.Command("yosys", "-p", "read_json netlist.json; ltp -noff")
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ltp: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`length=(\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no ltp length in\n%s", out)
		}
		ltp, _ := strconv.Atoi(string(m[1]))
		if r.Path.Depth != ltp {
			t.Errorf("%s: depth %d, yosys ltp -noff says %d", c.ModuleName(), r.Path.Depth, ltp)
		}
		if _, err := NanGate45.Estimate(r); err != nil {
			t.Error(err)
		}
	}
}

func TestVersionsNameTools(t *testing.T) {
	v := strings.Join(Versions(context.Background()), "\n")
	for _, tl := range AllTools {
		if !strings.Contains(v, tl.Name+":") {
			t.Errorf("versions miss %s:\n%s", tl.Name, v)
		}
	}
}

// TestWrapperKeepsPipeline checks that the place-and-route wrapper does
// not let synth_ice40 merge the datapath registers into its shift chains
// (a shift register feeding the pipeline directly would make s1_data[i]
// equal to shin[i+1], and the whole line pipeline would vanish).
func TestWrapperKeepsPipeline(t *testing.T) {
	skipWithout(t, Yosys)
	c := Config{Width: 64}
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
	w := c.Width
	want := expectedRegisters(c) + (w + 5) + (w + 5) + (w + 1) // + shin, req, shout
	if got := s.Registers(); got != want {
		t.Errorf("wrapped %s: %d flip-flops, want %d", c.ModuleName(), got, want)
	}
}

// TestPortsMatchModule checks that every datapath's port list, which
// drives the line protocol, both harnesses and the wrapper, is the
// request ports its generated module declares, in order and width.
func TestPortsMatchModule(t *testing.T) {
	decl := regexp.MustCompile(`(?m)^\s*input\s+wire\s+(?:\[(\d+):0\]\s*)?(\w+),`)
	for _, d := range Datapaths() {
		for _, w := range []int{64, 1024} {
			c := Config{Width: w, Datapath: d}.Normalized()
			src, err := c.Verilog()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range decl.FindAllStringSubmatch(src, -1) {
				width := 1
				if m[1] != "" {
					width, _ = strconv.Atoi(m[1])
					width++
				}
				if m[2] != "clk" && m[2] != "rst" {
					got = append(got, m[2]+":"+strconv.Itoa(width))
				}
			}
			var want []string
			for _, p := range d.fam().inputs(c) {
				want = append(want, p.name+":"+strconv.Itoa(p.w))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: module declares %v, port list %v", c.ModuleName(), got, want)
			}
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^\s*output\s+wire\s+\[%d:0\]\s*out_data$`, c.OutWidth()-1)).MatchString(src) {
				t.Errorf("%s: out_data is not %d bits", c.ModuleName(), c.OutWidth())
			}
		}
	}
}
