package cxldev

import (
	"strings"

	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/timing/internal/field"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/pflag"
)

// Flags are a device's command-line flags: --cxl-device (a preset),
// --cxl-link (a link preset), one flag per link key (--cxl-lanes, ...),
// per host stage (--host-fabric-ns, ...), per device stage and queue
// (--device-protocol-ns, --device-request-queue, ...) and the media's
// DRAM flags (dram.AddFlags), applied in that order over a device and
// only when the user sets them.
type Flags struct {
	device, link string
	host, dev    *field.Flags
	lnk          *field.Flags
	media        *dram.Flags
}

var (
	hostHelp = map[string]string{
		"fabric_ns":   "host on-chip path between the LLC miss and the CXL root port, each way (ns)",
		"bridge_ns":   "host CXL bridge (root port), each way (ns)",
		"protocol_ns": "host CXL.mem protocol conversion, each way (ns)",
	}
	deviceHelp = map[string]string{
		"protocol_ns":    "device CXL.mem protocol processing, each way (ns)",
		"request_queue":  "device request queue entries (host request credits)",
		"response_queue": "device response queue entries (requests inside the device at once)",
	}
	linkHelp = map[string]string{
		"transfer_gtps":       "CXL/PCIe transfer rate per lane (GT/s)",
		"lanes":               "CXL link lanes",
		"encoding_efficiency": "line-code efficiency (128/130 for PCIe 5.0, 1 in FLIT mode)",
		"flit_bytes":          "flit size: 68 (CXL 2.0) or 256 (CXL 3.x)",
		"headers_per_slot":    "CXL.mem headers per 16-byte slot (1, 2, 4)",
		"port_latency_ns":     "one-way port (PHY, retimer) latency (ns)",
	}
)

// AddFlags registers the flags on fs with def's values as defaults.
func AddFlags(fs *pflag.FlagSet, def Config) *Flags {
	f := &Flags{}
	fs.StringVar(&f.device, "cxl-device", def.Preset, "CXL device preset: "+strings.Join(Names(), ", ")+" (sets the host stages, link, device stages and media)")
	fs.StringVar(&f.link, "cxl-link", def.Link.Preset, "CXL link preset: "+strings.Join(LinkPresets(), ", "))
	f.host = field.Bind(fs, "host-", &def.Host, hostHelp)
	f.dev = field.Bind(fs, "device-", &def, deviceHelp)
	f.lnk = field.Bind(fs, "cxl-", &def.Link, linkHelp)
	f.media = dram.AddFlags(fs, def.Media)
	return f
}

// Apply sets c to --cxl-device's preset and its link to --cxl-link's when
// given, then every other flag the user set. It returns the flags
// applied, for a caller that must refuse them where no device is
// modelled.
func (f *Flags) Apply(fs *pflag.FlagSet, c *Config) ([]string, error) {
	var set []string
	if fs.Changed("cxl-device") {
		p, err := Lookup(f.device)
		if err != nil {
			return nil, usage.Errorf("--cxl-device: %w", err)
		}
		*c, set = p.Config, append(set, "--cxl-device")
	}
	if fs.Changed("cxl-link") {
		l, err := LinkPreset(f.link)
		if err != nil {
			return nil, usage.Errorf("--cxl-link: %w", err)
		}
		c.Link, set = l, append(set, "--cxl-link")
	}
	set = append(set, f.host.Apply(fs, &c.Host)...)
	set = append(set, f.dev.Apply(fs, c)...)
	set = append(set, f.lnk.Apply(fs, &c.Link)...)
	m, err := f.media.Apply(fs, &c.Media)
	return append(set, m...), err
}
