package dram

import (
	"strings"

	"github.com/neuronfabric/nfabric/timing/internal/field"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/pflag"
)

// Flags are a Spec's command-line flags: --dram-preset and one flag per
// YAML key, --dram-KEY with '-' for '_' (--dram-t-cl-ns, --dram-channels,
// ...), applied over a spec only when the user sets them.
type Flags struct {
	preset string
	fields *field.Flags
}

// flagHelp is the usage text of each key that has a flag.
var flagHelp = map[string]string{
	"protocol":        "JEDEC technology: ddr5 or ddr4",
	"data_rate_mts":   "transfer rate (MT/s)",
	"channels":        "channels per stack (DDR5: 32-bit sub-channels)",
	"ranks":           "ranks per channel",
	"bank_groups":     "bank groups per rank",
	"banks_per_group": "banks per bank group",
	"rows":            "rows per bank",
	"row_bytes":       "row-buffer bytes per channel",
	"bus_bits":        "channel data bus width (DDR5 32, DDR4 64)",
	"burst_length":    "burst length (DDR5 16, DDR4 8)",
	"t_cl_ns":         "tCL (ns)", "t_cwl_ns": "tCWL (ns)", "t_rcd_ns": "tRCD (ns)", "t_rp_ns": "tRP (ns)",
	"t_ras_ns": "tRAS (ns)", "t_rtp_ns": "tRTP (ns)", "t_wr_ns": "tWR (ns)", "t_ccd_s_ns": "tCCD_S (ns)",
	"t_ccd_l_ns": "tCCD_L (ns)", "t_ccd_l_wr_ns": "tCCD_L_WR (ns)", "t_rrd_s_ns": "tRRD_S (ns)",
	"t_rrd_l_ns": "tRRD_L (ns)", "t_faw_ns": "tFAW (ns; 0 disables the four-activate window)",
	"t_wtr_s_ns": "tWTR_S (ns)", "t_wtr_l_ns": "tWTR_L (ns)", "t_rtrs_ns": "rank-switch spacing (ns)",
	"t_refi_ns": "tREFI (ns; 0 disables refresh)", "t_rfc_ns": "tRFC (ns)",
	"command_cycles": "command-bus cycles per command",
	"page_policy":    "open or closed",
	"read_queue":     "read queue entries per channel",
	"write_queue":    "write queue entries per channel",
	"write_high":     "write-drain high watermark (0: no write drain)",
	"write_low":      "write-drain low watermark",
	"mapping":        "address fields, most significant first (ro:ra:ba:bg:co:ch ...)",
	"bank_hash":      "xor (bank address XOR folded row, as real controllers hash) or none (linear)",
	"refresh_seed":   "0: periodic refresh; n: refresh times dithered within each tREFI slot by seed n",
	"frontend_ns":    "memory controller front-end latency (ns)",
}

// AddFlags registers the flags on fs with def's values as defaults.
func AddFlags(fs *pflag.FlagSet, def Spec) *Flags {
	f := &Flags{}
	fs.StringVar(&f.preset, "dram-preset", def.Preset, "DRAM speed grade: "+strings.Join(Presets(), ", "))
	f.fields = field.Bind(fs, "dram-", &def, flagHelp)
	return f
}

// Apply replaces s by --dram-preset's grade when it was given, then sets
// every field flag the user gave. It returns the flags applied, preset
// included, so that a caller can refuse them where no DRAM is modelled.
func (f *Flags) Apply(fs *pflag.FlagSet, s *Spec) ([]string, error) {
	var set []string
	if fs.Changed("dram-preset") {
		d, err := Preset(f.preset)
		if err != nil {
			return nil, usage.Errorf("--dram-preset: %w", err)
		}
		*s, set = d, append(set, "--dram-preset")
	}
	return append(set, f.fields.Apply(fs, s)...), nil
}
