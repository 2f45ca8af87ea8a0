package hw

import (
	"fmt"
	"io"
	"strings"
)

// Widths are the line widths the generator is evaluated at (paper Sec. 10).
var Widths = []int{64, 128, 256, 512, 1024}

// DefaultStages is the paper's pipeline depth: five controller cycles.
const DefaultStages = 5

// MaxStages is the deepest pipeline the generator places registers for.
const MaxStages = 5

// Fault names a deliberate bug the generator can inject, so that tests can
// show that co-simulation catches a wrong datapath. FaultNone is correct.
type Fault string

const (
	// FaultNone generates the correct datapath.
	FaultNone Fault = ""
	// FaultTiePositive treats a tie (2c == W) as a positive vote.
	FaultTiePositive Fault = "tie-positive"
	// FaultGatePhase zeroes the wrong element of each 2-of-3 group.
	FaultGatePhase Fault = "gate-phase"
	// FaultDropWorker leaves the highest worker's bit out of the count.
	FaultDropWorker Fault = "drop-worker"
)

// Faults lists the injectable faults.
var Faults = []Fault{FaultTiePositive, FaultGatePhase, FaultDropWorker}

// Config selects one generated datapath.
type Config struct {
	// Width is the line width in bits: 64, 128, 256, 512 or 1024. Each
	// byte is one element, so a line carries Width/8 elements.
	Width int
	// Stages is the pipeline depth k, 1 to MaxStages; 0 means
	// DefaultStages. See StageOps for where the registers go.
	Stages int
	// Workers is how many worker bits of each byte vote, 1 to 8; 0 means 8.
	Workers int
	// SplitCount moves the first half of each popcount (two 4-bit nibble
	// counts) into the unpack operation, which is otherwise empty for the
	// element-major packet; the count operation adds the halves. With
	// k = 5 this balances the count stage over two cycles.
	SplitCount bool
	// Fault injects a deliberate bug (tests only).
	Fault Fault
	// Datapath selects the datapath; the zero value is the paper's low-bit
	// one. For a sum datapath Stages is its fixed Depth (0 means it),
	// Workers is the most worker lines one aggregate sums (1 to
	// lowbit.MaxWorkers; 0 means 8, the low-bit datapath's W), which sizes
	// the lane accumulators (AccBits), and SplitCount does not apply.
	Datapath Datapath
}

// Normalized returns c with defaults filled in.
func (c Config) Normalized() Config {
	if c.Stages == 0 {
		c.Stages = DefaultStages
		if c.Datapath.IsSum() {
			c.Stages = c.Datapath.Depth()
		}
	}
	if c.Workers == 0 {
		c.Workers = 8
	}
	return c
}

// Validate checks the configuration and names the bad field.
func (c Config) Validate() error {
	c = c.Normalized()
	switch {
	case c.Datapath.IsSum():
		return c.validateSum()
	case c.Datapath != LowBit:
		return fmt.Errorf("unknown datapath %q (known: lowbit, int8-sum, bfp8-sum)", string(c.Datapath))
	}
	ok := false
	for _, w := range Widths {
		ok = ok || w == c.Width
	}
	if !ok {
		return fmt.Errorf("line width %d bits is not one of %v", c.Width, Widths)
	}
	if c.Stages < 1 || c.Stages > MaxStages {
		return fmt.Errorf("pipeline depth %d out of range [1, %d]", c.Stages, MaxStages)
	}
	if c.Workers < 1 || c.Workers > 8 {
		return fmt.Errorf("workers %d out of range [1, 8]", c.Workers)
	}
	switch c.Fault {
	case FaultNone, FaultTiePositive, FaultGatePhase, FaultDropWorker:
	default:
		return fmt.Errorf("unknown fault %q", c.Fault)
	}
	return nil
}

// Elements is the number of elements (bytes) per line.
func (c Config) Elements() int { return c.Width / 8 }

// ModuleName is the generated Verilog module's name, e.g. nf_agg_w512_k5.
func (c Config) ModuleName() string {
	c = c.Normalized()
	s := fmt.Sprintf("nf_agg_w%d_k%d", c.Width, c.Stages)
	if c.Datapath.IsSum() { // nf_int8sum_w512_k3, nf_bfp8sum_w512_k5
		s = fmt.Sprintf("nf_%s_w%d_k%d", strings.ReplaceAll(string(c.Datapath), "-", ""), c.Width, c.Stages)
	}
	if c.Workers != 8 {
		s += fmt.Sprintf("_p%d", c.Workers)
	}
	if c.SplitCount {
		s += "_split"
	}
	if c.Fault != FaultNone {
		s += "_fault_" + strings.ReplaceAll(string(c.Fault), "-", "_")
	}
	return s
}

// Latency is the number of rising clock edges from presenting a request to
// seeing its response on the outputs: the pipeline depth.
func (c Config) Latency() int { return c.Normalized().Stages }

// Op is one of the five logical operations of the datapath (paper Sec. 3).
type Op int

const (
	OpDecode Op = iota // request decode: mode -> bypass/ternary flags
	OpUnpack           // sign unpack/align (a pure delay for the element-major packet)
	OpCount            // per-element population counts
	OpGate             // majority and ternary gating
	OpSelect           // mode select; its register is the response register
	numOps
)

var opNames = [...]string{"decode", "unpack", "count", "gate", "select"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// stageRegs[k] lists, for pipeline depth k, after which operations a
// pipeline register sits. The response is always registered; shallower
// pipelines merge operations into one cycle, starting with the cheapest.
var stageRegs = [MaxStages + 1][numOps]bool{
	1: {OpSelect: true},
	2: {OpCount: true, OpSelect: true},
	3: {OpDecode: true, OpCount: true, OpSelect: true},
	4: {OpDecode: true, OpCount: true, OpGate: true, OpSelect: true},
	5: {OpDecode: true, OpUnpack: true, OpCount: true, OpGate: true, OpSelect: true},
}

// StageOps returns, for each pipeline stage in order, the operations it
// performs before its register.
func (c Config) StageOps() [][]Op {
	c = c.Normalized()
	var out [][]Op
	var cur []Op
	for o := range numOps {
		cur = append(cur, o)
		if stageRegs[c.Stages][o] {
			out = append(out, cur)
			cur = nil
		}
	}
	return out
}

// Verilog returns the generated module's source.
func (c Config) Verilog() (string, error) {
	var b strings.Builder
	if err := c.WriteVerilog(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// WriteVerilog writes the synthesizable Verilog-2005 module for c.
//
// Ports: clk; rst (synchronous, active high, clears the valid pipeline);
// in_valid, in_mode[1:0] (a cxl.Mode of the paper's Table 2), in_base[1:0] (the flattened element
// index of byte 0, mod 3; 3 acts as 0) and in_data[Width-1:0], whose byte i
// (bits 8i+7..8i) is element i, bit k of it worker k's sign; out_valid and
// out_data, Latency() rising edges later. The response per mode is
// documented in the package documentation and the file header.
func (c Config) WriteVerilog(w io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.Normalized()
	e := &emitter{}
	if c.Datapath.IsSum() {
		c.emitSum(e)
	} else {
		c.emit(e)
	}
	_, err := io.WriteString(w, e.String())
	return err
}

type emitter struct{ strings.Builder }

func (e *emitter) line(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
	e.WriteByte('\n')
}

// vec returns a Verilog range for a width-bit vector ("" for one bit).
func vec(width int) string {
	if width == 1 {
		return ""
	}
	return fmt.Sprintf("[%d:0] ", width-1)
}

// sig is one signal crossing a stage boundary: width bits named q, driven
// by the expression d.
type sig struct {
	w    int
	q, d string
}

// stage emits the boundary after op: registers named q when op ends a
// stage, plain wires otherwise.
func (c Config) stage(e *emitter, op Op, sigs []sig) {
	reg := stageRegs[c.Stages][op]
	if reg {
		e.line("  // ---- pipeline register after %s ----", op)
	} else {
		e.line("  // ---- no register after %s (same cycle as the next operation) ----", op)
	}
	for _, s := range sigs {
		if reg {
			e.line("  reg  %s%s;", vec(s.w), s.q)
		} else {
			e.line("  wire %s%s = %s;", vec(s.w), s.q, s.d)
		}
	}
	if !reg {
		e.line("")
		return
	}
	e.line("  always @(posedge clk) begin")
	for _, s := range sigs {
		if strings.HasSuffix(s.q, "_valid") {
			e.line("    %s <= rst ? 1'b0 : %s;", s.q, s.d)
		} else {
			e.line("    %s <= %s;", s.q, s.d)
		}
	}
	e.line("  end")
	e.line("")
}

func (c Config) emit(e *emitter) {
	c.emitHeader(e)
	c.emitDecode(e)
	c.emitUnpack(e)
	c.emitCount(e)
	c.emitGate(e)
	c.emitSelect(e)
}

// emitHeader writes the file comment and the module's ports.
func (c Config) emitHeader(e *emitter) {
	n := c.Elements()
	e.line("// Code generated by nfabric hw gen; DO NOT EDIT.")
	e.line("//")
	e.line("// NEURON-Fabric low-bit aggregation datapath (paper Sec. 3, Table 2).")
	e.line("//   line width  %d bits = %d elements of one byte", c.Width, n)
	e.line("//   workers     %d (bit k of byte i is worker k's sign for element i; higher bits ignored)", c.Workers)
	var st []string
	for _, ops := range c.StageOps() {
		var names []string
		for _, o := range ops {
			names = append(names, o.String())
		}
		st = append(st, strings.Join(names, "+"))
	}
	e.line("//   pipeline    %d stages: %s", c.Stages, strings.Join(st, " | "))
	e.line("//   latency     %d rising clock edges from request to response", c.Stages)
	if c.SplitCount {
		e.line("//   split count nibble popcounts in the unpack operation, their sum in the count operation")
	}
	if c.Fault != FaultNone {
		e.line("//   FAULT       %q injected deliberately: this datapath is WRONG (test only)", c.Fault)
	}
	e.line("//")
	e.line("// in_mode: 0 identity and 1 FP32 bypass return in_data unchanged;")
	e.line("//   2 G-Binary returns byte i = c_i, the count of set worker bits (as lowbit.CountPacket);")
	e.line("//   3 G-Ternary returns byte i = m_i*u_i as int8: 8'h01, 8'h00 or 8'hff (as lowbit.VotePacket),")
	e.line("//     u_i = sgn(2c_i - W) (a tie returns 0), m_i = 0 when (in_base + i) mod 3 == 2 (the 2-of-3 gate).")
	e.line("// in_base is the flattened index of element 0, mod 3 (3 behaves as 0).")
	e.line("")
	e.line("`default_nettype none")
	e.line("")
	e.line("module %s (", c.ModuleName())
	e.line("  input  wire         clk,")
	e.line("  input  wire         rst,")
	e.line("  input  wire         in_valid,")
	e.line("  input  wire [1:0]   in_mode,")
	e.line("  input  wire [1:0]   in_base,")
	e.line("  input  wire [%d:0] in_data,", c.Width-1)
	e.line("  output wire         out_valid,")
	e.line("  output wire [%d:0] out_data", c.Width-1)
	e.line(");")
	e.line("  localparam N = %d;  // elements per line", n)
	e.line("  localparam [4:0] W = 5'd%d;  // voting workers", c.Workers)
	e.line("  genvar i;")
	e.line("")
}

// emitDecode writes stage 1, request decode.
func (c Config) emitDecode(e *emitter) {
	wb := c.Width
	e.line("  // 1. request decode")
	e.line("  wire d_bypass = ~in_mode[1];           // identity or FP32 bypass")
	e.line("  wire d_ter    = in_mode[1] & in_mode[0]; // G-Ternary")
	e.line("")
	c.stage(e, OpDecode, []sig{
		{1, "s1_valid", "in_valid"},
		{1, "s1_bypass", "d_bypass"},
		{1, "s1_ter", "d_ter"},
		{2, "s1_base", "in_base"},
		{wb, "s1_data", "in_data"},
	})
}

// workerMask selects the voting workers' bits of a byte (one fewer under
// FaultDropWorker).
func (c Config) workerMask() int {
	mask := (1 << c.Workers) - 1
	if c.Fault == FaultDropWorker {
		mask >>= 1
	}
	return mask
}

// emitUnpack writes stage 2, sign unpack/align (with the split count's
// nibble popcounts).
func (c Config) emitUnpack(e *emitter) {
	n, wb, mask := c.Elements(), c.Width, c.workerMask()
	unpack := []sig{
		{1, "s2_valid", "s1_valid"},
		{1, "s2_bypass", "s1_bypass"},
		{1, "s2_ter", "s1_ter"},
		{2, "s2_base", "s1_base"},
		{wb, "s2_data", "s1_data"},
	}
	if c.SplitCount {
		e.line("  // 2. sign unpack/align: the element-major packet is already aligned,")
		e.line("  //    byte i = element i; this stage also counts each nibble of worker bits.")
		e.line("  wire [%d:0] u_half;", 6*n-1)
		e.line("  generate")
		e.line("    for (i = 0; i < N; i = i + 1) begin : unpack")
		e.line("      wire [7:0] b = s1_data[8*i +: 8] & 8'h%02x;", mask)
		e.line("      assign u_half[6*i +: 3]     = {2'b00, b[0]} + {2'b00, b[1]} + {2'b00, b[2]} + {2'b00, b[3]};")
		e.line("      assign u_half[6*i + 3 +: 3] = {2'b00, b[4]} + {2'b00, b[5]} + {2'b00, b[6]} + {2'b00, b[7]};")
		e.line("    end")
		e.line("  endgenerate")
		unpack = append(unpack, sig{6 * n, "s2_half", "u_half"})
	} else {
		e.line("  // 2. sign unpack/align: the element-major packet is already aligned,")
		e.line("  //    byte i = element i, so this stage only delays the line.")
	}
	e.line("")
	c.stage(e, OpUnpack, unpack)
}

// emitCount writes stage 3, the per-element counts.
func (c Config) emitCount(e *emitter) {
	n, wb, mask := c.Elements(), c.Width, c.workerMask()
	cw := 4 * n // count bus: 4 bits per element
	e.line("  // 3. per-element counts c_i = popcount(worker bits of byte i)")
	e.line("  wire [%d:0] c_cnt;", 4*n-1)
	e.line("  generate")
	e.line("    for (i = 0; i < N; i = i + 1) begin : count")
	if c.SplitCount {
		e.line("      assign c_cnt[4*i +: 4] = {1'b0, s2_half[6*i +: 3]} + {1'b0, s2_half[6*i + 3 +: 3]};")
	} else {
		e.line("      wire [7:0] b = s2_data[8*i +: 8] & 8'h%02x;", mask)
		e.line("      assign c_cnt[4*i +: 4] = {3'b000, b[0]} + {3'b000, b[1]} + {3'b000, b[2]} + {3'b000, b[3]}")
		e.line("                             + {3'b000, b[4]} + {3'b000, b[5]} + {3'b000, b[6]} + {3'b000, b[7]};")
	}
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
	c.stage(e, OpCount, []sig{
		{1, "s3_valid", "s2_valid"},
		{1, "s3_bypass", "s2_bypass"},
		{1, "s3_ter", "s2_ter"},
		{2, "s3_base", "s2_base"},
		{wb, "s3_data", "s2_data"},
		{cw, "s3_cnt", "c_cnt"},
	})
}

// emitGate writes stage 4, the majority and the 2-of-3 ternary gate.
func (c Config) emitGate(e *emitter) {
	n, wb := c.Elements(), c.Width
	cw := 4 * n
	pos := "twice > W"
	if c.Fault == FaultTiePositive {
		pos = "twice >= W"
	}
	zero := 2 // (base + i mod 3) that the gate zeroes, also zero+3
	if c.Fault == FaultGatePhase {
		zero = 1
	}
	e.line("  // 4. majority u_i = sgn(2c_i - W) and the 2-of-3 ternary gate m_i")
	e.line("  wire [%d:0] g_pos, g_neg;", n-1)
	e.line("  generate")
	e.line("    for (i = 0; i < N; i = i + 1) begin : gate")
	e.line("      localparam integer PHASE = i %% 3;")
	e.line("      wire [4:0] twice = {s3_cnt[4*i +: 4], 1'b0};  // 2 c_i")
	e.line("      wire [2:0] idx = {1'b0, s3_base} + PHASE[2:0]; // (element index mod 3) + 0 or 3")
	e.line("      wire keep = (idx != 3'd%d) && (idx != 3'd%d);", zero, zero+3)
	e.line("      assign g_pos[i] = (%s) && (!s3_ter || keep);", pos)
	e.line("      assign g_neg[i] = (twice < W) && (!s3_ter || keep);")
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
	c.stage(e, OpGate, []sig{
		{1, "s4_valid", "s3_valid"},
		{1, "s4_bypass", "s3_bypass"},
		{1, "s4_ter", "s3_ter"},
		{wb, "s4_data", "s3_data"},
		{cw, "s4_cnt", "s3_cnt"},
		{n, "s4_pos", "g_pos"},
		{n, "s4_neg", "g_neg"},
	})
}

// emitSelect writes stage 5, the mode select, and closes the module.
func (c Config) emitSelect(e *emitter) {
	wb := c.Width
	e.line("  // 5. mode select and response registration")
	e.line("  wire [%d:0] m_low;", c.Width-1)
	e.line("  generate")
	e.line("    for (i = 0; i < N; i = i + 1) begin : sel")
	e.line("      assign m_low[8*i +: 8] = s4_ter ? {{7{s4_neg[i]}}, s4_pos[i] | s4_neg[i]}")
	e.line("                                     : {4'b0000, s4_cnt[4*i +: 4]};")
	e.line("    end")
	e.line("  endgenerate")
	e.line("")
	c.stage(e, OpSelect, []sig{
		{1, "s5_valid", "s4_valid"},
		{wb, "s5_data", "s4_bypass ? s4_data : m_low"},
	})
	e.line("  assign out_valid = s5_valid;")
	e.line("  assign out_data  = s5_data;")
	e.line("endmodule")
	e.line("")
	e.line("`default_nettype wire")
}
