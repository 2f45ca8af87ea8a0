package sim

import (
	"fmt"
	"regexp"
)

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])?(\.[A-Za-z][A-Za-z0-9]*(\[[0-9]+\])?)*$`)

// MustName returns name, or panics unless it is hierarchical like
// "Host[0].Stream[3]" (Akita's NameMustBeValid): components are named by
// code, never by users, so a bad name is a programming error.
func MustName(name string) string {
	if !nameRE.MatchString(name) {
		panic(fmt.Sprintf("sim: invalid component name %q", name))
	}
	return name
}
