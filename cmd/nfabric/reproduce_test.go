package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two shards of reproduce, merged, write the single run's files byte for
// byte.
func TestReproduceShardsMerge(t *testing.T) {
	dir := t.TempDir()
	single, shards, merged := filepath.Join(dir, "single"), filepath.Join(dir, "shards"), filepath.Join(dir, "merged")
	only := "functional,collective"
	if code, _, stderr := nfabric(t, "reproduce", "--only", only, "--out", single); code != 0 {
		t.Fatalf("single run: exit %d: %s", code, stderr)
	}
	for _, s := range []string{"0/2", "1/2"} {
		if code, _, stderr := nfabric(t, "reproduce", "--only", only, "--shard", s, "--out", shards); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", s, code, stderr)
		}
	}
	if code, _, stderr := nfabric(t, "report", "merge", shards, "--out", merged); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(single, "*"))
	if len(files) < 6 {
		t.Fatalf("single run wrote %d files", len(files))
	}
	for _, f := range files {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(merged, filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: merged shards differ from the single run (%v)", filepath.Base(f), err)
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"reproduce", "--shard", "2/2", "--only", "collective"}, 2},
		{[]string{"reproduce", "--shard", "x", "--only", "collective"}, 2},
		{[]string{"report", "merge"}, 2},
		{[]string{"report"}, 0}, // a bare group prints its help
		{[]string{"report", "merge", filepath.Join(dir, "nothing-here")}, 1},
		{[]string{"report", "merge", single}, 1}, // no shard files
	} {
		if code, _, stderr := nfabric(t, c.args...); code != c.code {
			t.Errorf("nfabric %v: exit %d, want %d (%s)", c.args, code, c.code, stderr)
		}
	}
}

// reproduce --jobs 1 and --jobs 3 write the same files byte for byte (the
// payload block's 22 single-core units run three at a time), the progress
// names each block's CPU time with one job, and a negative --jobs is a
// usage error.
func TestReproduceJobs(t *testing.T) {
	dir := t.TempDir()
	outs := map[string]string{"1": filepath.Join(dir, "one"), "3": filepath.Join(dir, "three")}
	for jobs, out := range outs {
		code, _, stderr := nfabric(t, "reproduce", "--only", "payload,collective", "--jobs", jobs, "--out", out)
		if code != 0 {
			t.Fatalf("--jobs %s: exit %d: %s", jobs, code, stderr)
		}
		if want := "of CPU ("; !strings.Contains(stderr, want) {
			t.Errorf("--jobs %s: stderr lacks the CPU summary %q: %s", jobs, want, stderr)
		}
		if jobs == "1" && !strings.Contains(stderr, "[1/2] payload: ok, done in ") {
			t.Errorf("--jobs 1: no done line for payload: %s", stderr)
		}
	}
	files, _ := filepath.Glob(filepath.Join(outs["1"], "*"))
	if len(files) < 6 {
		t.Fatalf("--jobs 1 wrote %d files", len(files))
	}
	for _, f := range files {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(outs["3"], filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: --jobs 3 differs from --jobs 1 (%v)", filepath.Base(f), err)
		}
	}
	if code, _, stderr := nfabric(t, "reproduce", "--only", "collective", "--jobs", "-1", "--out", filepath.Join(dir, "bad")); code != 2 {
		t.Errorf("--jobs -1: exit %d, want 2 (%s)", code, stderr)
	}
}

// reproduce --list counts each block's units and estimated CPU time, and
// --seeds N changes the seeded blocks' unit counts by their rows: the
// quick training block is 4 validated and 8 boundary rows of 3 seeds
// (36 units), 60 units at 5 seeds; with --shard the parts' estimates sum
// to the block's.
func TestReproduceListSeeds(t *testing.T) {
	units := func(args ...string) string {
		code, out, stderr := nfabric(t, append([]string{"reproduce", "--list", "--only", "training"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return out
	}
	if out := units(); !strings.Contains(out, "training      36 units") {
		t.Errorf("quick:\n%s", out)
	}
	if out := units("--seeds", "5"); !strings.Contains(out, "training      60 units") {
		t.Errorf("--seeds 5:\n%s", out)
	}
	out := units("--seeds", "5", "--shard", "1/3")
	if strings.Count(out, "\nshard ") != 3 || !strings.Contains(out, "shard 1/3 runs:") {
		t.Errorf("--shard 1/3:\n%s", out)
	}
}
