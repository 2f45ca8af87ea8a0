// Package dram is the DRAM behind a CXL memory controller: one JEDEC
// timing spec type (Spec) whose technologies and speed grades are preset
// values (DDR5-4800, DDR5-6400, gem5's DDR5-4400, DDR4-3200: Presets),
// and an event-driven channel model with its scheduler (Channel) and
// address mapping (Mapper), after the shape of Akita's mem/dram.
//
// A Channel is one DDR5 sub-channel or DDR4 channel: ranks, bank groups,
// banks with row-buffer state; tRCD, tCL/tCWL, tRP, tRAS, tRTP, tWR,
// tWTR_S/L, tCCD_S/L, tCCD_L_WR, tRRD_S/L, tFAW, the burst; all-bank
// refresh tREFI/tRFC of its own ranks; open or closed page; FR-FCFS over
// finite read and write queues with write-drain watermarks. It issues one
// command per decision on a command bus of command_cycles per command and
// reports each column command to its Sink. Validation: closed-form tests
// of each constraint in isolation here, and a cross-check against Akita
// v4's mem/dram in validation/akita.
//
// Idealisations: no same-bank refresh, RFM, power-down or self-refresh;
// no separate CA-bus modelling of two-cycle commands beyond
// command_cycles; reads and writes are not reordered across their queues
// except by the watermarks (or together, write_high 0).
//
// Spec carries its own command-line flags (AddFlags: --dram-preset and
// --dram-KEY for every YAML key) and YAML decoding (a block naming a
// preset starts from it), so a caller wires DRAM settings without
// knowing the fields.
package dram
