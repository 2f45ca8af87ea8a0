package main

import (
	"strings"

	"github.com/neuronfabric/nfabric/timing"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// modelFlags are the flags of the detailed models (memory.ddr5.*,
// link.cxl.*, the model and preset selectors): one flag per YAML key,
// applied after --config and only when set.
type modelFlags struct {
	memory, link, dramPreset, cxlPreset string
	late                                []func(m *timing.Config)
	changed                             []string
}

func (mf *modelFlags) add(f *pflag.FlagSet) {
	d := timing.DefaultConfig()
	f.StringVar(&mf.memory, "memory", d.Memory.Model, "memory model: ideal (the paper's fixed latency) or ddr5 (implies --link cxl unless --link is given)")
	f.StringVar(&mf.link, "link", d.Link.Model, "link model: auto, gate (one bandwidth gate) or cxl (two-way flit link)")
	f.StringVar(&mf.dramPreset, "dram-preset", d.Memory.DDR5.Preset, "DDR5 preset: "+strings.Join(timing.DDR5Presets(), ", "))
	f.StringVar(&mf.cxlPreset, "cxl-preset", d.Link.CXL.Preset, "CXL link preset: "+strings.Join(timing.CXLPresets(), ", "))
	b := flagBinder{mf: mf, f: f, d: &d}
	b.ddr5()
	b.cxl()
}

// flagBinder registers one timing.Config field per flag: the default is
// the field's value in d, and the value is applied late (after the
// presets) when the user set it.
type flagBinder struct {
	mf *modelFlags
	f  *pflag.FlagSet
	d  *timing.Config
}

func (b flagBinder) float(name, usage string, get func(*timing.Config) *float64) {
	p := b.f.Float64(name, *get(b.d), usage)
	b.mf.changed = append(b.mf.changed, name)
	b.mf.late = append(b.mf.late, func(m *timing.Config) { *get(m) = *p })
}

func (b flagBinder) int(name, usage string, get func(*timing.Config) *int) {
	p := b.f.Int(name, *get(b.d), usage)
	b.mf.changed = append(b.mf.changed, name)
	b.mf.late = append(b.mf.late, func(m *timing.Config) { *get(m) = *p })
}

func (b flagBinder) str(name, usage string, get func(*timing.Config) *string) {
	p := b.f.String(name, *get(b.d), usage)
	b.mf.changed = append(b.mf.changed, name)
	b.mf.late = append(b.mf.late, func(m *timing.Config) { *get(m) = *p })
}

// ddr5 registers the DDR5 model's flags.
func (b flagBinder) ddr5() {
	r := func(m *timing.Config) *timing.DDR5Config { return &m.Memory.DDR5 }
	b.int("ddr5-data-rate-mts", "DDR5 transfer rate (MT/s)", func(m *timing.Config) *int { return &r(m).DataRateMTs })
	b.int("ddr5-channels", "DDR5 sub-channels per stack", func(m *timing.Config) *int { return &r(m).Channels })
	b.int("ddr5-ranks", "ranks per sub-channel", func(m *timing.Config) *int { return &r(m).Ranks })
	b.int("ddr5-bank-groups", "bank groups per rank", func(m *timing.Config) *int { return &r(m).BankGroups })
	b.int("ddr5-banks-per-group", "banks per bank group", func(m *timing.Config) *int { return &r(m).BanksPerGroup })
	b.int("ddr5-rows", "rows per bank", func(m *timing.Config) *int { return &r(m).Rows })
	b.int("ddr5-row-bytes", "row-buffer bytes per sub-channel", func(m *timing.Config) *int { return &r(m).RowBytes })
	b.int("ddr5-burst-length", "burst length (16)", func(m *timing.Config) *int { return &r(m).BurstLength })
	for _, t := range []struct {
		key string
		get func(*timing.DDR5Config) *float64
	}{
		{"t-cl-ns", func(d *timing.DDR5Config) *float64 { return &d.TCLNS }},
		{"t-cwl-ns", func(d *timing.DDR5Config) *float64 { return &d.TCWLNS }},
		{"t-rcd-ns", func(d *timing.DDR5Config) *float64 { return &d.TRCDNS }},
		{"t-rp-ns", func(d *timing.DDR5Config) *float64 { return &d.TRPNS }},
		{"t-ras-ns", func(d *timing.DDR5Config) *float64 { return &d.TRASNS }},
		{"t-rtp-ns", func(d *timing.DDR5Config) *float64 { return &d.TRTPNS }},
		{"t-wr-ns", func(d *timing.DDR5Config) *float64 { return &d.TWRNS }},
		{"t-ccd-s-ns", func(d *timing.DDR5Config) *float64 { return &d.TCCDSNS }},
		{"t-ccd-l-ns", func(d *timing.DDR5Config) *float64 { return &d.TCCDLNS }},
		{"t-ccd-l-wr-ns", func(d *timing.DDR5Config) *float64 { return &d.TCCDLWR }},
		{"t-rrd-s-ns", func(d *timing.DDR5Config) *float64 { return &d.TRRDSNS }},
		{"t-rrd-l-ns", func(d *timing.DDR5Config) *float64 { return &d.TRRDLNS }},
		{"t-faw-ns", func(d *timing.DDR5Config) *float64 { return &d.TFAWNS }},
		{"t-wtr-s-ns", func(d *timing.DDR5Config) *float64 { return &d.TWTRSNS }},
		{"t-wtr-l-ns", func(d *timing.DDR5Config) *float64 { return &d.TWTRLNS }},
		{"t-rtrs-ns", func(d *timing.DDR5Config) *float64 { return &d.TRTRSNS }},
		{"t-refi-ns", func(d *timing.DDR5Config) *float64 { return &d.TREFINS }},
		{"t-rfc-ns", func(d *timing.DDR5Config) *float64 { return &d.TRFCNS }},
		{"frontend-ns", func(d *timing.DDR5Config) *float64 { return &d.FrontendNS }},
	} {
		get := t.get
		unit := map[string]string{"t-refi-ns": "ns; 0 disables refresh", "t-faw-ns": "ns; 0 disables the four-activate window"}[t.key]
		if unit == "" {
			unit = "ns"
		}
		b.float("ddr5-"+t.key, "DDR5 "+strings.TrimSuffix(t.key, "-ns")+" ("+unit+")", func(m *timing.Config) *float64 { return get(r(m)) })
	}
	b.int("ddr5-command-cycles", "command-bus cycles per command", func(m *timing.Config) *int { return &r(m).CmdTicks })
	b.str("ddr5-page-policy", "open or closed", func(m *timing.Config) *string { return &r(m).PagePolicy })
	b.int("ddr5-read-queue", "read queue entries per channel", func(m *timing.Config) *int { return &r(m).ReadQueue })
	b.int("ddr5-write-queue", "write queue entries per channel", func(m *timing.Config) *int { return &r(m).WriteQueue })
	b.int("ddr5-write-high", "write-drain high watermark (0: no write drain)", func(m *timing.Config) *int { return &r(m).WriteHigh })
	b.int("ddr5-write-low", "write-drain low watermark", func(m *timing.Config) *int { return &r(m).WriteLow })
	b.str("ddr5-mapping", "address fields, most significant first (ro:ra:ba:bg:co:ch ...)", func(m *timing.Config) *string { return &r(m).Mapping })
	b.str("ddr5-bank-hash", "xor (bank address XOR folded row, as real controllers hash) or none (linear)", func(m *timing.Config) *string { return &r(m).BankHash })
	b.int("ddr5-refresh-phases", "refresh schedules each identity/low-bit pair is averaged over (dithered, refresh_seed 1..N): an exposure that does not depend on where refresh falls; 0: one pair under the periodic schedule", func(m *timing.Config) *int { return &r(m).RefreshPhases })
}

// cxl registers the CXL link's flags.
func (b flagBinder) cxl() {
	x := func(m *timing.Config) *timing.CXLConfig { return &m.Link.CXL }
	b.float("cxl-transfer-gtps", "CXL/PCIe transfer rate per lane (GT/s)", func(m *timing.Config) *float64 { return &x(m).TransferGTps })
	b.int("cxl-lanes", "CXL link lanes", func(m *timing.Config) *int { return &x(m).Lanes })
	b.float("cxl-encoding-efficiency", "line-code efficiency (128/130 for PCIe 5.0, 1 in FLIT mode)", func(m *timing.Config) *float64 { return &x(m).EncodingEfficiency })
	b.int("cxl-flit-bytes", "flit size: 68 (CXL 2.0) or 256 (CXL 3.x)", func(m *timing.Config) *int { return &x(m).FlitBytes })
	b.int("cxl-headers-per-slot", "CXL.mem headers per 16-byte slot (1, 2, 4)", func(m *timing.Config) *int { return &x(m).HeadersPerSlot })
	b.float("cxl-port-latency-ns", "one-way port/bridge latency (ns)", func(m *timing.Config) *float64 { return &x(m).PortLatencyNS })
	b.int("cxl-request-credits", "device ingress entries (host request credits)", func(m *timing.Config) *int { return &x(m).RequestCredits })
	b.int("cxl-response-queue", "device response-queue entries", func(m *timing.Config) *int { return &x(m).ResponseQueue })
}

// apply sets the selectors and presets, then every flag the user set, on
// m (already read from --config).
func (mf *modelFlags) apply(fl *pflag.FlagSet, m *timing.Config) error {
	if fl.Changed("dram-preset") {
		d, err := timing.DDR5Preset(mf.dramPreset)
		if err != nil {
			return usagef("--dram-preset: %v", err)
		}
		m.Memory.DDR5 = d
	}
	if fl.Changed("cxl-preset") {
		x, err := timing.CXLPreset(mf.cxlPreset)
		if err != nil {
			return usagef("--cxl-preset: %v", err)
		}
		m.Link.CXL = x
	}
	if fl.Changed("memory") {
		m.Memory.Model = mf.memory
	}
	if fl.Changed("link") {
		m.Link.Model = mf.link
	}
	for i, name := range mf.changed {
		if fl.Changed(name) {
			mf.late[i](m)
		}
	}
	// DDR5 settings under the ideal memory would be ignored without a
	// word: a usage error (issue 25, item 11).
	if m.Memory.Model == "ideal" {
		var ddr5 []string
		fl.Visit(func(f *pflag.Flag) {
			if f.Name == "dram-preset" || strings.HasPrefix(f.Name, "ddr5-") || strings.HasPrefix(f.Name, "t-") {
				ddr5 = append(ddr5, "--"+f.Name)
			}
		})
		if len(ddr5) > 0 {
			return usagef("%s: DDR5 settings do not apply to --memory ideal (give --memory ddr5)", strings.Join(ddr5, ", "))
		}
	}
	return nil
}

func newTimingPresetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "presets",
		Short: "list the model, DDR5 and CXL presets with the values they set (cycles included)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return timing.DescribePresets(cmd.OutOrStdout())
		},
	}
}
