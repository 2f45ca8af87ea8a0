// Package field checks and binds the fields of the timing model's
// configuration structs by their YAML keys: range checks that name the key
// and return usage errors, one command-line flag per key, and the strict
// decoding of a YAML block that starts from a named preset. The packages
// of the timing model (dram, cxldev, timing) each validate their own
// struct with it, so a key, its flag and its error all carry one name.
package field

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/usage"
)

// Finite reports whether v is neither NaN nor infinite.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Float returns a usage error naming key unless lo <= v <= hi (NaN and
// infinities fail).
func Float(key string, v, lo, hi float64) error {
	if !Finite(v) || v < lo || v > hi {
		return usage.Errorf("%s: must be in [%g, %g], got %g", key, lo, hi, v)
	}
	return nil
}

// Int returns a usage error naming key unless lo <= v <= hi.
func Int(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usage.Errorf("%s: must be in [%d, %d], got %d", key, lo, hi, v)
	}
	return nil
}

// OneOf returns a usage error naming key unless v is one of want.
func OneOf(key, v string, want ...string) error {
	for _, w := range want {
		if v == w {
			return nil
		}
	}
	return usage.Errorf("%s: want %s, got %q", key, list(want), v)
}

func list(xs []string) string {
	switch len(xs) {
	case 0:
		return "nothing"
	case 1:
		return xs[0]
	}
	s := ""
	for i, x := range xs[:len(xs)-1] {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s + " or " + xs[len(xs)-1]
}

// Under prefixes err's message with a YAML path ("memory.dram" then
// "t_cl_ns: ..." reads "memory.dram.t_cl_ns: ..."), keeping a usage error
// a usage error.
func Under(path string, err error) error {
	if err == nil {
		return nil
	}
	if usage.Is(err) {
		return usage.Errorf("%s.%w", path, err)
	}
	return fmt.Errorf("%s.%w", path, err)
}
