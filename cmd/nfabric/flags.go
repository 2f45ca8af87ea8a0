package main

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// requirePositive returns a usage error naming the first of the integer
// flags whose value is below 1. The packages read a zero field as "the
// default", so a zero typed on the command line must be refused, not
// passed on to silently become the default.
func requirePositive(fs *pflag.FlagSet, names ...string) error {
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil {
			continue
		}
		v, err := strconv.ParseInt(f.Value.String(), 10, 64)
		if err == nil && v < 1 {
			return usagef("--%s %d: want at least 1", n, v)
		}
	}
	return nil
}

// joinInts writes xs as a comma-separated flag default ("16,32").
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
