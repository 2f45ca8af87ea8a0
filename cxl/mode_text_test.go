package cxl

import (
	"encoding/json"
	"testing"
)

func TestModeText(t *testing.T) {
	for _, m := range Modes() {
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
	if err := json.Unmarshal([]byte(`"bogus"`), &m); err == nil {
		t.Error("unknown mode unmarshalled")
	}
}
