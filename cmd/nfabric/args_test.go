package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/usage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestCobraErrorsAreTyped: every mistake cobra or pflag finds on the
// command line (a word that names no command, a wrong number of
// arguments, an unknown flag, a flag value of the wrong type) comes back
// as a usage error, decided by its type at the source and not by its
// text, and exits 2.
func TestCobraErrorsAreTyped(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown command", []string{"no-such-command"}, `"no-such-command"`},
		{"close to a command", []string{"verfy"}, "verify"},
		{"unknown subcommand", []string{"payload", "bogus"}, `"bogus"`},
		{"unknown nested subcommand", []string{"train", "bogus", "x"}, `"bogus"`},
		{"NoArgs given one", []string{"version", "extra"}, `"extra"`},
		{"ExactArgs given two", []string{"payload", "inspect", "a", "b"}, "accepts 1 arg"},
		{"MinimumNArgs given none", []string{"payload", "encode", "-o", "x"}, "requires at least 1 arg"},
		{"unknown flag", []string{"version", "--no-such-flag"}, "--no-such-flag"},
		{"unknown shorthand", []string{"version", "-Z"}, "-Z"},
		{"bad integer", []string{"verify", "--lines", "many"}, "--lines"},
		{"bad bool", []string{"verify", "--json=maybe"}, "--json"},
		{"missing value", []string{"verify", "--lines"}, "--lines"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := newRootCmd()
			root.SetArgs(c.args)
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			_, err := root.ExecuteC()
			if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("nfabric %s: error %v (usage %v); want a usage error naming %s", strings.Join(c.args, " "), err, usage.Is(err), c.msg)
			}
			if code, _, stderr := nfabric(t, c.args...); code != 2 || !strings.Contains(stderr, "Run 'nfabric --help'") {
				t.Errorf("nfabric %s: exit %d, stderr %q; want 2 and the pointer to --help", strings.Join(c.args, " "), code, stderr)
			}
		})
	}
}

// TestGroupsPrintHelp: a command group called bare prints its help and
// succeeds, the root and the groups alike.
func TestGroupsPrintHelp(t *testing.T) {
	root := newRootCmd()
	var groups []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !hasOwnFlags(c) { // serve and pilot run as commands
			groups = append(groups, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, g := range groups {
		if g.Name() == "help" {
			continue
		}
		path := strings.Fields(g.CommandPath())[1:]
		code, out, stderr := nfabric(t, path...)
		if code != 0 || !strings.Contains(out, "Available Commands") {
			t.Errorf("%s: exit %d, stderr %q; want its help and 0", g.CommandPath(), code, stderr)
		}
	}
	if len(groups) < 6 {
		t.Errorf("found %d command groups; the walk is broken", len(groups))
	}
}

// TestEveryCommandDeclaresItsArguments: a command that runs says how
// many positional arguments it takes, so that a stray word is refused
// rather than ignored.
func TestEveryCommandDeclaresItsArguments(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Args == nil && c.Name() != "help" {
			t.Errorf("%s: no Args validator", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
}

// hasOwnFlags reports whether c defines a flag besides --help.
func hasOwnFlags(c *cobra.Command) bool {
	own := false
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { own = own || f.Name != "help" })
	return own
}
