package main

import (
	"fmt"
	"strconv"
	"time"

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

// parsed is a flag whose text a package's parser turns into the value at
// *p as the command line is read, so that a value it refuses is a flag
// error (exit 2) naming the flag, and the command receives the parsed
// value.
type parsed[T any] struct {
	p     *T
	text  string
	parse func(string) (T, error)
}

func (v *parsed[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p, v.text = x, s
	return nil
}

func (v *parsed[T]) String() string { return v.text }
func (v *parsed[T]) Type() string   { return "string" }

// parsedVar registers a flag read by parse into *p, with the default
// value def (parsed now: a default the parser refuses is a programming
// error; an empty def leaves *p as it is).
func parsedVar[T any](f *pflag.FlagSet, p *T, name, def string, parse func(string) (T, error), usage string) {
	v := &parsed[T]{p: p, parse: parse}
	if def != "" {
		if err := v.Set(def); err != nil {
			panic(fmt.Sprintf("flag --%s: default %q: %v", name, def, err))
		}
	}
	f.Var(v, name, usage)
}

// nsVar registers a duration flag ("1us", "10ms") stored in nanoseconds
// at *p, the form the models keep times in.
func nsVar(f *pflag.FlagSet, p *int64, name string, def time.Duration, usage string) {
	parsedVar(f, p, name, def.String(), func(s string) (int64, error) {
		d, err := time.ParseDuration(s)
		return d.Nanoseconds(), err
	}, usage)
}
