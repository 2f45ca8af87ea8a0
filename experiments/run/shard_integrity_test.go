package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/report"
)

// checkedResult is a unit result whose match flag repeats its mismatch
// count, as cxl's functional rows do.
type checkedResult struct {
	Mismatches int  `json:"mismatches"`
	Match      bool `json:"match"`
}

func (r checkedResult) CheckConsistent() error {
	if r.Mismatches < 0 || r.Match != (r.Mismatches == 0) {
		return fmt.Errorf("mismatches %d with match %v", r.Mismatches, r.Match)
	}
	return nil
}

func checkedBlock() Block {
	return NewBlock(Spec[checkedResult]{Name: "checked", Title: "checked", Order: 1,
		Units: func(Config) ([]Unit[checkedResult], error) {
			return []Unit[checkedResult]{{Key: "u0", Run: func(context.Context, Config) (checkedResult, error) {
				return checkedResult{Match: true}, nil
			}}}, nil
		},
		Layout: func(_ Config, rs []checkedResult) (*report.Result, error) {
			return &report.Result{Data: rs}, nil
		}})
}

// editShard decodes the shard at p, lets edit change it, and writes it
// back; restamp recomputes the checksum, as a deliberate forger would.
func editShard(t *testing.T, p string, restamp bool, edit func(f *shardFile)) {
	t.Helper()
	var f shardFile
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	edit(&f)
	if restamp {
		if f.Checksum, err = shardChecksum(f); err != nil {
			t.Fatal(err)
		}
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMergeChecksShardIntegrity: a shard carries the program that ran it
// and a checksum of its content; the merge refuses a changed value, a
// shard of another program, and a result whose redundant fields disagree
// (a row saying mismatches 5 and match true), each with an error naming
// what is wrong; the untouched shards merge.
func TestMergeChecksShardIntegrity(t *testing.T) {
	bs := []Block{checkedBlock()}
	lookup := func([]string) ([]Block, error) { return bs, nil }
	fresh := func() (dir, path string) {
		dir = t.TempDir()
		p, err := RunShard(context.Background(), bs, Config{Seed: 1}, Shard{0, 1}, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return dir, p
	}
	dir, p := fresh()
	raw, _ := os.ReadFile(p)
	var f shardFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if me := ThisBinary(); f.Binary != me || !strings.HasPrefix(f.Checksum, "sha256:") || len(me.Build) != 64 && me.Build != "none" {
		t.Fatalf("shard binary %+v checksum %q; this program %+v", f.Binary, f.Checksum, me)
	}
	outs, err := merge([]string{dir}, t.TempDir(), nil, lookup)
	if err != nil || outs[0].Err != nil {
		t.Fatalf("untouched shard: %v %v", err, outs)
	}

	tamper := func(f *shardFile) { f.Units[0].Result = json.RawMessage(`{"mismatches":5,"match":true}`) }
	dir, p = fresh()
	editShard(t, p, false, tamper)
	if _, err := merge([]string{dir}, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("changed value, old checksum: %v", err)
	}

	dir, p = fresh()
	editShard(t, p, true, tamper)
	outs, err = merge([]string{dir}, t.TempDir(), nil, lookup)
	if err == nil || len(outs) != 1 || outs[0].Err == nil || !strings.Contains(outs[0].Err.Error(), "checked: unit u0: inconsistent result: mismatches 5 with match true") {
		t.Errorf("mismatches 5 and match true, checksum restamped: %v, %v", err, outs)
	}

	for _, tc := range []struct {
		name string
		edit func(b *Binary)
		want string
	}{
		{"another build", func(b *Binary) { b.Build = strings.Repeat("0", 64) }, "was run by another program than this merge: build 000000000000"},
		{"another executable", func(b *Binary) { b.Executable = strings.Repeat("1", 64) }, "executable 111111111111"},
	} {
		dir, p = fresh()
		editShard(t, p, true, func(f *shardFile) { tc.edit(&f.Binary) })
		if _, err := merge([]string{dir}, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// TestSameProgram: the build must match; the executable's bytes must too,
// unless both builds are of the same clean VCS revision.
func TestSameProgram(t *testing.T) {
	a := Binary{Build: "b1", Executable: "e1"}
	for _, tc := range []struct {
		name       string
		x, y       Binary
		wantRefuse bool
	}{
		{"identical", a, a, false},
		{"other build", a, Binary{Build: "b2", Executable: "e1"}, true},
		{"other executable, modified tree", a, Binary{Build: "b1", Executable: "e2"}, true},
		{"other executable, clean revision", Binary{Build: "b1", Executable: "e1", Clean: true}, Binary{Build: "b1", Executable: "e2", Clean: true}, false},
		{"unreadable executables", Binary{Build: "b1", Executable: "unreadable: x"}, Binary{Build: "b1", Executable: "unreadable: x"}, true},
	} {
		if got := tc.x.sameProgram(tc.y) != ""; got != tc.wantRefuse {
			t.Errorf("%s: refused %v, want %v (%s)", tc.name, got, tc.wantRefuse, tc.x.sameProgram(tc.y))
		}
	}
}

// TestCanonicalJSON: one spelling per value, whatever tool wrote it.
func TestCanonicalJSON(t *testing.T) {
	for _, pair := range [][2]string{
		{`{"b":[1e-05,3],"a":"\u0041"}`, `{"a":"A","b":[0.00001,3.0]}`},
		{`{"x":0.1}`, `{"x":0.10000000000000001}`},
		{`{"x":18446744073709551615}`, `{"x": 18446744073709551615 }`},
	} {
		var c [2]string
		for i, s := range pair {
			var v any
			if err := decodeNumbers([]byte(s), &v); err != nil {
				t.Fatal(err)
			}
			b, err := canonicalJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			c[i] = string(b)
		}
		if c[0] != c[1] {
			t.Errorf("%s and %s canonicalise to %s and %s", pair[0], pair[1], c[0], c[1])
		}
	}
	var v1, v2 any
	decodeNumbers([]byte(`{"x":9007199254740993}`), &v1)
	decodeNumbers([]byte(`{"x":9007199254740992}`), &v2)
	a, _ := canonicalJSON(v1)
	b, _ := canonicalJSON(v2)
	if string(a) == string(b) {
		t.Errorf("distinct integers beyond float64 precision canonicalise alike: %s", a)
	}
}
