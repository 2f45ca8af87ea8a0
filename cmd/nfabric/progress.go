package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// encodeChunk is the elements per worker that `payload encode` holds in
// memory at a time (4 MiB of float32 per worker).
const encodeChunk = 1 << 20

// progressMin is the smallest job, in bytes or lines, that reports
// progress: smaller ones finish before a line would help (a var so tests
// can lower it).
var progressMin int64 = 4 << 20

// newProgress returns a progress callback that writes one line to stderr
// each time a job of at least progressMin units passes another tenth of
// its total: deterministic (no clocks), and never on stdout or into an
// output file. quiet returns nil (no progress).
func newProgress(cmd *cobra.Command, quiet bool, label string) func(done, total int64) {
	if quiet {
		return nil
	}
	last := int64(0)
	return func(done, total int64) {
		if total < progressMin || done <= 0 {
			return
		}
		tenth := done * 10 / total
		if tenth > last {
			last = tenth
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d%% (%d of %d)\n", label, tenth*10, done, total)
		}
	}
}
