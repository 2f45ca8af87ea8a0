package timing

import (
	"strings"

	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/pflag"
)

// Flags are the model selectors' command-line flags (--memory, --link,
// --refresh-phases) with the device's (cxldev.AddFlags: --cxl-device,
// --cxl-link, --host-*, --device-*, --cxl-*, --dram-*), applied over a
// configuration only when the user sets them.
type Flags struct {
	memory, link string
	phases       int
	device       *cxldev.Flags
}

// AddFlags registers the flags on fs with def's values as defaults.
func AddFlags(fs *pflag.FlagSet, def Config) *Flags {
	f := &Flags{}
	fs.StringVar(&f.memory, "memory", def.Memory.Model, "memory model: ideal (the paper's fixed latency) or dram (the device's DRAM; --cxl-device implies it, and it implies --link cxl unless --link is given)")
	fs.StringVar(&f.link, "link", def.Link.Model, "link model: auto, gate (one bandwidth gate) or cxl (the device's two-way flit link and stages)")
	fs.IntVar(&f.phases, "refresh-phases", def.Memory.RefreshPhases, "refresh schedules each identity/low-bit pair is averaged over (dithered, refresh_seed 1..N): an exposure that does not depend on where refresh falls; 0: one pair under the periodic schedule")
	f.device = cxldev.AddFlags(fs, def.Device)
	return f
}

// Apply sets the device flags the user gave on c.Device (a --cxl-device
// selects memory.model dram unless --memory is given), then --memory,
// --link and --refresh-phases. Device settings where no device is
// modelled (memory ideal behind the gate), or DRAM settings where no DRAM
// is (memory ideal), are a usage error naming them rather than silently
// ignored.
func (f *Flags) Apply(fs *pflag.FlagSet, c *Config) error {
	set, err := f.device.Apply(fs, &c.Device)
	if err != nil {
		return err
	}
	if fs.Changed("cxl-device") {
		c.Memory.Model = MemoryDRAM
	}
	if fs.Changed("memory") {
		c.Memory.Model = f.memory
	}
	if fs.Changed("link") {
		c.Link.Model = f.link
	}
	if fs.Changed("refresh-phases") {
		c.Memory.RefreshPhases = f.phases
	}
	if c.Memory.Model == MemoryDRAM {
		return nil
	}
	var bad []string
	for _, name := range set {
		if !c.Detailed() || name == "--cxl-device" || strings.HasPrefix(name, "--dram-") {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		return usage.Errorf("%s: device and DRAM settings do not apply to --memory %s (give --cxl-device or --memory dram; --link cxl keeps the ideal memory behind the device's link)", strings.Join(bad, ", "), c.Memory.Model)
	}
	return nil
}
