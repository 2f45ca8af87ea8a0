package hw

import (
	"fmt"
	"slices"
	"strings"
)

// Family is an FPGA family the place-and-route proxy targets.
type Family string

// The families. The paper routes on ECP5 with nextpnr and Project Trellis;
// iCE40 is the family Debian's nextpnr covers.
const (
	ICE40 Family = "ice40"
	ECP5  Family = "ecp5"
)

// Families lists the supported families.
var Families = []Family{ICE40, ECP5}

// ParseFamily accepts "ice40" or "ecp5".
func ParseFamily(s string) (Family, error) {
	f := Family(strings.ToLower(strings.TrimSpace(s)))
	if !slices.Contains(Families, f) {
		return "", fmt.Errorf("unknown FPGA family %q (known: ice40, ecp5)", s)
	}
	return f, nil
}

// Nextpnr is the place-and-route tool of the family.
func (f Family) Nextpnr() Tool {
	if f == ECP5 {
		return NextpnrECP5
	}
	return NextpnrICE40
}

// SynthPass is the family's Yosys mapping pass.
func (f Family) SynthPass() string { return "synth_" + string(f) }

// LogicBel is the bel type nextpnr reports logic utilisation in.
func (f Family) LogicBel() string {
	if f == ECP5 {
		return "TRELLIS_COMB"
	}
	return "ICESTORM_LC"
}

// LUTCell is the 4-input LUT cell of the family's Yosys mapping.
func (f Family) LUTCell() string {
	if f == ECP5 {
		return "LUT4"
	}
	return "SB_LUT4"
}

// Part is one device of a family: its name as the vendor writes it, the
// package, and (ECP5) the speed grade.
type Part struct {
	Family  Family `json:"family"`
	Device  string `json:"device"`
	Package string `json:"package"`
	// Speed is the ECP5 speed grade (6, 7 or 8; 8 is the fastest and the
	// only one of the 5G parts); 0 on iCE40.
	Speed int `json:"speed,omitempty"`
}

// The default parts: the HX8K of the first round, and the largest ECP5
// (LFE5U-85F) in its CABGA381 package at speed grade 6, the slowest and
// so the conservative grade; the paper names neither part nor grade.
var (
	DefaultICE40 = Part{Family: ICE40, Device: "hx8k", Package: "ct256"}
	DefaultECP5  = Part{Family: ECP5, Device: "LFE5U-85F", Package: "CABGA381", Speed: 6}
)

// DefaultPart returns the family's default part.
func DefaultPart(f Family) Part {
	if f == ECP5 {
		return DefaultECP5
	}
	return DefaultICE40
}

// ecp5Devices maps ECP5 part names to nextpnr-ecp5's device flag.
var ecp5Devices = map[string]string{
	"LFE5U-12F": "--12k", "LFE5U-25F": "--25k", "LFE5U-45F": "--45k", "LFE5U-85F": "--85k",
	"LFE5UM-25F": "--um-25k", "LFE5UM-45F": "--um-45k", "LFE5UM-85F": "--um-85k",
	"LFE5UM5G-25F": "--um5g-25k", "LFE5UM5G-45F": "--um5g-45k", "LFE5UM5G-85F": "--um5g-85k",
}

// ecp5Packages are the ECP5 packages nextpnr-ecp5 knows.
var ecp5Packages = []string{"CABGA256", "CABGA381", "CABGA554", "CABGA756", "CSFBGA285", "CSFBGA381", "CSFBGA554", "TQFP144"}

// ice40Devices are nextpnr-ice40's device flags (without the dashes).
var ice40Devices = []string{"lp384", "lp1k", "lp4k", "lp8k", "hx1k", "hx4k", "hx8k", "up3", "up5k", "u1k", "u2k", "u4k"}

// Validate checks that nextpnr knows the device and, for ECP5, the
// package and speed grade; the error names the field. iCE40 packages are
// left to nextpnr, which lists the valid ones when it rejects one.
func (p Part) Validate() error {
	if p.Package == "" {
		return fmt.Errorf("part %s: no package", p.Device)
	}
	switch p.Family {
	case ECP5:
		if _, ok := ecp5Devices[p.Device]; !ok {
			return fmt.Errorf("unknown ECP5 device %q (known: %s)", p.Device, strings.Join(sortedKeys(ecp5Devices), ", "))
		}
		if !slices.Contains(ecp5Packages, p.Package) {
			return fmt.Errorf("unknown ECP5 package %q (known: %s)", p.Package, strings.Join(ecp5Packages, ", "))
		}
		five := strings.HasPrefix(p.Device, "LFE5UM5G")
		if (five && p.Speed != 8) || (!five && (p.Speed < 6 || p.Speed > 8)) {
			return fmt.Errorf("ECP5 device %s: speed grade %d is not offered (LFE5U/LFE5UM: 6, 7, 8; LFE5UM5G: 8)", p.Device, p.Speed)
		}
	case ICE40:
		if !slices.Contains(ice40Devices, p.Device) {
			return fmt.Errorf("unknown iCE40 device %q (known: %s)", p.Device, strings.Join(ice40Devices, ", "))
		}
		if p.Speed != 0 {
			return fmt.Errorf("iCE40 device %s: a speed grade is an ECP5 setting", p.Device)
		}
	default:
		return fmt.Errorf("unknown FPGA family %q", p.Family)
	}
	return nil
}

// String names the part, e.g. "LFE5U-85F CABGA381 speed 6".
func (p Part) String() string {
	s := p.Device + " " + p.Package
	if p.Speed != 0 {
		s += fmt.Sprintf(" speed %d", p.Speed)
	}
	return s
}

// nextpnrArgs are the device arguments of the family's nextpnr.
func (p Part) nextpnrArgs() []string {
	if p.Family == ECP5 {
		return []string{ecp5Devices[p.Device], "--package", p.Package, "--speed", fmt.Sprint(p.Speed)}
	}
	return []string{"--" + p.Device, "--package", p.Package}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// YosysBuilds names the Yosys builds SynthOptions and PnrOptions select.
var YosysBuilds = map[string]Tool{"debian": Yosys, "yowasp": YosysWASM}

// ParseYosys returns the Yosys build named s ("debian" or "yowasp").
func ParseYosys(s string) (Tool, error) {
	t, ok := YosysBuilds[strings.ToLower(strings.TrimSpace(s))]
	if !ok {
		return Tool{}, fmt.Errorf("unknown Yosys build %q (known: debian, yowasp)", s)
	}
	return t, nil
}
