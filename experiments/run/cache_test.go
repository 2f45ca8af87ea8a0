package run

import (
	"errors"
	"testing"
)

// TestCacheKeepsTheLastKey: a repeated key is loaded once, a new key loads
// and replaces it, a failed load keeps nothing and the empty key is a key.
func TestCacheKeepsTheLastKey(t *testing.T) {
	var c Cache[int]
	loads := 0
	load := func(v int) func() (int, error) {
		return func() (int, error) { loads++; return v, nil }
	}
	boom := errors.New("boom")
	for i, step := range []struct {
		key       string
		load      func() (int, error)
		want      int
		wantLoads int
		wantErr   error
	}{
		{"", load(7), 7, 1, nil},
		{"", load(8), 7, 1, nil},
		{"a", load(1), 1, 2, nil},
		{"a", load(2), 1, 2, nil},
		{"b", func() (int, error) { loads++; return 0, boom }, 0, 3, boom},
		{"a", load(3), 1, 3, nil},
		{"b", load(4), 4, 4, nil},
		{"a", load(5), 5, 5, nil},
	} {
		got, err := c.Get(step.key, step.load)
		if got != step.want || loads != step.wantLoads || !errors.Is(err, step.wantErr) {
			t.Errorf("step %d (%q): got %d, %v after %d loads; want %d, %v after %d", i, step.key, got, err, loads, step.want, step.wantErr, step.wantLoads)
		}
	}
}
