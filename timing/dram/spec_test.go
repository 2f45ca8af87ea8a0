package dram

import (
	"bytes"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// TestPresets: every speed grade validates and holds its JEDEC bin. The
// oracle is the grade as a data sheet states it, written here apart from
// the preset table: CL in clock cycles (the bin's first number), the
// clock, and one channel's peak rate (MT/s x bus width / 8). Adding a
// grade means adding its row here.
func TestPresets(t *testing.T) {
	for _, c := range []struct {
		name      string
		protocol  string
		clPS, cl  int64
		chanGBps  float64
		burstCyc  int64
		refreshUS float64
	}{
		{"ddr5-4800", DDR5, 417, 40, 19.2, 8, 3.9},
		{"ddr5-6400", DDR5, 313, 52, 25.6, 8, 3.9},
		{"gem5-ddr5-4400-4x8", DDR5, 455, 32, 17.6, 8, 3.9},
		{"ddr4-3200", DDR4, 625, 22, 25.6, 4, 7.8},
	} {
		d, err := Preset(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		ch := d
		ch.Channels = 1
		if d.Preset != c.name || d.Protocol != c.protocol || int64(d.Clock()) != c.clPS || d.Cycles(d.TCLNS) != c.cl ||
			d.BurstCycles() != c.burstCyc || ch.PeakGBps() != c.chanGBps || d.TREFINS != c.refreshUS*1000 {
			t.Errorf("%s: %s, tCK %v, CL %d, BL/2 %d, %g GB/s a channel, tREFI %g ns; want %s, %d ps, %d, %d, %g, %g us",
				c.name, d.Protocol, d.Clock(), d.Cycles(d.TCLNS), d.BurstCycles(), ch.PeakGBps(), d.TREFINS,
				c.protocol, c.clPS, c.cl, c.burstCyc, c.chanGBps, c.refreshUS)
		}
	}
	if got, want := len(Presets()), 4; got != want {
		t.Errorf("%d presets, the table above checks %d: add the new grade's row", got, want)
	}
	if _, err := Preset("hbm3"); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "ddr4-3200") {
		t.Errorf("unknown preset: %v; want a usage error listing the names", err)
	}
}

func TestValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		key string
		mut func(*Spec)
	}{
		{"protocol", func(d *Spec) { d.Protocol = "hbm3" }},
		{"data_rate_mts", func(d *Spec) { d.DataRateMTs = 0 }},
		{"channels", func(d *Spec) { d.Channels = 3 }},
		{"bus_bits", func(d *Spec) { d.BusBits = 64 }},
		{"burst_length", func(d *Spec) { d.BurstLength = 8 }},
		{"t_rcd_ns", func(d *Spec) { d.TRCDNS = -1 }},
		{"t_rfc_ns", func(d *Spec) { d.TRFCNS = 5000 }},
		{"t_cwl_ns", func(d *Spec) { d.TCWLNS = 30 }},
		{"page_policy", func(d *Spec) { d.PagePolicy = "adaptive" }},
		{"write_high", func(d *Spec) { d.WriteHigh = 65 }},
		{"write_low", func(d *Spec) { d.WriteLow = 48 }},
		{"mapping", func(d *Spec) { d.Mapping = "ro:ra:ba:bg:co" }},
		{"mapping", func(d *Spec) { d.Mapping = "ro:ro:ba:bg:co:ch" }},
		{"bank_hash", func(d *Spec) { d.BankHash = "" }},
		{"bank_hash", func(d *Spec) { d.BankHash = "prime" }},
	} {
		d, _ := Preset("ddr5-4800")
		tc.mut(&d)
		if err := d.Validate(); err == nil || !usage.Is(err) || !strings.HasPrefix(err.Error(), tc.key) {
			t.Errorf("%s: Validate() = %v; want a usage error naming it", tc.key, err)
		}
	}
}

// TestYAMLPreset: a block naming a preset starts from it and its other
// keys override; a block naming none overrides what is there; unknown
// keys and unknown presets are errors; encoding and decoding again gives
// the same spec.
func TestYAMLPreset(t *testing.T) {
	var d Spec
	if err := yaml.Unmarshal([]byte("preset: ddr5-6400\nchannels: 2\n"), &d); err != nil {
		t.Fatal(err)
	}
	want, _ := Preset("ddr5-6400")
	want.Channels = 2
	if d != want {
		t.Errorf("preset + override = %+v; want %+v", d, want)
	}
	base, _ := Preset("ddr4-3200")
	d = base
	if err := yaml.Unmarshal([]byte("t_cl_ns: 15\n"), &d); err != nil || d.TCLNS != 15 || d.TRCDNS != base.TRCDNS {
		t.Errorf("override without a preset: %+v, %v", d, err)
	}
	for _, bad := range []string{"preset: ddr9\n", "t_cl: 15\n", "channels: [1]\n"} {
		d = base
		if err := yaml.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%q decoded to %+v; want an error", bad, d)
		}
	}
	for _, name := range Presets() {
		p, _ := Preset(name)
		var b bytes.Buffer
		if err := yaml.NewEncoder(&b).Encode(p); err != nil {
			t.Fatal(err)
		}
		var back Spec
		if err := yaml.Unmarshal(b.Bytes(), &back); err != nil || back != p {
			t.Errorf("%s: round trip %+v, %v", name, back, err)
		}
	}
}

// TestFlags: --dram-preset replaces the spec, a field flag overrides one
// key, and Apply names what it applied.
func TestFlags(t *testing.T) {
	def, _ := Preset("ddr5-4800")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := AddFlags(fs, def)
	if err := fs.Parse([]string{"--dram-preset", "ddr4-3200", "--dram-t-rcd-ns", "15", "--dram-channels=2"}); err != nil {
		t.Fatal(err)
	}
	got := def
	set, err := f.Apply(fs, &got)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Preset("ddr4-3200")
	want.TRCDNS, want.Channels = 15, 2
	if got != want || strings.Join(set, " ") != "--dram-preset --dram-channels --dram-t-rcd-ns" {
		t.Errorf("applied %v -> %+v; want %+v", set, got, want)
	}
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	f = AddFlags(fs, def)
	_ = fs.Parse([]string{"--dram-preset", "ddr9"})
	if _, err := f.Apply(fs, &got); err == nil || !usage.Is(err) {
		t.Errorf("--dram-preset ddr9: %v; want a usage error", err)
	}
}

// FuzzSpecYAML: any document either fails to decode or decodes to a spec
// that, if valid, encodes and decodes back to itself.
func FuzzSpecYAML(f *testing.F) {
	f.Add([]byte("preset: ddr5-6400\nchannels: 2\n"))
	f.Add([]byte("preset: ddr4-3200\nt_cl_ns: 1e300\n"))
	f.Add([]byte("protocol: ddr4\nbus_bits: 64\nburst_length: 8\n"))
	f.Add([]byte("mapping: ro:ra\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		d, _ := Preset("ddr5-4800")
		if err := yaml.Unmarshal(doc, &d); err != nil || d.Validate() != nil {
			return
		}
		var b bytes.Buffer
		if err := yaml.NewEncoder(&b).Encode(d); err != nil {
			t.Fatal(err)
		}
		var back Spec
		if err := yaml.Unmarshal(b.Bytes(), &back); err != nil || back != d {
			t.Fatalf("round trip of %+v: %+v, %v", d, back, err)
		}
	})
}
