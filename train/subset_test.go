package train

import (
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
)

// TestHeldOut takes images [lo, lo+n) of a set whose image i holds the
// byte i and label i mod 3, so the expected images are known by hand, and
// refuses empty ranges.
func TestHeldOut(t *testing.T) {
	d := &data.Dataset{Name: "toy", C: 1, H: 1, W: 2, Classes: 3}
	for i := range 10 {
		d.Pixels = append(d.Pixels, byte(i), byte(i))
		d.Labels = append(d.Labels, i%3)
	}
	for _, tt := range []struct {
		lo, n, first, len int
	}{{4, 3, 4, 3}, {8, 5, 8, 2}, {0, 10, 0, 10}} {
		h, err := HeldOut(d, tt.lo, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if h.Len() != tt.len || h.Image(0)[0] != byte(tt.first) || h.Labels[0] != tt.first%3 || h.Image(h.Len() - 1)[1] != byte(tt.first+tt.len-1) {
			t.Errorf("HeldOut(%d, %d): %d images from %d", tt.lo, tt.n, h.Len(), h.Image(0)[0])
		}
	}
	for _, bad := range [][2]int{{10, 1}, {-1, 2}, {3, 0}} {
		if _, err := HeldOut(d, bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "toy") {
			t.Errorf("HeldOut(%d, %d): err %v", bad[0], bad[1], err)
		}
	}
}
