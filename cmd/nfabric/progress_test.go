package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncodeProgressLeavesOutputAlone checks that progress lines go to
// stderr only: the payload file and stdout are byte-identical with and
// without --quiet, and -o - writes the file's bytes to stdout.
func TestEncodeProgressLeavesOutputAlone(t *testing.T) {
	saved := progressMin
	progressMin = 1
	defer func() { progressMin = saved }()
	dir := t.TempDir()
	in := filepath.Join(dir, "g.f32")
	if code, _, stderr := nfabric(t, "payload", "random", "--workers", "2", "--elements", "5000", "-o", in); code != 0 {
		t.Fatalf("random: exit %d: %s", code, stderr)
	}
	for _, layout := range []string{"element-major", "worker-major"} {
		var files [2][]byte
		var stdouts [2]string
		for i, extra := range [][]string{nil, {"--quiet"}} {
			out := filepath.Join(dir, layout+".nfp")
			args := append([]string{"payload", "encode", "--workers", "2", "--layout", layout,
				"--format", "g-ternary", "--gate", "worker", "--tau", "0.5", "-o", out, in}, extra...)
			code, stdout, stderr := nfabric(t, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			if hasProgress := strings.Contains(stderr, "%"); hasProgress == (extra != nil) {
				t.Errorf("%v: progress on stderr = %v: %q", args, hasProgress, stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			files[i], stdouts[i] = b, stdout
		}
		if !bytes.Equal(files[0], files[1]) || stdouts[0] != stdouts[1] {
			t.Errorf("%s: output differs with and without progress", layout)
		}
		code, stdout, stderr := nfabric(t, "payload", "encode", "--workers", "2", "--layout", layout,
			"--format", "g-ternary", "--gate", "worker", "--tau", "0.5", "-o", "-", in)
		if code != 0 || stdout != string(files[0]) {
			t.Errorf("%s: -o - with progress: exit %d, stdout differs from the file (%s)", layout, code, stderr)
		}
	}
}

// TestAggregateProgressLeavesOutputAlone checks that aggregate's progress
// lines go to stderr only: raw and CSV outputs are byte-identical with and
// without --quiet.
func TestAggregateProgressLeavesOutputAlone(t *testing.T) {
	saved := progressMin
	progressMin = 1
	defer func() { progressMin = saved }()
	dir := t.TempDir()
	in, nfp := filepath.Join(dir, "g.f32"), filepath.Join(dir, "g.nfp")
	if code, _, stderr := nfabric(t, "payload", "random", "--workers", "3", "--elements", "70000", "-o", in); code != 0 {
		t.Fatalf("random: exit %d: %s", code, stderr)
	}
	if code, _, stderr := nfabric(t, "payload", "encode", "-q", "--workers", "3", "-o", nfp, in); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, stderr)
	}
	for _, outFmt := range []string{"raw", "csv"} {
		var files [2][]byte
		for i, extra := range [][]string{nil, {"--quiet"}} {
			out := filepath.Join(dir, "agg."+outFmt)
			args := append([]string{"payload", "aggregate", "--mode", "ternary", "--out-format", outFmt, "-o", out, nfp}, extra...)
			code, _, stderr := nfabric(t, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			if hasProgress := strings.Contains(stderr, "100%"); hasProgress == (extra != nil) {
				t.Errorf("%v: progress on stderr = %v: %q", args, hasProgress, stderr)
			}
			if files[i], _ = os.ReadFile(out); len(files[i]) == 0 {
				t.Fatalf("%v: empty output", args)
			}
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Errorf("%s: output differs with and without progress", outFmt)
		}
	}
}
