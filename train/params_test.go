package train

import (
	"strings"
	"testing"
)

// TestMaxParams: an MLP width past MaxParams is refused by Validate before
// any data is loaded (unchecked, train run --hidden 100000000 ended in
// an out-of-memory crash); the count is the closed form sum of
// (fan-in + 1) x width, by hand.
func TestMaxParams(t *testing.T) {
	for _, c := range []struct {
		in     int
		hidden []int
		out    int
		want   int64
	}{
		{784, []int{256}, 10, 785*256 + 257*10},
		{3072, []int{512, 256}, 100, 3073*512 + 513*256 + 257*100},
		{1, nil, 2, 4},
		{784, []int{100_000_000}, 10, MaxParams + 1},
		{1 << 30, []int{1 << 30}, 1 << 30, MaxParams + 1},
	} {
		if got := mlpParams(c.in, c.hidden, c.out); got != c.want {
			t.Errorf("mlpParams(%d, %v, %d) = %d; want %d", c.in, c.hidden, c.out, got, c.want)
		}
	}
	cfg := baseConfig()
	cfg.Hidden = []int{100_000_000}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("hidden 100000000: %v; want the parameter limit", err)
	}
	cfg.Hidden = []int{4096, 4096} // 16.8M between the two hidden layers: allowed
	if err := cfg.Validate(); err != nil {
		t.Errorf("hidden 4096,4096: %v", err)
	}
	cfg.Hidden = []int{8192, 8192} // 67M: refused
	if err := cfg.Validate(); err == nil {
		t.Error("hidden 8192,8192 accepted")
	}
}
