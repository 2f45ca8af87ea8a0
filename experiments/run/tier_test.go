package run

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTierText(t *testing.T) {
	for i, name := range []string{"quick", "standard", "full"} {
		tier, err := ParseTier(name)
		if err != nil || tier != Tier(i) || tier.String() != name {
			t.Errorf("ParseTier(%q) = %v, %v", name, tier, err)
		}
		b, err := json.Marshal(Config{Tier: tier, Seed: 3})
		if err != nil || string(b) != `{"tier":"`+name+`","seed":3}` {
			t.Errorf("%s: JSON %s, %v", name, b, err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil || back.Tier != tier {
			t.Errorf("%s: back %v, %v", name, back.Tier, err)
		}
	}
	for _, bad := range []string{"", "Quick", "medium", "full "} {
		if _, err := ParseTier(bad); err == nil {
			t.Errorf("ParseTier(%q) accepted", bad)
		}
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"tier":"medium","seed":1}`), &c); err == nil || !strings.Contains(err.Error(), "medium") {
		t.Errorf("unknown tier in JSON: %v", err)
	}
	if _, err := json.Marshal(Config{Tier: 7}); err == nil {
		t.Error("tier 7 marshalled")
	}
	if !(Config{Tier: TierFull}).Full() || (Config{Tier: TierStandard}).Full() {
		t.Error("Full() is not tier == full")
	}
}
