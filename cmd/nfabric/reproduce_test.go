package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		{[]string{"report"}, 2},
		{[]string{"report", "merge", filepath.Join(dir, "nothing-here")}, 1},
		{[]string{"report", "merge", single}, 1}, // no shard files
	} {
		if code, _, stderr := nfabric(t, c.args...); code != c.code {
			t.Errorf("nfabric %v: exit %d, want %d (%s)", c.args, code, c.code, stderr)
		}
	}
}
