package control

import (
	"strings"
	"testing"
)

// TestReadTelemetryRefusesInfinitePressure: finite demand and capacity
// whose ratio overflows (1e308 over 1e-308) are refused, naming the line,
// so no infinite pressure reaches the Commander.
func TestReadTelemetryRefusesInfinitePressure(t *testing.T) {
	in := TelemetryHeader + "\n0,1e308,1e-308,0\n"
	if _, err := ReadTelemetry(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err %v; want an error on line 2", err)
	}
}
