// Package usage holds the one error kind that the command line maps to exit
// status 2: a request that is wrong in itself (an unknown name, a value out
// of range, options that contradict each other, an output path that cannot
// be written), found before any work starts. Every other failure, bad
// content inside an input file among them, exits 1.
//
// A package validating its options returns usage.Errorf (or usage.Wrap) for
// such mistakes, naming the option as the user spelled it (the flag's name
// without dashes, or the YAML key); cmd/nfabric maps errors.Is(err,
// usage.ErrUsage) to status 2 and never classifies errors by their text.
package usage

import (
	"errors"
	"fmt"
)

// ErrUsage is matched by every error this package makes:
// errors.Is(err, ErrUsage) reports whether err is a usage error.
var ErrUsage = errors.New("usage error")

// usageErr wraps an error and marks it as a usage error. Its message is the
// wrapped error's alone.
type usageErr struct{ err error }

func (e *usageErr) Error() string { return e.err.Error() }

// Unwrap returns both the wrapped error and ErrUsage, so errors.Is and
// errors.As see through to either.
func (e *usageErr) Unwrap() []error { return []error{e.err, ErrUsage} }

// Errorf formats like fmt.Errorf (%w included) and marks the result as a
// usage error.
func Errorf(format string, args ...any) error {
	return &usageErr{fmt.Errorf(format, args...)}
}

// Wrap marks err as a usage error, keeping its message; Wrap(nil) is nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &usageErr{err}
}

// Is reports whether err is (or wraps) a usage error.
func Is(err error) bool { return errors.Is(err, ErrUsage) }
