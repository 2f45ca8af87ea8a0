package train

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// policyGolden is testdata/policy_cases.json, the grammar's golden cases
// that python/tests/test_policy_golden.py checks nfabric.policy against.
type policyGolden struct {
	Cases []struct {
		In     string                       `json:"in"`
		Error  bool                         `json:"error"`
		Groups map[string]policyGoldenGroup `json:"groups"`
	} `json:"cases"`
	GoOnly []struct {
		In string `json:"in"`
	} `json:"go_only"`
}

type policyGoldenGroup struct {
	Rule    string  `json:"rule"`
	EF      bool    `json:"ef"`
	Gate    string  `json:"gate"`
	GateTau float64 `json:"gate_tau"`
	LR      float64 `json:"lr"`
}

func TestPolicyGoldenCases(t *testing.T) {
	b, err := os.ReadFile("testdata/policy_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var gc policyGolden
	if err := json.Unmarshal(b, &gc); err != nil {
		t.Fatal(err)
	}
	if len(gc.Cases) < 40 {
		t.Fatalf("%d cases", len(gc.Cases))
	}
	for _, c := range gc.Cases {
		p, err := ParsePolicy(c.In)
		if (err != nil) != c.Error {
			t.Errorf("ParsePolicy(%q): error %v; golden error %v", c.In, err, c.Error)
			continue
		}
		if err != nil {
			continue
		}
		if len(c.Groups) != nn.NumGroups {
			t.Fatalf("%q: golden names %d groups", c.In, len(c.Groups))
		}
		for _, g := range nn.Groups() {
			want, ok := c.Groups[g.String()]
			if !ok {
				t.Fatalf("%q: golden lacks group %v", c.In, g)
			}
			s := p[g]
			got := policyGoldenGroup{Rule: s.Rule.String(), EF: s.EF, GateTau: float64(s.GateTau), LR: float64(s.LR)}
			if s.Rule == FormatRule(lowbit.Ternary) {
				got.Gate = s.Gate.String()
			}
			want.GateTau, want.LR = float64(float32(want.GateTau)), float64(float32(want.LR))
			if got != want {
				t.Errorf("ParsePolicy(%q) %v = %+v; golden %+v", c.In, g, got, want)
			}
		}
	}
	for _, c := range gc.GoOnly {
		if _, err := ParsePolicy(c.In); err != nil {
			t.Errorf("go_only %q: Go refuses it too: %v", c.In, err)
		}
	}
}
