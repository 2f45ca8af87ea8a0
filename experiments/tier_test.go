package experiments

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

// TestStandardTier: the standard tier's options come from its one budget
// per study (at least 5 seeds) and the block's units follow them.
func TestStandardTier(t *testing.T) {
	v, b := ValidatedOptions(TierStandard, 2), BoundaryOptions(TierStandard, 2)
	for _, c := range []struct {
		o  TrainOptions
		bu Budget
	}{{v, StandardValidated}, {b, StandardBoundary}} {
		if c.o.Tier != TierStandard || c.o.Seeds < 5 || c.o.Seeds != c.bu.Seeds || c.o.TrainN != c.bu.TrainN || c.o.Epochs != c.bu.Epochs || c.o.Seed != 2 {
			t.Errorf("%s: %+v from %+v", c.o.Data, c.o, c.bu)
		}
	}
	us, err := trainingUnits(Config{Tier: TierStandard, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	vr, err1 := studyRows(StudyValidated, v)
	br, err2 := studyRows(StudyBoundary, b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if want := len(vr)*v.Seeds + len(br)*b.Seeds; len(us) != want {
		t.Errorf("%d units, want %d", len(us), want)
	}
}
