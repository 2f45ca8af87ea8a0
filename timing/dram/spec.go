package dram

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/internal/field"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/usage"
)

// Spec describes the DRAM behind one controller stack: the JEDEC
// technology and speed grade (Protocol, the organisation, the command
// timing in nanoseconds, converted to whole clock cycles with JEDEC
// rounding when a channel is built) and the memory controller in front of
// it (page policy, scheduler queues, address mapping, refresh schedule,
// front-end latency). YAML keys are the snake_case tags; Preset fills
// every field from a named speed grade, and a YAML block that names a
// preset starts from it (see UnmarshalYAML).
//
// One Spec type holds every technology, as Akita's mem/dram keeps one
// model with a Protocol field: a new speed grade or technology is a
// preset value (presets.go), not a new type. The channel model is the
// same for DDR4 and DDR5; the protocols differ in their values (bus
// width and burst length, bank groups, timings, refresh), which Validate
// checks are consistent.
//
// Units: every t_*_ns value is a time in ns, the way gem5 states them.
// Ramulator2 gives the same constraints in clock cycles (nCL, nCCDL, ...)
// except tRFC and tREFI, which its tables hold in ns; Akita holds all of
// them in cycles. We keep ns in the configuration and convert once, so a
// preset's source can be checked line by line, and the cycle counts that
// the model really uses are printed by 'nfabric timing presets'.
type Spec struct {
	// Preset names the speed grade the other fields came from: a YAML
	// block that names one starts from it.
	Preset string `yaml:"preset" json:"preset"`
	// Protocol is the JEDEC technology: ddr5 (JESD79-5: 32-bit
	// sub-channels, BL16) or ddr4 (JESD79-4: 64-bit channels, BL8).
	Protocol string `yaml:"protocol" json:"protocol"`
	// DataRateMTs is the transfer rate; the clock is half of it
	// (tCK = 2000 / rate ns, rounded to a picosecond).
	DataRateMTs int `yaml:"data_rate_mts" json:"data_rate_mts"`
	// Channels is the number of independent channels per controller stack
	// (DDR5: 32-bit sub-channels, two a DIMM; DDR4: 64-bit channels), each
	// with its own command and data bus. Lines are spread over them by the
	// address mapping.
	Channels int `yaml:"channels" json:"channels"`
	// Ranks per channel, BankGroups per rank, BanksPerGroup per group.
	Ranks         int `yaml:"ranks" json:"ranks"`
	BankGroups    int `yaml:"bank_groups" json:"bank_groups"`
	BanksPerGroup int `yaml:"banks_per_group" json:"banks_per_group"`
	// Rows per bank; RowBytes is the row-buffer (page) size of one
	// channel.
	Rows     int `yaml:"rows" json:"rows"`
	RowBytes int `yaml:"row_bytes" json:"row_bytes"`
	// BusBits is a channel's data bus width and BurstLength its burst:
	// BusBits x BurstLength / 8 is one 64-byte line, which takes
	// BurstLength/2 clock cycles on the data bus (DDR5: 32 x 16, DDR4:
	// 64 x 8).
	BusBits     int `yaml:"bus_bits" json:"bus_bits"`
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
	// by the datapath, lock differently, so a pair under seed 0 reports
	// where refresh fell, not the datapath (timing's
	// memory.refresh_phases averages pairs over seeds 1..n).
	RefreshSeed uint64 `yaml:"refresh_seed" json:"refresh_seed,omitempty"`
	// FrontendNS is the memory controller front end's fixed latency
	// (request decode and response formatting), paid once per access.
	// Assumption: 10 ns (gem5's MemCtrl static front-end latency).
	FrontendNS float64 `yaml:"frontend_ns" json:"frontend_ns"`
}

// Spec.BankHash, Spec.PagePolicy and Spec.Protocol values.
const (
	BankHashNone = "none"
	BankHashXOR  = "xor"
	PageOpen     = "open"
	PageClosed   = "closed"
	DDR4         = "ddr4"
	DDR5         = "ddr5"
)

// RefreshInterval returns tREFI as the channel uses it (whole cycles of
// tCK; 0 when refresh is off): the period after which a channel's refresh
// schedule and clock grid repeat in absolute time.
func (d Spec) RefreshInterval() sim.Time { return sim.Time(d.Cycles(d.TREFINS)) * d.Clock() }

// Clock returns tCK: 2e6 / data rate picoseconds, rounded.
func (d Spec) Clock() sim.Time { return sim.Time(math.Round(2e6 / float64(d.DataRateMTs))) }

// Cycles converts ns to whole clock cycles with JEDEC-style rounding:
// ceil(t / tCK) after forgiving a 1% overshoot of the nominal value
// (JESD79-5's rounding algorithm uses a 0.3% guard band; we round tCK
// itself to a picosecond, so a slightly wider guard keeps 16.667 ns at
// 40 cycles of 0.417 ns). 0 for ns <= 0.
func (d Spec) Cycles(ns float64) int64 {
	if ns <= 0 {
		return 0
	}
	return int64(math.Ceil(ns*1000/float64(d.Clock()) - 0.01))
}

// BurstCycles returns BL/2, the data-bus cycles of one burst.
func (d Spec) BurstCycles() int64 { return int64(d.BurstLength / 2) }

// PeakGBps returns one channel's peak data rate (one burst after
// another), times the channels, in GB/s: DataRateMTs x BusBits / 8 per
// channel.
func (d Spec) PeakGBps() float64 {
	return float64(d.DataRateMTs) * 1e6 * float64(d.BusBits) / 8 * float64(d.Channels) / 1e9
}

// mappingFields are the names Mapping may use.
var mappingFields = []string{"ro", "ra", "bg", "ba", "co", "ch"}

func isPow2(v int) bool { return v > 0 && v&(v-1) == 0 }

// Validate returns a usage error naming the first invalid field (its
// YAML key below the DRAM block).
func (d Spec) Validate() error {
	if err := field.OneOf("protocol", d.Protocol, DDR5, DDR4); err != nil {
		return err
	}
	if err := field.Int("data_rate_mts", d.DataRateMTs, 800, 12800); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    int
		hi   int
	}{{"channels", d.Channels, 64}, {"ranks", d.Ranks, 16}, {"bank_groups", d.BankGroups, 16},
		{"banks_per_group", d.BanksPerGroup, 16}, {"rows", d.Rows, 1 << 20}, {"row_bytes", d.RowBytes, 1 << 16}} {
		if !isPow2(f.v) || f.v > f.hi {
			return usage.Errorf("%s: must be a power of two in [1, %d], got %d", f.name, f.hi, f.v)
		}
	}
	if d.RowBytes < lowbit.LineBytes {
		return usage.Errorf("row_bytes: must be at least one 64-byte line, got %d", d.RowBytes)
	}
	want := map[string][2]int{DDR5: {32, 16}, DDR4: {64, 8}}[d.Protocol]
	if d.BusBits != want[0] {
		return usage.Errorf("bus_bits: %s channels are %d bits wide, got %d", d.Protocol, want[0], d.BusBits)
	}
	if d.BurstLength != want[1] {
		return usage.Errorf("burst_length: %s moves a 64-byte line on a %d-bit channel in BL%d, got %d", d.Protocol, want[0], want[1], d.BurstLength)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"t_cl_ns", d.TCLNS}, {"t_cwl_ns", d.TCWLNS}, {"t_rcd_ns", d.TRCDNS}, {"t_rp_ns", d.TRPNS},
		{"t_ras_ns", d.TRASNS}, {"t_rtp_ns", d.TRTPNS}, {"t_wr_ns", d.TWRNS}, {"t_ccd_s_ns", d.TCCDSNS},
		{"t_ccd_l_ns", d.TCCDLNS}, {"t_ccd_l_wr_ns", d.TCCDLWR}, {"t_rrd_s_ns", d.TRRDSNS}, {"t_rrd_l_ns", d.TRRDLNS},
		{"t_faw_ns", d.TFAWNS}, {"t_wtr_s_ns", d.TWTRSNS}, {"t_wtr_l_ns", d.TWTRLNS}, {"t_rtrs_ns", d.TRTRSNS},
		{"t_refi_ns", d.TREFINS}, {"t_rfc_ns", d.TRFCNS}, {"frontend_ns", d.FrontendNS}} {
		if err := field.Float(f.name, f.v, 0, 1e6); err != nil {
			return err
		}
	}
	if d.TCLNS <= 0 || d.TRCDNS <= 0 || d.TRPNS <= 0 {
		return usage.Errorf("t_cl_ns, t_rcd_ns, t_rp_ns: must be > 0")
	}
	if d.TREFINS > 0 && d.TRFCNS >= d.TREFINS {
		return usage.Errorf("t_rfc_ns: %g must be below t_refi_ns %g (0 disables refresh)", d.TRFCNS, d.TREFINS)
	}
	if d.Cycles(d.TCWLNS) > d.Cycles(d.TCLNS) {
		return usage.Errorf("t_cwl_ns: %g above t_cl_ns %g", d.TCWLNS, d.TCLNS)
	}
	if err := field.Int("command_cycles", d.CmdTicks, 1, 8); err != nil {
		return err
	}
	if err := field.OneOf("page_policy", d.PagePolicy, PageOpen, PageClosed); err != nil {
		return err
	}
	if err := field.Int("read_queue", d.ReadQueue, 1, 4096); err != nil {
		return err
	}
	if err := field.Int("write_queue", d.WriteQueue, 1, 4096); err != nil {
		return err
	}
	if err := field.Int("write_high", d.WriteHigh, 0, d.WriteQueue); err != nil {
		return err
	}
	if err := field.Int("write_low", d.WriteLow, 0, max(d.WriteHigh-1, 0)); err != nil {
		return err
	}
	if _, err := parseMapping(d.Mapping); err != nil {
		return usage.Errorf("mapping: %w", err)
	}
	return field.OneOf("bank_hash", d.BankHash, BankHashXOR, BankHashNone)
}

// parseMapping checks that m names each field exactly once and returns
// them from the most significant down.
func parseMapping(m string) ([]string, error) {
	fs := strings.Split(m, ":")
	seen := map[string]bool{}
	for _, f := range fs {
		if indexOf(mappingFields, f) < 0 {
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

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
