package hw

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// The vote datapath: the paper's five operations over the element-major
// sign packet, behind one mode latch (paper Sec. 3, Table 2). See the
// package documentation for the pipeline.

// The vote datapath's deliberate faults (tests only).
const (
	// FaultTiePositive treats a tie (2c == W) as a positive vote.
	FaultTiePositive Fault = "tie-positive"
	// FaultGatePhase zeroes the wrong element of each 2-of-3 group.
	FaultGatePhase Fault = "gate-phase"
	// FaultDropWorker leaves the highest worker's bit out of the count.
	FaultDropWorker Fault = "drop-worker"
)

// voteFamily is the vote datapath's family.
type voteFamily struct{}

func (voteFamily) depth() int { return DefaultStages }

func (voteFamily) faults() []Fault {
	return []Fault{FaultTiePositive, FaultGatePhase, FaultDropWorker}
}

func (v voteFamily) validate(c Config) error {
	if !slices.Contains(Widths, c.Width) {
		return fmt.Errorf("line width %d bits is not one of %v", c.Width, Widths)
	}
	if c.Stages < 1 || c.Stages > MaxStages {
		return fmt.Errorf("pipeline depth %d out of range [1, %d]", c.Stages, MaxStages)
	}
	if c.Workers < 1 || c.Workers > lowbit.MaxPacketWorkers {
		return fmt.Errorf("workers %d out of range [1, %d]", c.Workers, lowbit.MaxPacketWorkers)
	}
	if c.Fault != FaultNone && !slices.Contains(v.faults(), c.Fault) {
		return fmt.Errorf("unknown fault %q", c.Fault)
	}
	return nil
}

func (voteFamily) moduleStem() string { return "nf_agg" }

func (voteFamily) emit(e *emitter, c Config) {
	c.emitHeader(e)
	c.emitDecode(e)
	c.emitUnpack(e)
	c.emitCount(e)
	c.emitGate(e)
	c.emitSelect(e)
}

func (voteFamily) inputs(c Config) []port {
	return []port{
		{"in_valid", 1, func(v Vector) []byte { return bit(v.Valid) }},
		{"in_mode", 2, func(v Vector) []byte { return []byte{byte(v.Mode)} }},
		{"in_base", 2, func(v Vector) []byte { return []byte{byte(v.Base % 3)} }},
		{"in_data", c.Width, func(v Vector) []byte { return v.Data }},
	}
}

func (voteFamily) outWidth(c Config) int { return c.Width }

func (voteFamily) workers(Config) int { return 0 }

// check rejects a line of the wrong length or a mode beyond the paper's
// four, which in_mode cannot carry.
func (voteFamily) check(c Config, vs []Vector) error {
	for i, v := range vs {
		if len(v.Data) != c.Elements() {
			return fmt.Errorf("vector %d: %d data bytes, want %d", i, len(v.Data), c.Elements())
		}
		if v.Valid && !slices.Contains(cxl.Modes(), v.Mode) {
			return fmt.Errorf("vector %d: mode %v is not one of the paper's four the vote datapath latches", i, v.Mode)
		}
	}
	return nil
}

// expect answers every valid line with the lowbit reference oracles:
// the line unchanged in identity and FP32 bypass, lowbit.RefCountPacket
// under G-Binary, lowbit.RefAggregatePacket with the paper's gate under
// G-Ternary.
func (voteFamily) expect(c Config, vs []Vector) [][]byte {
	want := make([][]byte, len(vs))
	for i, v := range vs {
		if !v.Valid {
			continue
		}
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
		want[i] = out
	}
	return want
}

// group is one G-Binary line, different for a = 0 and 1.
func (voteFamily) group(c Config, a int) []Vector {
	d := make([]byte, c.Elements())
	for i := range d {
		d[i] = byte(0x35*a + 7*i)
	}
	return []Vector{{Valid: true, Mode: cxl.Aggregate(lowbit.Binary), Data: d}}
}

// vectors returns the corner cases (all-zero and all-one lines, every tie
// pattern, single workers, each base phase, in every mode, plus idle
// cycles), then random lines, modes and bases.
func (voteFamily) vectors(c Config, n int, seed uint64) []Vector {
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
	c.emitModule(e)
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
