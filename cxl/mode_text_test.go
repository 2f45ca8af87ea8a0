package cxl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

func TestModeText(t *testing.T) {
	for _, m := range AllModes() {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Mode
		if err := json.Unmarshal(b, &back); err != nil || back != m || string(b) != `"`+m.String()+`"` {
			t.Errorf("%v: %s -> %v, %v", m, b, back, err)
		}
	}
	if _, err := json.Marshal(Mode(99)); err == nil {
		t.Error("invalid mode marshalled")
	}
	var m Mode
	for _, bad := range []string{`"bogus"`, `"int8-sum"`, `"aggregate"`} {
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("mode %s unmarshalled", bad)
		}
	}
	// The spellings a user types: a format's aliases name its mode.
	for s, want := range map[string]Mode{"fp32": FP32Bypass, "BYPASS": FP32Bypass, "id": Identity, "binary": Aggregate(lowbit.Binary), "bfp": Aggregate(lowbit.BFP8), "INT8": Aggregate(lowbit.Int8)} {
		if got, err := ParseMode(s); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v, want %v", s, got, err, want)
		}
	}
}

// FuzzParseMode: any text either names a valid mode, whose String parses
// back to it and whose Format aggregates back to it (bypass and identity
// aside), or fails naming the input; it never panics.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"identity", "fp32", "g-binary", "BFP", "int8", "aggregate(int8)", "", "\x00", "int8-sum"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			if !strings.Contains(err.Error(), "unknown mode") {
				t.Fatalf("ParseMode(%q): %v", s, err)
			}
			return
		}
		if !m.Valid() {
			t.Fatalf("ParseMode(%q) = invalid %v", s, m)
		}
		if back, err := ParseMode(m.String()); err != nil || back != m {
			t.Fatalf("%v does not round-trip: %v, %v", m, back, err)
		}
		if m != Identity && Aggregate(m.Format()) != m {
			t.Fatalf("%v aggregates %v, whose mode is %v", m, m.Format(), Aggregate(m.Format()))
		}
	})
}
