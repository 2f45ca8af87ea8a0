package timing

import (
	"strings"
	"testing"
)

func TestPresetsValid(t *testing.T) {
	for _, n := range DDR5Presets() {
		d, err := DDR5Preset(n)
		if err != nil || d.Validate() != nil {
			t.Errorf("DDR5 preset %s: %v / %v", n, err, d.Validate())
		}
	}
	for _, n := range CXLPresets() {
		x, err := CXLPreset(n)
		if err != nil || x.Validate() != nil {
			t.Errorf("CXL preset %s: %v / %v", n, err, x.Validate())
		}
	}
	for _, n := range Presets() {
		c, err := PresetConfig(n)
		if err != nil || c.Validate() != nil {
			t.Errorf("model preset %s: %v / %v", n, err, c.Validate())
		}
	}
	if _, err := DDR5Preset("ddr4"); err == nil || !strings.Contains(err.Error(), "ddr5-4800") {
		t.Errorf("unknown DDR5 preset: %v; want the list of names", err)
	}
	c, _ := PresetConfig(PresetDDR5)
	if !c.Detailed() || c.LinkModel() != LinkCXL || DefaultConfig().Detailed() {
		t.Error("ddr5 preset should select the detailed device and the cxl link; ideal should not")
	}
}

func TestValidateNamesDetailedFields(t *testing.T) {
	for _, tc := range []struct {
		field string
		mut   func(*Config)
	}{
		{"memory.model", func(c *Config) { c.Memory.Model = "hbm" }},
		{"memory.ddr5.data_rate_mts", func(c *Config) { c.Memory.DDR5.DataRateMTs = 0 }},
		{"memory.ddr5.channels", func(c *Config) { c.Memory.DDR5.Channels = 3 }},
		{"memory.ddr5.burst_length", func(c *Config) { c.Memory.DDR5.BurstLength = 8 }},
		{"memory.ddr5.t_rcd_ns", func(c *Config) { c.Memory.DDR5.TRCDNS = -1 }},
		{"memory.ddr5.t_rfc_ns", func(c *Config) { c.Memory.DDR5.TRFCNS = 5000 }},
		{"memory.ddr5.page_policy", func(c *Config) { c.Memory.DDR5.PagePolicy = "adaptive" }},
		{"memory.ddr5.write_high", func(c *Config) { c.Memory.DDR5.WriteHigh = 65 }},
		{"memory.ddr5.write_low", func(c *Config) { c.Memory.DDR5.WriteLow = 48 }},
		{"memory.ddr5.mapping", func(c *Config) { c.Memory.DDR5.Mapping = "ro:ra:ba:bg:co" }},
		{"memory.ddr5.mapping", func(c *Config) { c.Memory.DDR5.Mapping = "ro:ro:ba:bg:co:ch" }},
		{"memory.ddr5.bank_hash", func(c *Config) { c.Memory.DDR5.BankHash = "" }},
		{"memory.ddr5.bank_hash", func(c *Config) { c.Memory.DDR5.BankHash = "prime" }},
		{"link.model", func(c *Config) { c.Link.Model = "nvlink" }},
		{"link.cxl.flit_bytes", func(c *Config) { c.Link.CXL.FlitBytes = 128 }},
		{"link.cxl.headers_per_slot", func(c *Config) { c.Link.CXL.HeadersPerSlot = 3 }},
		{"link.cxl.encoding_efficiency", func(c *Config) { c.Link.CXL.EncodingEfficiency = 1.2 }},
		{"link.cxl.request_credits", func(c *Config) { c.Link.CXL.RequestCredits = 0 }},
		{"link.cxl.response_queue", func(c *Config) { c.Link.CXL.ResponseQueue = 0 }},
	} {
		c, _ := PresetConfig(PresetDDR5)
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: Validate() = %v", tc.field, err)
		}
	}
}

func TestDecodeSetupPresetsAndIntegers(t *testing.T) {
	doc := `model:
  memory:
    model: ddr5
    ddr5:
      preset: ddr5-6400
      t_rfc_ns: 410
  link:
    cxl:
      preset: pcie5-x16
      port_latency_ns: 40
`
	s, err := DecodeSetup(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	d := s.Model.Memory.DDR5
	if d.DataRateMTs != 6400 || d.TCLNS != 16.25 || d.TRFCNS != 410 {
		t.Errorf("ddr5-6400 with t_rfc_ns override: rate %d, tCL %g, tRFC %g", d.DataRateMTs, d.TCLNS, d.TRFCNS)
	}
	if x := s.Model.Link.CXL; x.FlitBytes != 68 || x.PortLatencyNS != 40 {
		t.Errorf("pcie5-x16 with port override: flit %d, port %g", x.FlitBytes, x.PortLatencyNS)
	}
	for _, bad := range []struct{ doc, want string }{
		{"model:\n  memory:\n    ddr5:\n      channels: 2.5\n", "model.memory.ddr5.channels: must be an integer"},
		{"model:\n  streams:\n    count: 8.0\n", "model.streams.count: must be an integer"},
		{"experiments:\n  stack_counts: [1, 2.5]\n", "experiments.stack_counts[1]: must be an integer"},
		{"model:\n  controller:\n    stages: 2.9\n", "model.controller.stages: must be an integer"},
		{"model:\n  memory:\n    ddr5:\n      preset: lpddr5\n", "model.memory.ddr5.preset"},
		{"model:\n  link:\n    cxl:\n      preset: pcie7\n", "model.link.cxl.preset"},
	} {
		if _, err := DecodeSetup(strings.NewReader(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v; want %q", bad.doc, err, bad.want)
		}
	}
}
