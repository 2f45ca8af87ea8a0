// Package cxldev is the CXL memory device of the timing model and the
// link and host port it hangs from: a device preset is data (Config, with
// its provenance in Profile: Devices, Lookup), and the components that
// serve it are the CXL link (FlitLink, one direction, packing CXL.mem
// messages into 68- or 256-byte flits), the paper's bandwidth gate (Gate),
// the aggregation datapath (Pipeline), the paper's ideal controller stack
// (Stack: a fixed-latency memory, the pipeline and a gate) and the
// event-driven device of the detailed models (Device).
//
// # Stages
//
// A Device serves a read through named stages, each paid in both
// directions (Config): the host's on-chip fabric, CXL bridge and protocol
// conversion; the request's flits and port; the device's protocol
// processing and request queue; the DRAM (package dram) and its front
// end; the aggregation pipeline for low-bit reads; the protocol stage
// again; the response's flits and port; the host stages back. The
// decomposition, the bridge and protocol latencies and the queue depths
// come from the validated gem5 models CXL-DMSim and SimCXL; the presets
// say which published measurement calibrated what (Profile.Parameters),
// and the timing package's table test checks each against its anchors.
//
// # Presets
//
//   - asic-pcie5-x8: a CXL 2.0 ASIC expander on PCIe 5.0 x8 with one
//     DDR5-4800 DIMM; its host fabric calibrated to CXL-DMSim's testbed
//     ASIC idle read (284.9 ns), everything else predicted (its read
//     bandwidth, 22.2 GB/s of 68-byte flits, against the published 21.4).
//   - fpga-pcie5-x16: an FPGA device (60 ns protocol processing each way,
//     36-entry queues, one DDR4-3200 channel) on the same host; nothing
//     calibrated: its idle read and its queue-bound bandwidth are
//     predictions checked against CXL-DMSim's FPGA ratios.
//   - projection-pcie6-x16: CXL 3.x on PCIe 6.0 x16 with eight DDR5-4800
//     sub-channels and no host bridge or protocol stage; no shipping
//     device: the point the paper's exposure is projected onto.
//
// # Idealisations
//
// The link's retry, ack/nak and credit-return flits and the all-data flit
// are not modelled (credits return one port latency after they free); the
// pipeline and the response link are reservation servers fed in DRAM
// issue order; the host bridge has no finite FIFO of its own (the
// streams' outstanding limits bound what is in flight).
package cxldev
