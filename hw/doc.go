// Package hw is the hardware side of NEURON-Fabric (paper Sec. 3 and 10):
// a Verilog generator for the controller's aggregation datapaths,
// co-simulation of the generated RTL against the lowbit reference oracles,
// Yosys synthesis with a gate-equivalent / area / energy / critical-path
// model, and an iCE40 place-and-route proxy.
//
// # Datapaths and their families
//
// A Datapath is the paper's vote datapath (Vote), which runs G-Binary and
// G-Ternary, or the sum datapath of one integer-sum format of lowbit's
// registry (ModeDatapath maps a controller mode to it). Each family
// implements one unexported interface: its structure (depth, faults,
// validation, module name, RTL), its request ports, its stimulus (Vectors)
// and its oracle (Expect, from lowbit's Ref twins). Everything else is one
// mechanism for every datapath: the co-simulation line protocol
// (Config.EncodeVector: one hex field per request port), both simulator
// harnesses, the response comparison, the place-and-route wrapper
// (WrapperVerilog, the request ports as one shifted word) and
// MeasureTiming.
//
// # The vote datapath
//
// Config selects a line width (64 to 1024 bits, one element per byte, bit
// k of byte i = worker k's sign for element i, as lowbit's element-major
// packet) and a pipeline depth k (1 to 5; 5 is the paper's). The five
// operations are always the same; k decides after which of them a register
// sits (StageOps):
//
//	decode | unpack | count | gate | select      k = 5
//	decode | unpack+count | gate | select        k = 4
//	decode | unpack+count | gate+select          k = 3
//	decode+unpack+count | gate+select            k = 2
//	decode+unpack+count+gate+select              k = 1
//
// The response register is always present; a request presented on one
// rising edge answers k edges later. The four modes of the paper's Table 2
// are in_mode 0 (identity) and 1 (FP32 bypass), which return the line
// unchanged, 2 (G-Binary), which returns byte i = c_i, the number of set
// worker bits (lowbit.CountPacket, the count the paper's functional test
// checks), and 3 (G-Ternary), which returns byte i = m_i*u_i as int8:
// 0x01, 0x00 or 0xff (lowbit.VotePacket), where u_i = sgn(2c_i - W) (a tie
// of an even W returns 0) and m_i is the paper's 2-of-3 gate: element
// index mod 3 == 2 returns 0. The gate needs the element index of byte 0
// mod 3, driven on in_base.
//
// # The sum datapaths
//
// Config.Datapath selects, instead of the paper's datapath (the zero
// value, Vote), the read-side transform of a format beyond the paper, with
// the numeric contract of lowbit's Int8 and BFP8 (lowbit/fixed.go). Both are streaming
// accumulators that take one worker line per clock, Width/8 int8 lanes
// (64 at 512 bits), rather than a W-input adder tree: the controller reads
// the W workers' lines of a payload line one after another anyway
// (worker-major), one adder per lane serves any W up to Config.Workers
// without a wider tree, and the cost grows with log2 W (the accumulator
// width) instead of W. in_first marks an aggregate's first line (the
// accumulators restart from it, no clear cycle), in_last its last; idle
// cycles (in_valid low) hold them. Depth() rising edges after the last
// line out_valid is high for one cycle and out_data (2 Width bits) holds
// the aggregate's view: both sum view lines of the payload line, lane i as
// an int16 at bits 16i+15..16i (little endian; view line 0 is the low
// half). The lane accumulators have AccBits = 8 + ceil(log2 W) bits, so
// they hold any sum exactly; the last stage saturates once to int16
// (lowbit.SumMin..SumMax), which is logic only when W > 256 (with W <= 256
// the sum fits int16 and the stage only sign-extends).
//
//	int8  input | accumulate | saturate                            Depth 3
//	bfp8  input (+ shift k) | round | shift | accumulate | saturate  Depth 5
//
// The BFP8 datapath (a format with block exponents) needs each block's maximum exponent E before it can align a
// single mantissa (the spec rounds each worker's shifted mantissa, so a
// running maximum that rescales the partial sum would not be bit-exact).
// It therefore runs two passes, exponents first: an exponent aggregate
// (in_kind = 1) streams the W workers' exponent lines through the same
// lane registers, which take the signed lane maximum instead of the sum,
// and answers with the exponent view (lane i = E of block i, upper half
// zero); a mantissa aggregate (in_kind = 0) streams each worker's mantissa
// line with in_exp, that worker's exponent, and in_emax, the block's E
// from the exponent view (one byte per 64-lane block: ExpGroups is 2 at
// 1024 bits). On the way into the input register each block's shift
// k = min(E - e, 8) is computed (0 when E <= e; a 9-bit subtract and a
// compare, registered as 4 bits, which keeps them off the alignment's
// path), and the alignment computes a_i = m_i for k = 0, else
// (m_i + 2^(k-1)) >>> k, an arithmetic shift rounding to nearest with
// ties toward +inf, over two stages: round registers the 9-bit
// t_i = m_i + 2^(k-1), shift the 4-level barrel shift t_i >>> k (with
// both in one stage the add's carry chain and the shifter's muxes were
// the datapath's longest path, and bfp8 missed 100 MHz on ECP5); the
// cap at 8 changes nothing (every int8 shifts to 0 at k >= 8) but bounds
// the shifter at 4 bits. The aligned int8 then enters the same accumulate
// and saturate stages as int8's.
//
// The sum datapaths' faults (Datapath.Faults: wrap-sum, zero-extend,
// keep-acc; trunc-shift, cap-7, unsigned-max) are caught by their
// co-simulation (TestSumCosimCatchesFaults).
//
// A further summed format with int8 codes needs nothing in this package:
// its registry row in lowbit names its datapath, its Ref twin is the
// oracle, and the module, harnesses and wrapper follow from the family.
// One with a new side plane (beside BFP8's block exponents) adds its
// request ports and stages to sum.go and a case to the tests' specSum.
//
// # Co-simulation
//
// Cosim writes the RTL and a harness (a C++ main for Verilator, a $fscanf
// testbench for Icarus), both written from the datapath's request ports,
// into a fresh directory, feeds one request per clock over stdin (one hex
// field per port: "valid mode base data" for the vote datapath, "valid
// first last [kind exp emax] data" for a sum datapath), reads one response
// per clock ("valid hex") and compares it with Expect: the vote datapath
// owes every valid line lowbit.RefCountPacket or
// lowbit.RefAggregatePacket, a sum datapath an aggregate's last line its
// format's lowbit.Format.RefSumCodes (the oracle computes E from the
// workers' exponents itself; the tests add a third, spec-only oracle).
// Datapath.Faults lists deliberately broken datapaths that the tests show
// co-simulation catches.
//
// # Synthesis and the cost model
//
// Synth runs `synth -top` (Yosys with ABC onto Yosys's generic gates) and
// optionally `synth_ecp5`, parses `stat -json` (ParseStat) and computes the
// longest combinational path of the `write_json` netlist (LongestPath).
// Technology.Estimate prices the cells in NAND2 gate equivalents from the
// NanGate 45nm Open Cell Library areas (CellGE), converts to area and
// dynamic energy, and turns the longest path into a stage delay with
// logical-effort cell delays in FO4 (DelayFO4) against the paper's 500 ps
// (2 GHz) cycle. Every constant names its source; none is fitted to the
// paper.
//
// # Place and route
//
// Pnr wraps the datapath in a serial shift-in/shift-out wrapper
// (WrapperVerilog, over the datapath's request ports and response) so
// that a 1024-bit line does not need 2000 pins, maps
// it with synth_ice40 and routes it with nextpnr-ice40 on an HX8K (ct256)
// against 100 MHz. Designs that do not fit are reported as such.
//
// External programs come from Debian (yosys, verilator, iverilog,
// nextpnr-ice40, fpga-icestorm); without them the flow returns a
// *MissingToolError naming the package, and tests skip.
package hw
