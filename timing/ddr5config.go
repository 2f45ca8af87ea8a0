package timing

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// DDR5Config describes the DRAM behind each controller stack when
// memory.model is "ddr5": the organisation, the command timing (in
// nanoseconds, converted to whole clock cycles with JEDEC rounding when a
// channel is built), the page policy, the scheduler's queues and the
// address mapping. YAML keys are the snake_case tags; DDR5Preset fills
// every field from a named speed bin.
//
// Units: every t_*_ns value is a time in ns, the way gem5 states them.
// Ramulator2 gives the same constraints in clock cycles (nCL, nCCDL, ...)
// except tRFC and tREFI, which its tables hold in ns; Akita holds all of
// them in cycles. We keep ns in the configuration and convert once, so a
// preset's source can be checked line by line, and the cycle counts that
// the model really uses are printed by 'nfabric timing config'.
type DDR5Config struct {
	// Preset names the speed bin the other fields came from (informative
	// once decoded; experiments.DecodeTimingSetup starts from it).
	Preset string `yaml:"preset" json:"preset"`
	// DataRateMTs is the transfer rate; the clock is half of it
	// (tCK = 2000 / rate ns, rounded to a picosecond).
	DataRateMTs int `yaml:"data_rate_mts" json:"data_rate_mts"`
	// Channels is the number of independent 32-bit DDR5 sub-channels per
	// controller stack (each with its own command and data bus; a DIMM has
	// two). Lines are spread over them by the address mapping.
	Channels int `yaml:"channels" json:"channels"`
	// Ranks per channel, BankGroups per rank, BanksPerGroup per group.
	Ranks         int `yaml:"ranks" json:"ranks"`
	BankGroups    int `yaml:"bank_groups" json:"bank_groups"`
	BanksPerGroup int `yaml:"banks_per_group" json:"banks_per_group"`
	// Rows per bank; RowBytes is the row-buffer (page) size of one
	// sub-channel (four x8 devices x 256 B = 1 KiB).
	Rows     int `yaml:"rows" json:"rows"`
	RowBytes int `yaml:"row_bytes" json:"row_bytes"`
	// BurstLength is 16 beats on a 32-bit sub-channel: one 64-byte line
	// per burst, BL/2 = 8 clock cycles on the data bus.
	BurstLength int `yaml:"burst_length" json:"burst_length"`

	TCLNS    float64 `yaml:"t_cl_ns" json:"t_cl_ns"`
	TCWLNS   float64 `yaml:"t_cwl_ns" json:"t_cwl_ns"`
	TRCDNS   float64 `yaml:"t_rcd_ns" json:"t_rcd_ns"`
	TRPNS    float64 `yaml:"t_rp_ns" json:"t_rp_ns"`
	TRASNS   float64 `yaml:"t_ras_ns" json:"t_ras_ns"`
	TRTPNS   float64 `yaml:"t_rtp_ns" json:"t_rtp_ns"`
	TWRNS    float64 `yaml:"t_wr_ns" json:"t_wr_ns"`
	TCCDSNS  float64 `yaml:"t_ccd_s_ns" json:"t_ccd_s_ns"`
	TCCDLNS  float64 `yaml:"t_ccd_l_ns" json:"t_ccd_l_ns"`
	TCCDLWR  float64 `yaml:"t_ccd_l_wr_ns" json:"t_ccd_l_wr_ns"`
	TRRDSNS  float64 `yaml:"t_rrd_s_ns" json:"t_rrd_s_ns"`
	TRRDLNS  float64 `yaml:"t_rrd_l_ns" json:"t_rrd_l_ns"`
	TFAWNS   float64 `yaml:"t_faw_ns" json:"t_faw_ns"`
	TWTRSNS  float64 `yaml:"t_wtr_s_ns" json:"t_wtr_s_ns"`
	TWTRLNS  float64 `yaml:"t_wtr_l_ns" json:"t_wtr_l_ns"`
	TRTRSNS  float64 `yaml:"t_rtrs_ns" json:"t_rtrs_ns"`
	TREFINS  float64 `yaml:"t_refi_ns" json:"t_refi_ns"`
	TRFCNS   float64 `yaml:"t_rfc_ns" json:"t_rfc_ns"`
	CmdTicks int     `yaml:"command_cycles" json:"command_cycles"`

	// PagePolicy is "open" (rows stay open until a conflict or refresh
	// closes them) or "closed" (every column command auto-precharges).
	PagePolicy string `yaml:"page_policy" json:"page_policy"`
	// ReadQueue and WriteQueue are each channel's scheduler queue
	// capacities; WriteHigh / WriteLow are the write-drain watermarks (the
	// scheduler turns to writes at WriteHigh queued writes, or when no read
	// waits, and back to reads at WriteLow). WriteHigh 0 turns write drain
	// off: reads and writes are then scheduled together, first ready
	// first (the order of Akita's single command queue).
	ReadQueue  int `yaml:"read_queue" json:"read_queue"`
	WriteQueue int `yaml:"write_queue" json:"write_queue"`
	WriteHigh  int `yaml:"write_high" json:"write_high"`
	WriteLow   int `yaml:"write_low" json:"write_low"`
	// Mapping lists the address fields from the most to the least
	// significant bit above the 64-byte line offset, separated by ':'
	// (ro row, ra rank, bg bank group, ba bank, co column, ch channel).
	Mapping string `yaml:"mapping" json:"mapping"`
	// BankHash is "xor" or "none". Under "xor" the bank address (bank
	// group and bank, bank group in the high bits) is XORed with the row
	// number folded to its width (the XOR of all its bank-width chunks):
	// permutation-based page interleaving (Zhang, Zhu and Zhang, MICRO
	// 2000), the kind of XOR bank function Intel and AMD controllers use
	// (Pessl et al., DRAMA, USENIX Security 2016). Rows that a linear
	// mapping puts in one bank spread over the banks, so streams that walk
	// regions at row-aligned strides (Table 4's W sweeps over
	// power-of-two footprints) do not conflict in one bank in lockstep; a
	// stream's own row-buffer locality is unchanged (a row keeps all its
	// columns). "none" is the linear mapping (Akita's, gem5's).
	BankHash string `yaml:"bank_hash" json:"bank_hash"`
	// RefreshSeed 0 (the default) issues each sub-channel's all-bank
	// refresh strictly every tREFI (staggered across the stack's
	// sub-channels). Any other value draws each REF's due time from a
	// point of its own tREFI slot (Channel.refreshAt): the same rate, no
	// strict period. A strictly periodic chain of requests (one stream,
	// one outstanding read) phase-locks onto a strictly periodic refresh,
	// and the identity and low-bit runs of a pair, whose periods differ
	// by the datapath, lock differently; RunRefreshPhasedPair averages a
	// pair over seeds. The replay's calibration needs the periodic
	// schedule (seed 0).
	RefreshSeed uint64 `yaml:"refresh_seed" json:"refresh_seed,omitempty"`
	// FrontendNS is the controller front end's fixed latency (request
	// decode and response formatting), paid once per access. Assumption:
	// 10 ns.
	FrontendNS float64 `yaml:"frontend_ns" json:"frontend_ns"`
}

// DDR5Config.BankHash values.
const (
	BankHashNone = "none"
	BankHashXOR  = "xor"
)

// DDR5 preset names.
const (
	PresetDDR5_4800 = "ddr5-4800"
	PresetDDR5_6400 = "ddr5-6400"
	PresetGem5_4400 = "gem5-ddr5-4400-4x8"
)

// ddr5Common holds what the presets share: 16 Gb x8 devices, one rank,
// 8 bank groups x 4 banks, 1 KiB pages, BL16, all-bank refresh (per
// sub-channel, each on its own schedule) every 3.9 us (normal temperature range) taking tRFC1 = 295 ns (JESD79-5
// table for 16 Gb; gem5 and Ramulator2 use the same 295 ns, Ramulator2's
// table holding it in ns), the write-side rules tWR = 30 ns,
// tRTP = max(12 nCK, 7.5 ns), tWTR_S = max(4 nCK, 2.5 ns),
// tWTR_L = max(16 nCK, 10 ns) and tCCD_L_WR = max(32 nCK, 20 ns).
func ddr5Common() DDR5Config {
	return DDR5Config{
		Channels: 8, Ranks: 1, BankGroups: 8, BanksPerGroup: 4, Rows: 65536, RowBytes: 1024, BurstLength: 16,
		TRASNS: 32, TRTPNS: 7.5, TWRNS: 30, TCCDLNS: 5, TCCDLWR: 20, TRRDLNS: 5,
		TWTRSNS: 2.5, TWTRLNS: 10, TREFINS: 3900, TRFCNS: 295, CmdTicks: 2,
		PagePolicy: "open", ReadQueue: 64, WriteQueue: 64, WriteHigh: 48, WriteLow: 16,
		Mapping: "ro:ra:ba:bg:co:ch", BankHash: BankHashXOR, FrontendNS: 10,
	}
}

// DDR5Preset returns a named preset:
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
//
// Every preset uses 8 sub-channels per stack (four 2-sub-channel DIMMs),
// an assumption sized so the DRAM can feed a 128 GiB/s link.
func DDR5Preset(name string) (DDR5Config, error) {
	c := ddr5Common()
	c.Preset = name
	switch name {
	case PresetDDR5_4800:
		c.DataRateMTs = 4800
		c.TCLNS, c.TRCDNS, c.TRPNS = 16.667, 16.667, 16.667
		c.TCWLNS = 38 * 0.41667
		c.TCCDSNS, c.TRRDSNS = 8*0.41667, 8*0.41667
		c.TFAWNS = 13.333
		c.TRTRSNS = 2 * 0.41667
	case PresetDDR5_6400:
		c.DataRateMTs = 6400
		c.TCLNS, c.TRCDNS, c.TRPNS = 16.25, 16.25, 16.25
		c.TCWLNS = 50 * 0.3125
		c.TCCDSNS, c.TRRDSNS = 8*0.3125, 8*0.3125
		c.TFAWNS = 10
		c.TRTRSNS = 2 * 0.3125
	case PresetGem5_4400:
		c.DataRateMTs = 4400
		c.TCLNS, c.TRCDNS, c.TRPNS = 14.545, 14.545, 14.545
		c.TCWLNS = 13.637
		c.TCCDSNS, c.TRRDSNS = 3.632, 3.632
		c.TFAWNS = 14.545
		c.TRTRSNS = 1 // gem5 tCS
	default:
		return DDR5Config{}, fmt.Errorf("unknown DDR5 preset %q (want %s)", name, strings.Join(DDR5Presets(), ", "))
	}
	return c, nil
}

// DDR5Presets lists the preset names.
func DDR5Presets() []string { return []string{PresetDDR5_4800, PresetDDR5_6400, PresetGem5_4400} }

// RefreshIntervalPS returns tREFI as the channel uses it (whole cycles
// of tCK; 0 when refresh is off): the period after which a DDR5 channel's
// refresh schedule and clock grid repeat in absolute time.
func (d DDR5Config) RefreshIntervalPS() Time { return Time(d.cycles(d.TREFINS)) * d.ClockPS() }

// ClockPS returns tCK in picoseconds: 2e6 / data rate, rounded.
func (d DDR5Config) ClockPS() Time { return Time(math.Round(2e6 / float64(d.DataRateMTs))) }

// cycles converts ns to whole clock cycles with JEDEC-style rounding:
// ceil(t / tCK) after forgiving a 1% overshoot of the nominal value
// (JESD79-5's rounding algorithm uses a 0.3% guard band; we round tCK
// itself to a picosecond, so a slightly wider guard keeps 16.667 ns at
// 40 cycles of 0.417 ns).
func (d DDR5Config) cycles(ns float64) int64 {
	if ns <= 0 {
		return 0
	}
	return int64(math.Ceil(ns*1000/float64(d.ClockPS()) - 0.01))
}

// mappingFields are the names Mapping may use.
var mappingFields = []string{"ro", "ra", "bg", "ba", "co", "ch"}

func isPow2(v int) bool { return v > 0 && v&(v-1) == 0 }

// Validate returns an error naming the first invalid field (YAML path
// below memory.ddr5).
func (d DDR5Config) Validate() error {
	if err := checkInt("data_rate_mts", d.DataRateMTs, 800, 12800); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
		hi   int
	}{{"channels", d.Channels, 64}, {"ranks", d.Ranks, 16}, {"bank_groups", d.BankGroups, 16},
		{"banks_per_group", d.BanksPerGroup, 16}, {"rows", d.Rows, 1 << 20}, {"row_bytes", d.RowBytes, 1 << 16}} {
		if !isPow2(f.v) || f.v > f.hi {
			return fmt.Errorf("%s: must be a power of two in [1, %d], got %d", f.name, f.hi, f.v)
		}
	}
	if d.RowBytes < LineBytes {
		return fmt.Errorf("row_bytes: must be at least one 64-byte line, got %d", d.RowBytes)
	}
	if d.BurstLength != 16 {
		return fmt.Errorf("burst_length: DDR5 on a 32-bit sub-channel moves a 64-byte line in BL16; got %d", d.BurstLength)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"t_cl_ns", d.TCLNS}, {"t_cwl_ns", d.TCWLNS}, {"t_rcd_ns", d.TRCDNS}, {"t_rp_ns", d.TRPNS},
		{"t_ras_ns", d.TRASNS}, {"t_rtp_ns", d.TRTPNS}, {"t_wr_ns", d.TWRNS}, {"t_ccd_s_ns", d.TCCDSNS},
		{"t_ccd_l_ns", d.TCCDLNS}, {"t_ccd_l_wr_ns", d.TCCDLWR}, {"t_rrd_s_ns", d.TRRDSNS}, {"t_rrd_l_ns", d.TRRDLNS},
		{"t_faw_ns", d.TFAWNS}, {"t_wtr_s_ns", d.TWTRSNS}, {"t_wtr_l_ns", d.TWTRLNS}, {"t_rtrs_ns", d.TRTRSNS},
		{"t_refi_ns", d.TREFINS}, {"t_rfc_ns", d.TRFCNS}, {"frontend_ns", d.FrontendNS}} {
		if err := checkRange(f.name, f.v, 0, 1e6); err != nil {
			return err
		}
	}
	if d.TCLNS <= 0 || d.TRCDNS <= 0 || d.TRPNS <= 0 {
		return fmt.Errorf("t_cl_ns, t_rcd_ns, t_rp_ns: must be > 0")
	}
	if d.TREFINS > 0 && d.TRFCNS >= d.TREFINS {
		return fmt.Errorf("t_rfc_ns: %g must be below t_refi_ns %g (0 disables refresh)", d.TRFCNS, d.TREFINS)
	}
	if d.CWLCycles() > d.CLCycles() {
		return fmt.Errorf("t_cwl_ns: %g above t_cl_ns %g", d.TCWLNS, d.TCLNS)
	}
	if err := checkInt("command_cycles", d.CmdTicks, 1, 8); err != nil {
		return err
	}
	if d.PagePolicy != "open" && d.PagePolicy != "closed" {
		return fmt.Errorf("page_policy: want open or closed, got %q", d.PagePolicy)
	}
	if err := checkInt("read_queue", d.ReadQueue, 1, 4096); err != nil {
		return err
	}
	if err := checkInt("write_queue", d.WriteQueue, 1, 4096); err != nil {
		return err
	}
	if err := checkInt("write_high", d.WriteHigh, 0, d.WriteQueue); err != nil {
		return err
	}
	if err := checkInt("write_low", d.WriteLow, 0, max(d.WriteHigh-1, 0)); err != nil {
		return err
	}
	if _, err := parseMapping(d.Mapping); err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	if d.BankHash != BankHashNone && d.BankHash != BankHashXOR {
		return fmt.Errorf("bank_hash: want %s or %s, got %q", BankHashXOR, BankHashNone, d.BankHash)
	}
	return nil
}

// CLCycles and the other accessors return a timing in whole clock
// cycles, the values the channel model uses.
func (d DDR5Config) CLCycles() int64 { return d.cycles(d.TCLNS) }

// CWLCycles returns tCWL in cycles.
func (d DDR5Config) CWLCycles() int64 { return d.cycles(d.TCWLNS) }

// BurstCycles returns BL/2, the data-bus cycles of one burst.
func (d DDR5Config) BurstCycles() int64 { return int64(d.BurstLength / 2) }

// parseMapping checks that m names each field exactly once and returns
// them from the most significant down.
func parseMapping(m string) ([]string, error) {
	fs := strings.Split(m, ":")
	seen := map[string]bool{}
	for _, f := range fs {
		if !contains(mappingFields, f) {
			return nil, fmt.Errorf("unknown field %q in %q (want a permutation of %s)", f, m, strings.Join(mappingFields, ":"))
		}
		if seen[f] {
			return nil, fmt.Errorf("field %q twice in %q", f, m)
		}
		seen[f] = true
	}
	if len(seen) != len(mappingFields) {
		var miss []string
		for _, f := range mappingFields {
			if !seen[f] {
				miss = append(miss, f)
			}
		}
		sort.Strings(miss)
		return nil, fmt.Errorf("%q lacks %s", m, strings.Join(miss, ", "))
	}
	return fs, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
