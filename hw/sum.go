package hw

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/neuronfabric/nfabric/lowbit"
)

// The sum datapaths are streaming accumulators, one per integer-sum format
// of lowbit's registry: one worker line per clock, in_first marking an
// aggregate's first line and in_last its last; Depth() edges after the
// last line out_valid is high for one cycle and out_data holds the
// aggregate's view. A format with block exponents (BFP8) adds the
// exponent pass and the alignment stages. See the package documentation
// for the pipeline and the ports.

// The sum datapaths' deliberate faults (tests only).
const (
	// FaultWrapSum returns the low 16 bits of the lane sum instead of
	// saturating it (detectable only when the sum can leave int16, so
	// Validate requires more than 256 workers).
	FaultWrapSum Fault = "wrap-sum"
	// FaultZeroExtend zero-extends each int8 lane instead of sign-extending.
	FaultZeroExtend Fault = "zero-extend"
	// FaultKeepAcc adds an aggregate's first line to the previous
	// aggregate's sum instead of restarting from it.
	FaultKeepAcc Fault = "keep-acc"
	// FaultTruncShift aligns with a plain arithmetic shift (floor) instead
	// of round to nearest.
	FaultTruncShift Fault = "trunc-shift"
	// FaultCap7 caps the alignment shift at 7 instead of 8, so a mantissa
	// of magnitude 64 or more keeps a unit 8 or more exponents down.
	FaultCap7 Fault = "cap-7"
	// FaultUnsignedMax compares exponents as unsigned bytes in the max pass.
	FaultUnsignedMax Fault = "unsigned-max"
)

// sumFamily is the sum datapath of one integer-sum format.
type sumFamily struct{ f lowbit.Format }

// depth: input | accumulate | saturate, with round | shift between input
// and accumulate for a format with block exponents.
func (s sumFamily) depth() int {
	if s.f.BlockExponents() {
		return 5
	}
	return 3
}

// faults: the saturation fault always; the sign extension and restart
// faults of the plain sum, or the alignment's faults with block
// exponents.
func (s sumFamily) faults() []Fault {
	if s.f.BlockExponents() {
		return []Fault{FaultWrapSum, FaultTruncShift, FaultCap7, FaultUnsignedMax}
	}
	return []Fault{FaultWrapSum, FaultZeroExtend, FaultKeepAcc}
}

// validate checks a sum datapath's configuration (c normalized).
func (s sumFamily) validate(c Config) error {
	d := c.Datapath
	if !slices.Contains(Widths, c.Width) {
		return fmt.Errorf("%s: line width %d bits is not one of %v", d, c.Width, Widths)
	}
	if c.Stages != s.depth() {
		return fmt.Errorf("%s: pipeline depth %d, but the datapath has a fixed depth of %d", d, c.Stages, s.depth())
	}
	if c.Workers < 1 || c.Workers > lowbit.MaxWorkers {
		return fmt.Errorf("%s: workers %d out of range [1, %d]", d, c.Workers, lowbit.MaxWorkers)
	}
	if c.SplitCount {
		return fmt.Errorf("%s: the split count is a vote datapath option", d)
	}
	if c.Fault != FaultNone && !slices.Contains(s.faults(), c.Fault) {
		return fmt.Errorf("%s: unknown fault %q (known: %v)", d, c.Fault, s.faults())
	}
	if c.Fault == FaultWrapSum && c.AccBits() <= 16 {
		return fmt.Errorf("%s: fault %s needs more than 256 workers (with %d the sum never leaves int16)", d, c.Fault, c.Workers)
	}
	return nil
}

// moduleStem is nf_<format>sum: nf_int8sum, nf_bfp8sum.
func (s sumFamily) moduleStem() string { return "nf_" + s.f.String() + "sum" }

func (sumFamily) emit(e *emitter, c Config) { c.emitSum(e) }

// inputs: in_valid, in_first, in_last, then with block exponents in_kind,
// in_exp and in_emax (one byte per ExpGroups block), then in_data.
func (sumFamily) inputs(c Config) []port {
	ps := []port{
		{"in_valid", 1, func(v Vector) []byte { return bit(v.Valid) }},
		{"in_first", 1, func(v Vector) []byte { return bit(v.First) }},
		{"in_last", 1, func(v Vector) []byte { return bit(v.Last) }},
	}
	if c.blockExps() {
		g := c.ExpGroups()
		pad := func(b []byte) []byte {
			out := make([]byte, g)
			copy(out, b)
			return out
		}
		ps = append(ps, port{"in_kind", 1, func(v Vector) []byte { return bit(v.ExpLine) }},
			port{"in_exp", 8 * g, func(v Vector) []byte { return pad(v.Exp) }},
			port{"in_emax", 8 * g, func(v Vector) []byte { return pad(v.EMax) }})
	}
	return append(ps, port{"in_data", c.Width, func(v Vector) []byte { return v.Data }})
}

// outWidth is both view lines of a payload line: one int16 per element.
func (sumFamily) outWidth(c Config) int { return 2 * c.Width }

func (sumFamily) workers(c Config) int { return c.Workers }

func (sumFamily) vectors(c Config, n int, seed uint64) []Vector { return sumVectors(c, n, seed) }

func (sumFamily) check(c Config, vs []Vector) error { return c.checkSumVectors(vs) }

// expect answers each aggregate's valid last line with expectSum of its
// valid lines from the first on.
func (sumFamily) expect(c Config, vs []Vector) [][]byte {
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
			want[i] = expectSum(c, agg)
		}
	}
	return want
}

// group is one mantissa aggregate of Workers lines, different for a = 0
// and 1.
func (sumFamily) group(c Config, a int) []Vector {
	g := &sumGen{c: c}
	line := func(k int) []byte { return g.fill(func(i int) byte { return byte(int8(3*a + k - i%5)) }) }
	exp := func(k int) []byte { return g.groups(func(b int) int { return -(k + b + a) % 4 }) }
	g.agg(c.Workers, false, line, exp, false)
	return g.vs
}

// sumFormat is the integer-sum format of c's datapath.
func (c Config) sumFormat() lowbit.Format {
	if s, ok := c.Datapath.fam().(sumFamily); ok {
		return s.f
	}
	return lowbit.FP32
}

// blockExps reports whether c is the sum datapath of a format with block
// exponents (BFP8): an exponent pass and the alignment stages.
func (c Config) blockExps() bool { return c.sumFormat().BlockExponents() }

// AccBits is the width of a sum datapath's lane accumulator: the fewest
// two's-complement bits that hold any sum of Workers int8 values,
// [-128 W, 127 W], exactly: 8 + ceil(log2 W). The accumulator never wraps,
// so saturating it once to int16 at the end is the spec's "exact, then
// saturated once".
func (c Config) AccBits() int {
	w := c.Normalized().Workers
	a := 8
	for n := 1; n < w; n <<= 1 {
		a++
	}
	return a
}

// ExpGroups is the number of 64-element BFP8 blocks a line covers (at
// least one: a narrower line lies inside one block and shares its
// exponent): in_exp and in_emax carry one int8 per group.
func (c Config) ExpGroups() int { return max(1, c.Elements()/lowbit.BFPBlock) }

// sext returns the Verilog expression that sign-extends the 8-bit
// expression byte (a part-select whose sign bit is msb) to a bits; under
// FaultZeroExtend it zero-extends.
func (c Config) sext(byteExpr, msb string, a int) string {
	if a == 8 {
		return byteExpr
	}
	if c.Fault == FaultZeroExtend {
		return fmt.Sprintf("{%d'd0, %s}", a-8, byteExpr)
	}
	return fmt.Sprintf("{{%d{%s}}, %s}", a-8, msb, byteExpr)
}

// emitSum writes a sum datapath's module.
func (c Config) emitSum(e *emitter) {
	c.emitSumHeader(e)
	if c.blockExps() {
		c.emitShift(e)
	}
	e.line("  // 1. input register")
	e.line("  reg s1_valid, s1_first, s1_last;")
	if c.blockExps() {
		e.line("  reg s1_kind;")
		e.line("  reg [%d:0] s1_k;", 4*c.ExpGroups()-1)
	}
	e.line("  reg %ss1_data;", vec(c.Width))
	e.line("  always @(posedge clk) begin")
	e.line("    s1_valid <= rst ? 1'b0 : in_valid;")
	e.line("    s1_first <= in_first;")
	e.line("    s1_last  <= in_last;")
	if c.blockExps() {
		e.line("    s1_kind  <= in_kind;")
		e.line("    s1_k     <= a_k;")
	}
	e.line("    s1_data  <= in_data;")
	e.line("  end")
	e.line("")
	src := "s1" // the stage the accumulator reads
	if c.blockExps() {
		c.emitAlign(e)
		src = "s3"
	}
	c.emitAccumulate(e, src)
	c.emitSaturate(e)
	e.line("endmodule")
	e.line("")
	e.line("`default_nettype wire")
}

func (c Config) emitSumHeader(e *emitter) {
	n, a := c.Elements(), c.AccBits()
	e.line("// Code generated by nfabric hw gen; DO NOT EDIT.")
	e.line("//")
	f := c.sumFormat()
	if c.blockExps() {
		e.line("// NEURON-Fabric conservative-format datapath %s (%s, 64-element blocks).", c.Datapath, f.Label())
		e.line("//   pipeline    5 stages: input (with the shift k per block) | round | shift | accumulate | saturate")
	} else {
		e.line("// NEURON-Fabric conservative-format datapath %s (%s fixed point, shared scale).", c.Datapath, f.Label())
		e.line("//   pipeline    3 stages: input | accumulate | saturate")
	}
	e.line("//   line width  %d bits = %d int8 lanes (byte i = element i, two's complement)", c.Width, n)
	e.line("//   workers     up to %d worker lines per aggregate; %d-bit lane accumulators (never wrap)", c.Workers, a)
	e.line("//   latency     %d rising clock edges from an aggregate's last line to its view", c.Stages)
	if c.Fault != FaultNone {
		e.line("//   FAULT       %q injected deliberately: this datapath is WRONG (test only)", c.Fault)
	}
	e.line("//")
	e.line("// One worker line per clock while in_valid: in_first marks an aggregate's first line")
	e.line("// (the accumulators restart from it), in_last its last; idle cycles hold them.")
	if !c.blockExps() {
		e.line("// Response: out_data lane i (bits 16i+15..16i, int16) = clamp(sum_w q_wi, -32768, 32767),")
		e.line("// the exact sum saturated once; view line 0 = out_data[%d:0], view line 1 = out_data[%d:%d].", c.Width-1, 2*c.Width-1, c.Width)
	} else {
		e.line("// in_kind 1: an exponent line (one int8 block exponent per lane); the response is the")
		e.line("//   exponent view, lane i (bits 8i+7..8i) = max_w e_wi, signed; the upper half is zero.")
		e.line("// in_kind 0: a mantissa line of one worker, in_exp its exponent and in_emax the maximum E")
		e.line("//   (from the exponent view) of each 64-lane block; k = min(E - e, 8) (0 when E <= e),")
		e.line("//   a_i = m_i if k = 0 else (m_i + 2^(k-1)) >>> k (round to nearest, ties up), and the")
		e.line("//   response lane i (bits 16i+15..16i, int16) = clamp(sum_w a_wi, -32768, 32767).")
	}
	e.line("")
	c.emitModule(e)
	e.line("  localparam N = %d;  // lanes", n)
	e.line("  localparam A = %d;  // accumulator bits", a)
	e.line("  genvar i;")
	e.line("")
}

// emitShift writes the BFP8 datapath's shift amounts, computed on the way into the
// input register (one per block, so the align stage starts from a
// registered k): k = min(E - e, 8), 0 when E <= e.
func (c Config) emitShift(e *emitter) {
	capK := 8
	if c.Fault == FaultCap7 {
		capK = 7
	}
	e.line("  // 0. shift amount per block, into the input register: k = min(E - e, %d), 0 when E <= e", capK)
	e.line("  wire [%d:0] a_k;  // 4 bits per block", 4*c.ExpGroups()-1)
	e.line("  generate")
	e.line("    for (i = 0; i < %d; i = i + 1) begin : shift", c.ExpGroups())
	e.line("      wire [8:0] d = {in_emax[8*i + 7], in_emax[8*i +: 8]} - {in_exp[8*i + 7], in_exp[8*i +: 8]};  // E - e, 9-bit two's complement")
	e.line("      assign a_k[4*i +: 4] = d[8] ? 4'd0 : (d[7:0] > 8'd%d) ? 4'd%d : d[3:0];", capK, capK)
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
}

// emitAlign writes the BFP8 datapath's alignment, a_i = (m_i + 2^(k-1)) >>> k, over
// two stages so that the rounding add and the barrel shift do not share a
// clock: stage 2 registers t_i = m_i + 2^(k-1) (9 bits; an exponent line's
// byte, sign-extended, passes instead) with the block's k, stage 3 the
// arithmetic shift t_i >>> k (exponent lines pass unchanged).
func (c Config) emitAlign(e *emitter) {
	g := 4*c.ExpGroups() - 1
	e.line("  // 2. round: t_i = m_i + 2^(k-1) (9 bits), per lane")
	e.line("  wire [%d:0] t_val;  // 9 bits per lane", 9*c.Elements()-1)
	e.line("  generate")
	e.line("    for (i = 0; i < N; i = i + 1) begin : round")
	e.line("      localparam integer G = i / %d;  // the lane's block", lowbit.BFPBlock)
	e.line("      wire [3:0] k = s1_k[4*G +: 4];")
	if c.Fault == FaultTruncShift {
		e.line("      wire [7:0] half = 8'd0;  // FAULT: no rounding")
	} else {
		e.line("      wire [7:0] half = (k == 4'd0) ? 8'd0 : (8'd1 << (k - 4'd1));  // 2^(k-1)")
	}
	e.line("      wire signed [8:0] m = $signed({s1_data[8*i + 7], s1_data[8*i +: 8]});")
	e.line("      assign t_val[9*i +: 9] = s1_kind ? m : m + $signed({1'b0, half});")
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
	e.line("  reg s2_valid, s2_first, s2_last, s2_kind;")
	e.line("  reg [%d:0] s2_k;", g)
	e.line("  reg [%d:0] s2_t;", 9*c.Elements()-1)
	e.line("  always @(posedge clk) begin")
	e.line("    s2_valid <= rst ? 1'b0 : s1_valid;")
	e.line("    s2_first <= s1_first;")
	e.line("    s2_last  <= s1_last;")
	e.line("    s2_kind  <= s1_kind;")
	e.line("    s2_k     <= s1_k;")
	e.line("    s2_t     <= t_val;")
	e.line("  end")
	e.line("")
	e.line("  // 3. shift: a_i = t_i >>> k, per lane")
	e.line("  wire [%d:0] a_val;", c.Width-1)
	e.line("  generate")
	e.line("    for (i = 0; i < N; i = i + 1) begin : align")
	e.line("      localparam integer G = i / %d;  // the lane's block", lowbit.BFPBlock)
	e.line("      wire [3:0] k = s2_k[4*G +: 4];")
	e.line("      wire signed [8:0] t = $signed(s2_t[9*i +: 9]);")
	e.line("      /* verilator lint_off UNUSEDSIGNAL */")
	e.line("      wire signed [8:0] sh = t >>> k;  // bit 8 equals bit 7: the result fits int8")
	e.line("      /* verilator lint_on UNUSEDSIGNAL */")
	e.line("      assign a_val[8*i +: 8] = s2_kind ? t[7:0] : sh[7:0];")
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
	e.line("  reg s3_valid, s3_first, s3_last, s3_kind;")
	e.line("  reg %ss3_data;", vec(c.Width))
	e.line("  always @(posedge clk) begin")
	e.line("    s3_valid <= rst ? 1'b0 : s2_valid;")
	e.line("    s3_first <= s2_first;")
	e.line("    s3_last  <= s2_last;")
	e.line("    s3_kind  <= s2_kind;")
	e.line("    s3_data  <= a_val;")
	e.line("  end")
	e.line("")
}

// emitAccumulate writes the lane accumulators, reading stage src: the
// exact sum (and, for BFP8 exponent lines, the signed max), and from
// each accumulator register its saturated int16 (and exponent byte), the
// last stage's logic. Each lane keeps its own logic in one generate block
// so no wide bus is read lane by lane (Icarus re-evaluates every reader of
// a bus each time a part of it changes).
func (c Config) emitAccumulate(e *emitter, src string) {
	a, w := c.AccBits(), c.Width
	st := "s2"
	if c.blockExps() {
		st = "s4"
	}
	e.line("  // %d. accumulate: acc_i = x_i on an aggregate's first line, else acc_i + x_i", c.Stages-1)
	if c.blockExps() {
		e.line("  //    (max(acc_i, x_i) on exponent lines)")
	}
	e.line("  // %d. saturate the accumulator once to int16 (from its register, next stage)", c.Stages)
	e.line("  reg %s_done;  // the aggregate's last line was accumulated", st)
	if c.blockExps() {
		e.line("  reg %s_kind;", st)
	}
	e.line("  always @(posedge clk) begin")
	e.line("    %s_done <= rst ? 1'b0 : (%s_valid & %s_last);", st, src, src)
	if c.blockExps() {
		e.line("    %s_kind <= %s_kind;", st, src)
	}
	e.line("  end")
	e.line("  wire [%d:0] v_sum;  // int16 per lane", 2*w-1)
	if c.blockExps() {
		e.line("  wire [%d:0] v_exp;  // the exponent view: each lane's max, one byte", w-1)
	}
	e.line("  generate")
	e.line("    for (i = 0; i < N; i = i + 1) begin : lane")
	e.line("      wire signed [A-1:0] x = %s;", c.sext(src+"_data[8*i +: 8]", src+"_data[8*i + 7]", a))
	e.line("      reg  signed [A-1:0] r;")
	restart := "x"
	if c.Fault == FaultKeepAcc {
		restart = "r + x" // FAULT: the first line does not restart the sum
	}
	if c.blockExps() {
		gt := "x > r"
		if c.Fault == FaultUnsignedMax {
			gt = "x[7:0] > r[7:0]" // FAULT: unsigned byte compare
		}
		e.line("      wire signed [A-1:0] m = (%s) ? x : r;", gt)
		e.line("      always @(posedge clk) if (%s_valid) r <= %s_first ? %s : (%s_kind ? m : r + x);", src, src, restart, src)
	} else {
		e.line("      always @(posedge clk) if (%s_valid) r <= %s_first ? %s : r + x;", src, src, restart)
	}
	switch {
	case a < 16:
		e.line("      assign v_sum[16*i +: 16] = {{%d{r[A-1]}}, r};", 16-a)
	case a == 16:
		e.line("      assign v_sum[16*i +: 16] = r;")
	case c.Fault == FaultWrapSum:
		e.line("      assign v_sum[16*i +: 16] = r[15:0];  // FAULT: wraps instead of saturating")
	default:
		e.line("      wire hi = ~r[A-1] & (|r[A-2:15]);  // > 32767")
		e.line("      wire lo =  r[A-1] & ~(&r[A-2:15]); // < -32768")
		// hi: 16'h7fff, lo: 16'h8000, else r[15:0], as gates rather than a
		// mux of constants (which Yosys would fold into set/reset flip-flops).
		e.line("      assign v_sum[16*i +: 16] = {(r[15] & ~hi) | lo, (r[14:0] | {15{hi}}) & ~{15{lo}}};")
	}
	if c.blockExps() {
		e.line("      assign v_exp[8*i +: 8] = r[7:0];")
	}
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
}

// emitSaturate writes the last stage's register: the saturated lane sums
// (or, for BFP8 exponent aggregates, the exponent view).
func (c Config) emitSaturate(e *emitter) {
	w := c.Width
	st, out := "s2", "s3"
	if c.blockExps() {
		st, out = "s4", "s5"
	}
	resp := "v_sum"
	if c.blockExps() {
		resp = fmt.Sprintf("%s_kind ? {%d'd0, v_exp} : v_sum", st, w)
	}
	e.line("  // response register")
	e.line("  reg %s_valid;", out)
	e.line("  reg %s%s_data;", vec(2*w), out)
	e.line("  always @(posedge clk) begin")
	e.line("    %s_valid <= rst ? 1'b0 : %s_done;", out, st)
	e.line("    %s_data  <= %s;", out, resp)
	e.line("  end")
	e.line("  assign out_valid = %s_valid;", out)
	e.line("  assign out_data  = %s_data;", out)
}

// expectSum returns the response a sum datapath must give for one
// aggregate, lines being its valid lines from the first to the last, as
// the 2 Width/8 bytes of out_data (element first): for a mantissa
// aggregate the int16 lane sums little endian (lowbit.PutInt16s of the
// format's Ref twin, lowbit.Format.RefSumCodes); for an exponent aggregate
// the exponent view, lane i = the E that the Ref twin returns for block i,
// then zeros. The oracle computes E from the workers' exponents itself;
// the lines' EMax is not read.
func expectSum(c Config, lines []Vector) []byte {
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
	f := c.sumFormat()
	switch {
	case !f.BlockExponents():
		sum, _ := f.RefSumCodes(mant, nil, n)
		lowbit.PutInt16s(out, sum)
	case lines[len(lines)-1].ExpLine:
		// Exponent line k holds worker k's exponents of n blocks; zero
		// mantissas make the Ref twin return just the blocks' maxima.
		zero := make([]int8, n*lowbit.BFPBlock)
		zeros := make([][]int8, len(lines))
		for k := range zeros {
			zeros[k] = zero
		}
		_, e := f.RefSumCodes(zeros, mant, n*lowbit.BFPBlock)
		copy(out, lowbit.Int8Bytes(e))
	default:
		sum, _ := f.RefSumCodes(mant, exp, n)
		lowbit.PutInt16s(out, sum)
	}
	return out
}

// checkSumVectors rejects a stream a sum datapath cannot answer: a line
// of the wrong length, a valid line outside an aggregate (no First since
// the last Last), a BFP8 mantissa line without one exponent and one E
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
		if c.blockExps() {
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

// agg appends one aggregate: worker k's line data(k), and for BFP8
// mantissa lines the exponents exp(k) of each block, E being their max;
// bubbles inserts idle cycles between lines now and then.
func (g *sumGen) agg(w int, expLine bool, data func(k int) []byte, exp func(k int) []byte, bubbles bool) {
	var emax []byte
	if g.c.blockExps() && !expLine {
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
// first (for BFP8 every shift 0 to 10 with rounding ties, the
// exponent extremes, and exponent passes over extreme and mixed-sign
// exponents; then one line of every byte value, and Workers lines of the
// extreme codes, which saturate when Workers > 258), then random
// aggregates of 1 to Workers lines with idle cycles inside and between
// them. The same seed gives the same vectors.
func sumVectors(c Config, n int, seed uint64) []Vector {
	g := &sumGen{c: c, rng: rand.New(rand.NewPCG(seed, uint64(c.Width)^0x5a5a))}
	w, ne := c.Workers, c.Elements()
	isBFP := c.blockExps()
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
