package dram

import (
	"strings"

	"github.com/neuronfabric/nfabric/usage"
)

// grade is one named speed grade: the protocol's common values (base)
// with the grade's own set over them. Adding a speed grade or technology
// is one entry of grades; TestPresets checks every entry.
type grade struct {
	name string
	base func() Spec
	set  func(*Spec)
}

// ddr5Common holds what the DDR5 grades share: 16 Gb x8 devices, one
// rank, 8 bank groups x 4 banks, 1 KiB pages, BL16 on 32-bit
// sub-channels, all-bank refresh (per sub-channel, each on its own
// schedule) every 3.9 us (normal temperature range) taking tRFC1 = 295 ns
// (JESD79-5 table for 16 Gb; gem5 and Ramulator2 use the same 295 ns,
// Ramulator2's table holding it in ns), the write-side rules tWR = 30 ns,
// tRTP = max(12 nCK, 7.5 ns), tWTR_S = max(4 nCK, 2.5 ns),
// tWTR_L = max(16 nCK, 10 ns) and tCCD_L_WR = max(32 nCK, 20 ns). Eight
// sub-channels a stack (four 2-sub-channel DIMMs) is an assumption sized
// so the DRAM can feed a 128 GiB/s link; a device preset sets its own.
func ddr5Common() Spec {
	return Spec{
		Protocol: DDR5, Channels: 8, Ranks: 1, BankGroups: 8, BanksPerGroup: 4, Rows: 65536, RowBytes: 1024,
		BusBits: 32, BurstLength: 16,
		TRASNS: 32, TRTPNS: 7.5, TWRNS: 30, TCCDLNS: 5, TCCDLWR: 20, TRRDLNS: 5,
		TWTRSNS: 2.5, TWTRLNS: 10, TREFINS: 3900, TRFCNS: 295, CmdTicks: 2,
		PagePolicy: PageOpen, ReadQueue: 64, WriteQueue: 64, WriteHigh: 48, WriteLow: 16,
		Mapping: "ro:ra:ba:bg:co:ch", BankHash: BankHashXOR, FrontendNS: 10,
	}
}

// ddr4Common holds what the DDR4 grades share (JESD79-4B): 8 Gb x8
// devices, eight to a 64-bit rank (8 KiB pages: gem5's DDR4_2400_8x8
// organisation), one rank, 4 bank groups x 4 banks, BL8, all-bank
// refresh every 7.8 us taking tRFC1 = 350 ns (8 Gb), tRAS = 32 ns,
// tWR = 15 ns, tRTP = max(4 nCK, 7.5 ns), tWTR_S = max(2 nCK, 2.5 ns),
// tWTR_L = max(4 nCK, 7.5 ns), and DDR4's tCCD_L also between writes
// (DDR4 has no separate tCCD_L_WR). The controller is the DDR5 grades'.
func ddr4Common() Spec {
	return Spec{
		Protocol: DDR4, Channels: 1, Ranks: 1, BankGroups: 4, BanksPerGroup: 4, Rows: 65536, RowBytes: 8192,
		BusBits: 64, BurstLength: 8,
		TRASNS: 32, TRTPNS: 7.5, TWRNS: 15, TWTRSNS: 2.5, TWTRLNS: 7.5, TREFINS: 7800, TRFCNS: 350, CmdTicks: 1,
		PagePolicy: PageOpen, ReadQueue: 64, WriteQueue: 64, WriteHigh: 48, WriteLow: 16,
		Mapping: "ro:ra:ba:bg:co:ch", BankHash: BankHashXOR, FrontendNS: 10,
	}
}

// grades are the presets, in the order Presets lists them:
//
//   - ddr5-4800: JEDEC JESD79-5 DDR5-4800B (CL40-40-40, tCK 0.416 ns):
//     tCL = tRCD = tRP = 16.667 ns, tCWL = CL-2 = 38 nCK, tRAS = 32 ns,
//     tCCD_S = tRRD_S = 8 nCK, tCCD_L = tRRD_L = max(8 nCK, 5 ns) = 5 ns,
//     tFAW (1 KiB page) = max(32 nCK, 13.333 ns). JEDEC gives tCCD_L in
//     the max(nCK, ns) form; gem5 states the 5 ns, Ramulator2's DDR5-3200
//     table the 8 nCK that 5 ns is at 3200 MT/s. We keep 5 ns, so
//     tCCD_L grows in cycles with the data rate (12 nCK here).
//   - ddr5-6400: JEDEC DDR5-6400B (CL52-52-52, tCK 0.3125 ns):
//     tCL = tRCD = tRP = 16.25 ns, tCWL = 50 nCK, tFAW = 32 nCK = 10 ns,
//     the rest as ddr5-4800.
//   - gem5-ddr5-4400-4x8: gem5's DDR5_4400_4x8 (src/python/gem5/components/
//     memory/dram_interfaces/ddr5.py, from Micron's DDR5 core data sheet):
//     tCK 0.454 ns, tRCD = tCL = tRP = 14.545 ns, tCWL = 13.637 ns,
//     tRAS = 32 ns, tRRD = 3.632 ns, tRRD_L = 5 ns, tXAW = 14.545 ns,
//     tCCD_L = 5 ns, tRFC = 295 ns, tWR = 30 ns, tRTP = 7.5 ns,
//     tREFI = 3.9 us, 64-entry read and write buffers. gem5's tWTR and
//     tWTR_L (16.137 and 23.637 ns) include CWL; we hold JEDEC's
//     end-of-burst form (2.5 and 10 ns) and add tCWL + BL/2 ourselves.
//     gem5 derives tRTW = 2.497 ns; we derive read-to-write from tCL,
//     tCWL and BL the way Ramulator2 does (CL + BL/2 + 2 nCK - CWL).
//     gem5's page policy is close_adaptive; we default to open.
//   - ddr4-3200: JEDEC JESD79-4B DDR4-3200AA (CL22-22-22, tCK 0.625 ns):
//     tCL = tRCD = tRP = 13.75 ns, tCWL = 16 nCK (the lower CWL of the
//     grade), tCCD_S = 4 nCK, tCCD_L = max(5 nCK, 5 ns) = 5 ns,
//     tRRD_S (1 KiB page) = max(4 nCK, 2.5 ns), tRRD_L = max(4 nCK,
//     4.9 ns), tFAW = max(20 nCK, 21 ns), tRTRS 2 nCK; one 64-bit
//     channel (a single DIMM: CXL-DMSim's FPGA device memory).
var grades = []grade{
	{"ddr5-4800", ddr5Common, func(c *Spec) {
		c.DataRateMTs = 4800
		c.TCLNS, c.TRCDNS, c.TRPNS = 16.667, 16.667, 16.667
		c.TCWLNS = 38 * 0.41667
		c.TCCDSNS, c.TRRDSNS = 8*0.41667, 8*0.41667
		c.TFAWNS = 13.333
		c.TRTRSNS = 2 * 0.41667
	}},
	{"ddr5-6400", ddr5Common, func(c *Spec) {
		c.DataRateMTs = 6400
		c.TCLNS, c.TRCDNS, c.TRPNS = 16.25, 16.25, 16.25
		c.TCWLNS = 50 * 0.3125
		c.TCCDSNS, c.TRRDSNS = 8*0.3125, 8*0.3125
		c.TFAWNS = 10
		c.TRTRSNS = 2 * 0.3125
	}},
	{"gem5-ddr5-4400-4x8", ddr5Common, func(c *Spec) {
		c.DataRateMTs = 4400
		c.TCLNS, c.TRCDNS, c.TRPNS = 14.545, 14.545, 14.545
		c.TCWLNS = 13.637
		c.TCCDSNS, c.TRRDSNS = 3.632, 3.632
		c.TFAWNS = 14.545
		c.TRTRSNS = 1 // gem5 tCS
	}},
	{"ddr4-3200", ddr4Common, func(c *Spec) {
		c.DataRateMTs = 3200
		c.TCLNS, c.TRCDNS, c.TRPNS = 13.75, 13.75, 13.75
		c.TCWLNS = 16 * 0.625
		c.TCCDSNS, c.TCCDLNS, c.TCCDLWR = 4*0.625, 5, 5
		c.TRRDSNS, c.TRRDLNS = 2.5, 4.9
		c.TFAWNS = 21
		c.TRTRSNS = 2 * 0.625
	}},
}

// Preset returns the named speed grade (Presets lists them), or a usage
// error listing the names.
func Preset(name string) (Spec, error) {
	for _, g := range grades {
		if g.name == name {
			s := g.base()
			g.set(&s)
			s.Preset = name
			return s, nil
		}
	}
	return Spec{}, usage.Errorf("unknown DRAM preset %q (want %s)", name, strings.Join(Presets(), ", "))
}

// Presets lists the speed grades' names.
func Presets() []string {
	out := make([]string, len(grades))
	for i, g := range grades {
		out[i] = g.name
	}
	return out
}
