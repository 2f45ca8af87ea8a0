package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/report"
)

// synthResult is a test unit's typed result.
type synthResult struct {
	Key   string    `json:"key"`
	Value float64   `json:"value"`
	Rows  []float64 `json:"rows"`
}

// synthBlock is a block of n units; unit fail (if >= 0) fails. Its layout
// prints each unit's value in unit order, so a merge that reordered or lost
// units would show in the bytes.
func synthBlock(name string, n, fail int) Block {
	return NewBlock(Spec[synthResult]{
		Name: name, Title: "synthetic " + name, Order: 1,
		Units: func(cfg Config) ([]Unit[synthResult], error) {
			var us []Unit[synthResult]
			for i := range n {
				key := fmt.Sprintf("seed%d/u%d", cfg.Seed, i)
				us = append(us, Unit[synthResult]{Key: key, Run: func(context.Context, Config) (synthResult, error) {
					if i == fail {
						return synthResult{}, errors.New("boom")
					}
					return synthResult{Key: key, Value: 1 / float64(i+3), Rows: []float64{float64(i), 0.1 * float64(i)}}, nil
				}})
			}
			return us, nil
		},
		Layout: func(_ Config, rs []synthResult) (*report.Result, error) {
			t := report.Table{Name: name, Columns: []string{"key", "value"}}
			for _, r := range rs {
				t.AddRow(r.Key, r.Value)
			}
			// One ledger row from the units' values, so that a merge which
			// lost or reordered units changes the ledger too.
			sum := 0.0
			for _, r := range rs {
				sum += r.Value
			}
			c := report.Claim{Section: "Sec. 0", Name: name + " sums its units", Paper: "-", Ours: report.FormatFloat(sum),
				Criterion: "sum > 0", Verdict: report.VerdictHolds}
			return &report.Result{Tables: []report.Table{t}, Data: rs, Claims: []report.Claim{c}}, nil
		},
	})
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	m := map[string][]byte{}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "shard-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = b
	}
	return m
}

// TestMergedShardsEqualSingleRun runs synthetic blocks (one with a failing
// unit) once, then as 1, 3 and 7 shards
// (more shards than units leaves some empty), merges each and compares
// every file byte for byte.
func TestMergedShardsEqualSingleRun(t *testing.T) {
	bs := []Block{synthBlock("alpha", 4, -1), synthBlock("beta", 2, 1)}
	lookup := func(names []string) ([]Block, error) {
		if len(names) != len(bs) {
			return nil, fmt.Errorf("names %v", names)
		}
		return bs, nil
	}
	ctx := context.Background()
	cfg := Config{Seed: 3}
	single := t.TempDir()
	if _, err := Run(ctx, bs, cfg, single, nil); err == nil || !strings.Contains(err.Error(), "beta") {
		t.Fatalf("single run: %v, want beta to fail", err)
	}
	want := readDir(t, single)
	if len(want) < 5 || !bytes.Contains(want["REPORT.md"], []byte("FAILED: seed3/u1: boom")) {
		t.Fatalf("single run wrote %d files; REPORT.md:\n%s", len(want), want["REPORT.md"])
	}
	for _, n := range []int{1, 3, 7} {
		dir := t.TempDir()
		for i := range n {
			if _, err := RunShard(ctx, bs, cfg, Shard{i, n}, dir, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := t.TempDir()
		if _, err := merge([]string{dir}, out, nil, lookup); err == nil {
			t.Errorf("n=%d: merge did not report the failed block", n)
		}
		got := readDir(t, out)
		if len(got) != len(want) {
			t.Errorf("n=%d: merge wrote %d files, single run %d", n, len(got), len(want))
		}
		for name, w := range want {
			if !bytes.Equal(got[name], w) {
				t.Errorf("n=%d: %s differs from the single run", n, name)
			}
		}
	}
}

func TestMergeRejectsIncompleteOrMixedShards(t *testing.T) {
	bs := []Block{synthBlock("alpha", 3, -1)}
	lookup := func([]string) ([]Block, error) { return bs, nil }
	ctx := context.Background()
	write := func(dir string, cfg Config, s Shard) {
		if _, err := RunShard(ctx, bs, cfg, s, dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	a, b := t.TempDir(), t.TempDir()
	write(a, Config{Seed: 1}, Shard{0, 2})
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"missing", []string{a}, "missing shard(s) 1 of 2"},
		{"empty", []string{t.TempDir()}, "no shard-I-of-N.json"},
	} {
		if _, err := merge(tc.dirs, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	write(b, Config{Seed: 2}, Shard{1, 2})
	if _, err := merge([]string{a, b}, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), "different runs") {
		t.Errorf("mixed seeds: %v", err)
	}
	write(b, Config{Seed: 1, Tier: TierStandard}, Shard{1, 2})
	if _, err := merge([]string{a, b}, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), "different runs") {
		t.Errorf("mixed tiers (quick and standard): %v", err)
	}
	write(b, Config{Seed: 1, Seeds: 7}, Shard{1, 2})
	if _, err := merge([]string{a, b}, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), "different runs") {
		t.Errorf("mixed seed counts (the tier's and --seeds 7): %v", err)
	}
	write(b, Config{Seed: 1}, Shard{1, 2})
	if _, err := merge([]string{a, b}, t.TempDir(), nil, lookup); err != nil {
		t.Errorf("complete shards: %v", err)
	}
	if _, err := merge([]string{a, b, b}, t.TempDir(), nil, lookup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("shard given twice: %v", err)
	}
	for _, s := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
}

// TestResultsMustRoundTrip: results are compared by value after a JSON
// round trip (keys in any order pass, see TestMergeReencodedShards), and
// a value the result type cannot hold exactly is refused with its path: an
// interface field decodes a 64-bit integer past float64's precision
// (2^63 + 1) as the float 2^63.
func TestResultsMustRoundTrip(t *testing.T) {
	type loose struct {
		V any `json:"v"`
	}
	b := NewBlock(Spec[loose]{Name: "loose", Units: func(Config) ([]Unit[loose], error) {
		return []Unit[loose]{{Key: "one", Run: func(context.Context, Config) (loose, error) {
			return loose{V: uint64(1<<63 + 1)}, nil
		}}}, nil
	}, Layout: func(Config, []loose) (*report.Result, error) { return &report.Result{}, nil }})
	outs, _ := Run(context.Background(), []Block{b}, Config{}, t.TempDir(), nil)
	if len(outs) != 1 || outs[0].Err == nil || !strings.Contains(outs[0].Err.Error(), "result.v") {
		t.Fatalf("outcome %+v", outs)
	}
	dup := NewBlock(Spec[loose]{Name: "dup", Units: func(Config) ([]Unit[loose], error) {
		run := func(context.Context, Config) (loose, error) { return loose{}, nil }
		return []Unit[loose]{{Key: "k", Run: run}, {Key: "k", Run: run}}, nil
	}, Layout: func(Config, []loose) (*report.Result, error) { return &report.Result{}, nil }})
	if _, err := RunShard(context.Background(), []Block{dup}, Config{}, Shard{0, 1}, t.TempDir(), nil); err == nil {
		t.Error("duplicate unit keys accepted")
	}
}

// FuzzMergeShard feeds arbitrary shard files to the merge: it must fail
// with an error, never panic, and when it succeeds every unit is there.
func FuzzMergeShard(f *testing.F) {
	bs := []Block{synthBlock("alpha", 2, -1)}
	lookup := func([]string) ([]Block, error) { return bs, nil }
	seed := f.TempDir()
	if _, err := RunShard(context.Background(), bs, Config{Seed: 1}, Shard{0, 1}, seed, nil); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(seed, "shard-0-of-1.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format":"nfabric-shard/3","config":{"tier":"quick","seed":1},"blocks":["alpha"],"shard":0,"of":1,"units":[]}`))
	f.Add([]byte(`{"format":"nfabric-shard/3","config":{"tier":"quick","seed":1},"blocks":["alpha"],"shard":0,"of":1,"binary":{"build":"x"},"units":[{"block":"alpha","key":"seed1/u0","result":{"key":"k","value":1e400}}]}`))
	f.Add([]byte(`{"format":"nfabric-shard/3","config":{"tier":"medium","seed":1},"blocks":["alpha"],"shard":0,"of":1,"units":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Each input is tried as it is and, when it decodes, with its
		// checksum restamped, so that the fuzzer reaches past the checksum.
		for _, d := range [][]byte{data, restamp(data)} {
			if d == nil {
				continue
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "shard-0-of-1.json"), d, 0o644); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if _, err := merge([]string{dir}, out, nil, lookup); err != nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(out, "alpha.json")); err != nil {
				t.Errorf("merge succeeded without writing the block: %v", err)
			}
		}
	})
}

// restamp returns data with its "checksum" set to the checksum of what
// it decodes to, or nil when it does not decode as a shard.
func restamp(data []byte) []byte {
	var f shardFile
	var m map[string]any
	if json.Unmarshal(data, &f) != nil || json.Unmarshal(data, &m) != nil || m == nil {
		return nil
	}
	sum, err := shardChecksum(f)
	if err != nil {
		return nil
	}
	m["checksum"] = sum
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}
