package collective

import "testing"

// TestParseBandwidthRejectsAbsurd: a bandwidth below one byte per second
// is refused with an error naming it, so no model divides by nearly zero
// and no plot spans 600 decades.
func TestParseBandwidthRejectsAbsurd(t *testing.T) {
	for _, s := range []string{"1e-300Gb/s", "0.5B/s", "1e-10GB/s"} {
		if bw, err := ParseBandwidth(s); err == nil {
			t.Errorf("ParseBandwidth(%q) = %g, want an error", s, bw)
		}
	}
	if bw, err := ParseBandwidth("1B/s"); err != nil || bw != 1 {
		t.Errorf("1B/s: %g %v", bw, err)
	}
}
