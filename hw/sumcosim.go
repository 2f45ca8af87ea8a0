package hw

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// ExpectSum returns the response a sum datapath must give for one
// aggregate, lines being its valid lines from the first to the last, as
// the 2 Width/8 bytes of out_data (element first): for int8-sum and a
// bfp8-sum mantissa aggregate the int16 lane sums little endian
// (lowbit.PutInt16s of lowbit.RefSumInt8 or lowbit.RefSumBFP8); for a
// bfp8-sum exponent aggregate the exponent view, lane i = the E that
// lowbit.RefSumBFP8 returns for block i, then zeros. The oracle computes E
// from the workers' exponents itself; the lines' EMax is not read.
func ExpectSum(c Config, lines []Vector) []byte {
	c = c.Normalized()
	n := c.Elements()
	out := make([]byte, 2*n)
	if len(lines) == 0 {
		return out
	}
	mant := make([][]int8, len(lines))
	exp := make([][]int8, len(lines))
	for k, v := range lines {
		mant[k] = lowbit.BytesInt8(v.Data)
		exp[k] = lowbit.BytesInt8(v.Exp)
	}
	switch {
	case c.Datapath == Int8Sum:
		lowbit.PutInt16s(out, lowbit.RefSumInt8(mant))
	case lines[len(lines)-1].ExpLine:
		// Exponent line k holds worker k's exponents of n blocks; zero
		// mantissas make RefSumBFP8 return just the blocks' maxima.
		zero := make([]int8, n*lowbit.BFPBlock)
		zeros := make([][]int8, len(lines))
		for k := range zeros {
			zeros[k] = zero
		}
		_, e := lowbit.RefSumBFP8(zeros, mant, n*lowbit.BFPBlock)
		copy(out, lowbit.Int8Bytes(e))
	default:
		sum, _ := lowbit.RefSumBFP8(mant, exp, n)
		lowbit.PutInt16s(out, sum)
	}
	return out
}

// checkSumVectors rejects a stream a sum datapath cannot answer: a line
// of the wrong length, a valid line outside an aggregate (no First since
// the last Last), a bfp8-sum mantissa line without one exponent and one E
// per block, or an aggregate that mixes exponent and mantissa lines.
func (c Config) checkSumVectors(vs []Vector) error {
	open, kind := false, false
	g := c.ExpGroups()
	for i, v := range vs {
		if len(v.Data) != c.Elements() {
			return fmt.Errorf("vector %d: %d data bytes, want %d", i, len(v.Data), c.Elements())
		}
		if !v.Valid {
			continue
		}
		if v.First {
			open, kind = true, v.ExpLine
		}
		if !open {
			return fmt.Errorf("vector %d: a valid line outside an aggregate (no first line before it)", i)
		}
		if c.Datapath == BFP8Sum {
			if v.ExpLine != kind {
				return fmt.Errorf("vector %d: an aggregate mixes exponent and mantissa lines", i)
			}
			if !v.ExpLine && (len(v.Exp) != g || len(v.EMax) != g) {
				return fmt.Errorf("vector %d: mantissa line with %d exponents and %d maxima, want %d each", i, len(v.Exp), len(v.EMax), g)
			}
		}
		if v.Last {
			open = false
		}
	}
	return nil
}

// EncodeSumVector writes the line-protocol form of v for a sum datapath:
// "valid first last [kind exp emax] data", each field hex, most
// significant digit first (kind, exp and emax for bfp8-sum only).
func (c Config) EncodeSumVector(v Vector) string {
	bit := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	f := []string{bit(v.Valid), bit(v.First), bit(v.Last)}
	if c.Datapath == BFP8Sum {
		g := c.ExpGroups()
		pad := func(b []byte) []byte {
			out := make([]byte, g)
			copy(out, b)
			return out
		}
		f = append(f, bit(v.ExpLine), hexMSB(pad(v.Exp)), hexMSB(pad(v.EMax)))
	}
	return strings.Join(append(f, hexMSB(v.Data)), " ")
}

// sumGen draws the lines of sum-datapath aggregates.
type sumGen struct {
	c   Config
	rng *rand.Rand
	vs  []Vector
}

// idle appends an invalid cycle with random data and flags, which the
// datapath must ignore.
func (g *sumGen) idle() {
	d := make([]byte, g.c.Elements())
	for i := range d {
		d[i] = byte(g.rng.Uint32())
	}
	g.vs = append(g.vs, Vector{Data: d, First: g.rng.IntN(2) == 0, Last: g.rng.IntN(2) == 0, ExpLine: g.rng.IntN(2) == 0})
}

// agg appends one aggregate: worker k's line data(k), and for bfp8-sum
// mantissa lines the exponents exp(k) of each block, E being their max;
// bubbles inserts idle cycles between lines now and then.
func (g *sumGen) agg(w int, expLine bool, data func(k int) []byte, exp func(k int) []byte, bubbles bool) {
	var emax []byte
	if g.c.Datapath == BFP8Sum && !expLine {
		emax = make([]byte, g.c.ExpGroups())
		for b := range emax {
			top := int8(-127)
			for k := range w {
				top = max(top, int8(exp(k)[b]))
			}
			emax[b] = byte(top)
		}
	}
	for k := range w {
		v := Vector{Valid: true, First: k == 0, Last: k == w-1, ExpLine: expLine, Data: data(k)}
		if emax != nil {
			v.Exp, v.EMax = exp(k), emax
		}
		g.vs = append(g.vs, v)
		if bubbles && g.rng.IntN(6) == 0 {
			g.idle()
		}
	}
}

func (g *sumGen) fill(f func(i int) byte) []byte {
	d := make([]byte, g.c.Elements())
	for i := range d {
		d[i] = f(i)
	}
	return d
}

func (g *sumGen) groups(f func(b int) int) []byte {
	e := make([]byte, g.c.ExpGroups())
	for b := range e {
		e[b] = byte(int8(max(-127, min(127, f(b)))))
	}
	return e
}

// sumVectors returns n requests for a sum datapath: corner aggregates
// first (for bfp8-sum every shift 0 to 10 with rounding ties, the
// exponent extremes, and exponent passes over extreme and mixed-sign
// exponents; then one line of every byte value, and Workers lines of the
// extreme codes, which saturate when Workers > 258), then random
// aggregates of 1 to Workers lines with idle cycles inside and between
// them. The same seed gives the same vectors.
func sumVectors(c Config, n int, seed uint64) []Vector {
	g := &sumGen{c: c, rng: rand.New(rand.NewPCG(seed, uint64(c.Width)^0x5a5a))}
	w, ne := c.Workers, c.Elements()
	isBFP := c.Datapath == BFP8Sum
	same := func(e int) func(int) []byte {
		return func(int) []byte { return g.groups(func(int) int { return e }) }
	}
	if isBFP {
		ties := []byte{0x01, 0xff, 0x02, 0xfe, 0x03, 0xfd, 0x40, 0xc0, 0x7f, 0x81, 0x80, 0x00}
		tie := func(k int) []byte { return g.fill(func(i int) byte { return ties[(i+k)%len(ties)] }) }
		for _, top := range []int{0, 127, -117} {
			// worker k is k mod 11 exponents below the top: every shift 0..10
			shifted := func(k int) []byte { return g.groups(func(b int) int { return top - (k+b)%11 }) }
			g.agg(min(w, 11), false, tie, shifted, false)
		}
		spread := func(k int) []byte { return g.groups(func(int) int { return []int{127, -127}[k%2] }) }
		g.agg(min(w, 2), false, tie, spread, false) // E - e = 254
		for _, pat := range [][]int{{-127}, {127}, {-127, 127}, {-1, 0, 1}, {-100, -3}} {
			ex := func(k int) []byte { return g.fill(func(i int) byte { return byte(int8(pat[(i+k)%len(pat)])) }) }
			g.agg(min(w, 3), true, ex, nil, false)
		}
	}
	for off := 0; off < 256; off += ne { // every byte value in one line
		d := g.fill(func(i int) byte { return byte(off + i) })
		g.agg(1, false, func(int) []byte { return d }, same(0), false)
	}
	for _, b := range []byte{0x7f, 0x81, 0x80, 0x01, 0xff} { // extremes, W lines
		d := g.fill(func(int) byte { return b })
		g.agg(w, false, func(int) []byte { return d }, same(3), false)
	}
	alt := func(k int) []byte { // +127 / -127 alternating by worker
		return g.fill(func(int) byte { return []byte{0x7f, 0x81}[k%2] })
	}
	g.agg(w, false, alt, same(-5), true)
	for len(g.vs) < n {
		if g.rng.IntN(5) == 0 {
			g.idle()
		}
		lines := 1 + g.rng.IntN(w)
		switch g.rng.IntN(8) {
		case 0:
			lines = 1
		case 1, 2:
			lines = w
		}
		if isBFP && g.rng.IntN(3) == 0 { // an exponent pass
			ex := func(int) []byte { return g.fill(func(int) byte { return byte(int8(g.rng.IntN(255) - 127)) }) }
			g.agg(lines, true, ex, nil, true)
			continue
		}
		extreme := g.rng.IntN(3) == 0 // codes near +-127 make saturation likely
		data := func(int) []byte {
			return g.fill(func(int) byte {
				if extreme {
					return []byte{0x7f, 0x7e, 0x81, 0x80, 0x7f}[g.rng.IntN(5)]
				}
				return byte(g.rng.Uint32())
			})
		}
		top := g.rng.IntN(255) - 127
		spreadK := 1 + g.rng.IntN(12)
		exp := func(int) []byte { return g.groups(func(int) int { return top - g.rng.IntN(spreadK) }) }
		// exp(k) must be the same slice every call for one worker: memoise.
		var memo [][]byte
		expK := func(k int) []byte {
			for len(memo) <= k {
				memo = append(memo, exp(len(memo)))
			}
			return memo[k]
		}
		g.agg(lines, false, data, expK, true)
	}
	vs := g.vs
	if n < len(vs) && n > 0 {
		vs = vs[:n]
	}
	return vs
}

// compareSum checks a sum datapath's output against ExpectSum: output
// line j answers input j-(k-1), which must be valid exactly when that
// input was an aggregate's valid last line.
func compareSum(c Config, vs []Vector, out []byte, res *CosimResult) {
	k := c.Latency()
	want := make([][]byte, len(vs))
	var agg []Vector
	for i, v := range vs {
		if !v.Valid {
			continue
		}
		if v.First {
			agg = agg[:0]
		}
		agg = append(agg, v)
		if v.Last {
			want[i] = ExpectSum(c, agg)
		}
	}
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
		if i >= 0 && i < len(vs) {
			exp = want[i]
		}
		if valid != (exp != nil) {
			in := ""
			if i >= 0 && i < len(vs) {
				in = c.EncodeSumVector(vs[i])
			}
			bad(Mismatch{Cycle: j - 1, Input: trunc(in), Got: fmt.Sprintf("out_valid=%v", valid), Want: fmt.Sprintf("out_valid=%v", exp != nil)})
			continue
		}
		if !valid {
			continue
		}
		res.Checked++
		if !bytes.Equal(got, exp) {
			bad(Mismatch{Cycle: j - 1, Input: trunc(c.EncodeSumVector(vs[i])), Got: hexMSB(got), Want: hexMSB(exp)})
		}
	}
	if wantLines := len(vs) + k - 1; j != wantLines {
		bad(Mismatch{Cycle: j, Got: fmt.Sprintf("%d response lines", j), Want: fmt.Sprintf("%d", wantLines)})
	}
}

// sumVerilatorHarness is the C++ main for a sum datapath: per stdin line
// of hex fields (sumInputs order) it sets the inputs, clocks one rising
// edge and prints "out_valid hex".
func sumVerilatorHarness(c Config) string {
	ins := c.sumInputs()
	var set []string
	for k, p := range ins {
		digits := (p.w + 3) / 4
		set = append(set, fmt.Sprintf(`  if (strlen(f[%d]) != %d) return bad(line);`, k, digits))
		if p.w <= 64 {
			set = append(set, fmt.Sprintf(`  t->%s = strtoull(f[%d], nullptr, 16);`, p.name, k))
			continue
		}
		set = append(set, fmt.Sprintf(`  for (int j = 0; j < %d; j++) {  // word j holds bits 32j+31..32j
    char w[9];
    memcpy(w, f[%d] + (%d - 1 - j) * 8, 8);
    w[8] = 0;
    t->%s[j] = (uint32_t)strtoul(w, nullptr, 16);
  }`, p.w/32, k, p.w/32, p.name))
	}
	nf := len(ins)
	return strings.Join([]string{
		verilatorPrelude(c),
		`static int bad(const char* line) {`,
		`  fprintf(stderr, "harness: bad input line: %s", line);`,
		`  return 0;`,
		`}`,
		``,
		`static int step(Vdut* t, char* line) {`,
		`  static char copy[16384];`,
		`  strcpy(copy, line);`,
		fmt.Sprintf(`  char* f[%d];`, nf),
		`  int n = 0;`,
		fmt.Sprintf(`  for (char* p = strtok(copy, " \n"); p; p = strtok(nullptr, " \n")) { if (n == %d) return bad(line); f[n++] = p; }`, nf),
		fmt.Sprintf(`  if (n != %d) return bad(line);`, nf),
		strings.Join(set, "\n"),
		`  tick(t);`,
		`  printf("%u ", (unsigned)t->out_valid);`,
		fmt.Sprintf(`  for (int j = %d - 1; j >= 0; j--) printf("%%08x", (unsigned)t->out_data[j]);`, c.OutWidth()/32),
		`  printf("\n");`,
		`  return 1;`,
		`}`,
		``,
		`int main(int argc, char** argv) {`,
		`  Verilated::commandArgs(argc, argv);`,
		`  Vdut* t = new Vdut;`,
		`  t->rst = 1; t->in_valid = 0;`,
		`  tick(t); tick(t);`,
		`  t->rst = 0;`,
		`  static char line[16384];`,
		`  while (fgets(line, sizeof line, stdin)) {`,
		`    if (line[0] == '\n') continue;`,
		`    if (!step(t, line)) return 2;`,
		`  }`,
		`  t->final();`,
		`  delete t;`,
		`  return 0;`,
		`}`,
		``,
	}, "\n")
}

// sumIcarusBench is the Icarus testbench for a sum datapath, speaking the
// same line protocol through $fscanf.
func sumIcarusBench(c Config) string {
	ins := c.sumInputs()
	var decl, conn, fmtS, args, assign []string
	for _, p := range ins {
		decl = append(decl, fmt.Sprintf("  reg %s%s = 0;\n  reg %sv_%s;", vec(p.w), p.name, vec(p.w), p.name))
		conn = append(conn, fmt.Sprintf(".%s(%s)", p.name, p.name))
		fmtS = append(fmtS, "%h")
		args = append(args, "v_"+p.name)
		assign = append(assign, fmt.Sprintf("%s = v_%s;", p.name, p.name))
	}
	scan := fmt.Sprintf(`r = $fscanf(32'h8000_0000, "%s\n", %s);`, strings.Join(fmtS, " "), strings.Join(args, ", "))
	return fmt.Sprintf(`// Code generated by nfabric hw cosim; DO NOT EDIT.
// Icarus testbench for %[1]s: one stdin line per clock.
`+"`"+`timescale 1ns/1ps
module tb;
  reg clk = 1'b0, rst = 1'b1;
%[2]s
  wire out_valid;
  wire [%[3]d:0] out_data;
  %[1]s dut (.clk(clk), .rst(rst), %[4]s,
    .out_valid(out_valid), .out_data(out_data));
  integer r;
  initial begin
    #1 clk = 1'b1; #1 clk = 1'b0; #1 clk = 1'b1; #1 clk = 1'b0;
    rst = 1'b0;
    %[5]s
    while (r == %[6]d) begin
      %[7]s
      #1 clk = 1'b1;
      #1 $display("%%b %%h", out_valid, out_data);
      clk = 1'b0;
      %[5]s
    end
    $finish;
  end
endmodule
`, c.ModuleName(), strings.Join(decl, "\n"), c.OutWidth()-1, strings.Join(conn, ", "), scan, len(ins), strings.Join(assign, " "))
}
