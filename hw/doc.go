// Package hw is the hardware side of NEURON-Fabric (paper Sec. 3 and 10):
// a Verilog generator for the controller's low-bit aggregation datapath,
// co-simulation of the generated RTL against the lowbit reference oracles,
// Yosys synthesis with a gate-equivalent / area / energy / critical-path
// model, and an iCE40 place-and-route proxy.
//
// # The datapath
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
// # Co-simulation
//
// Cosim writes the RTL and a harness (a C++ main for Verilator, a $fscanf
// testbench for Icarus) into a fresh directory, feeds one request per
// clock over stdin ("valid mode base hex"), reads one response per clock
// ("valid hex") and compares every valid response with Expect, which
// calls lowbit.RefCountPacket and lowbit.RefAggregatePacket. Faults lists
// deliberately broken datapaths that the tests show co-simulation catches.
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
// (WrapperVerilog) so that a 1024-bit line does not need 2000 pins, maps
// it with synth_ice40 and routes it with nextpnr-ice40 on an HX8K (ct256)
// against 100 MHz. Designs that do not fit are reported as such.
//
// External programs come from Debian (yosys, verilator, iverilog,
// nextpnr-ice40, fpga-icestorm); without them the flow returns a
// *MissingToolError naming the package, and tests skip.
package hw
