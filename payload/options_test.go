package payload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/usage"
)

// TestSpecOptionsDefaults: a format left without a layout takes the
// paper's packet for the vote formats and worker-major for the integer-sum
// ones, and an empty gate is the paper's 2-of-3 pattern.
func TestSpecOptionsDefaults(t *testing.T) {
	for _, c := range []struct {
		format string
		layout lowbit.Layout
	}{
		{"g-binary", lowbit.ElementMajor},
		{"g-ternary", lowbit.ElementMajor},
		{"int8", lowbit.WorkerMajor},
		{"bfp8", lowbit.WorkerMajor},
	} {
		s, err := SpecOptions{Format: c.format}.Spec(4)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		if s.Layout != c.layout || s.Workers != 4 {
			t.Errorf("%s: layout %v, workers %d; want %v, 4", c.format, s.Layout, s.Workers, c.layout)
		}
		if s.Format == lowbit.Ternary && s.Gate != lowbit.PaperGate {
			t.Errorf("%s: gate %v; want the paper's", c.format, s.Gate)
		}
	}
}

// TestSpecOptionsRefusals: each request that is wrong in itself is a usage
// error naming the option.
func TestSpecOptionsRefusals(t *testing.T) {
	for _, c := range []struct {
		o    SpecOptions
		w    int
		want string
	}{
		{SpecOptions{Format: "fp32"}, 4, "fp32 has no packed payload"},
		{SpecOptions{Format: "nope"}, 4, "--format"},
		{SpecOptions{Format: "g-binary", Layout: "diagonal"}, 4, "--layout"},
		{SpecOptions{Format: "int8", Layout: "element-major"}, 4, "worker-major"},
		{SpecOptions{Format: "g-ternary", Gate: "pattern:0"}, 4, "pattern:0"},
		// |2c - W| <= W = 4, so margin:5 zeroes everything; margin:4 can pass (c = 0 or 4).
		{SpecOptions{Format: "g-ternary", Gate: "margin:5"}, 4, "margin:5"},
	} {
		_, err := c.o.Spec(c.w)
		if err == nil || !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want a usage error naming %q", c.o, err, c.want)
		}
	}
	if _, err := (SpecOptions{Format: "g-ternary", Gate: "margin:4"}).Spec(4); err != nil {
		t.Errorf("margin:4 at W = 4: %v", err)
	}
	if err := (SpecOptions{Workers: -1}).CheckWorkers(); err == nil || !usage.Is(err) {
		t.Errorf("workers -1: %v; want a usage error", err)
	}
}

// TestAggregateModes reads a hand-made raw packet file (W = 3) under each
// mode name: counts by hand, a ternary vote under the pattern gate zeroing
// every third flattened element, and sum/mean refused for a vote file.
func TestAggregateModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.bin")
	if err := os.WriteFile(path, []byte{0b000, 0b001, 0b011, 0b111}, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadRawPackets(path, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode string
		want []int64
	}{
		{"", []int64{0, 1, 2, 3}},
		{ModeCounts, []int64{0, 1, 2, 3}},
		{ModeBinary, []int64{-1, -1, 1, 1}},
		{ModeTernary, []int64{-1, -1, 0, 1}}, // element 2 is the gate's third
	} {
		v, err := f.Aggregate("p.bin", c.mode, "")
		if err != nil {
			t.Fatalf("mode %q: %v", c.mode, err)
		}
		for i, w := range c.want {
			if got := v.At(i); got != w {
				t.Errorf("mode %q element %d: %d, want %d", c.mode, i, got, w)
			}
		}
	}
	for _, m := range []string{ModeSum, ModeMean} {
		if _, err := f.Aggregate("p.bin", m, ""); err == nil || !usage.Is(err) || !strings.Contains(err.Error(), "p.bin") {
			t.Errorf("mode %s on a vote file: %v; want a usage error naming the file", m, err)
		}
	}
	if err := CheckMode("bogus"); err == nil || !usage.Is(err) {
		t.Errorf("mode bogus: %v; want a usage error", err)
	}
	if err := (SpecOptions{Format: "g-ternary"}).Match("p.bin", f); err == nil || !strings.Contains(err.Error(), "--format") {
		t.Errorf("Match g-ternary against a G-Binary file: %v", err)
	}
}
