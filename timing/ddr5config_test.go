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
