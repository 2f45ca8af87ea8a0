package experiments

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/report"
)

// readDir reads every file of dir but the shard files, by base name.
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

// TestMergedShardsEqualSingleRun runs the real payload and collective
// blocks once, then as 3 shards, merges them through the registry
// (run.Merge looks the blocks up by name) and compares every file byte
// for byte. The framework's own tests cover other shard counts.
func TestMergedShardsEqualSingleRun(t *testing.T) {
	bs, err := run.Select([]string{"payload", "collective"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := run.Config{Seed: 3}
	single := t.TempDir()
	if _, err := run.Run(ctx, bs, cfg, single, nil); err != nil {
		t.Fatalf("single run: %v", err)
	}
	want := readDir(t, single)
	if len(want) < 2*len(bs)+3 {
		t.Fatalf("single run wrote %d files", len(want))
	}
	for _, n := range []int{3} {
		dir := t.TempDir()
		for i := range n {
			if _, err := run.RunShard(ctx, bs, cfg, run.Shard{Index: i, Of: n}, dir, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := t.TempDir()
		if _, err := run.Merge([]string{dir}, out, nil); err != nil {
			t.Fatalf("n=%d: merge: %v", n, err)
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

// TestRunJobsRealBlocks runs cheap real blocks (payload, collective and,
// unless -short, netcheck with its ns-3 run when ns-3 is installed) and a
// small hardware subset (tool versions, one co-simulation, two syntheses)
// with one job and with three, and compares every file written.
func TestRunJobsRealBlocks(t *testing.T) {
	names := []string{"payload", "collective", "netcheck"}
	if testing.Short() {
		names = []string{"payload", "collective"}
	}
	bs, err := run.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	bs = append(bs, smallHardwareBlock())
	run := func(jobs int) string {
		dir := t.TempDir()
		if _, err := run.Run(context.Background(), bs, run.Config{Seed: 5, Jobs: jobs}, dir, nil); err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		return dir
	}
	a, b := run(1), run(3)
	files, _ := filepath.Glob(filepath.Join(a, "*"))
	if len(files) < 2*len(bs)+2 {
		t.Fatalf("only %d files written", len(files))
	}
	for _, f := range files {
		x, _ := os.ReadFile(f)
		y, err := os.ReadFile(filepath.Join(b, filepath.Base(f)))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between --jobs 1 and --jobs 3", filepath.Base(f))
		}
	}
}

// smallHardwareBlock is the hardware block cut down to a few seconds: the
// tool versions, Icarus on 64 bits, Debian's Yosys on 64 bits and the
// fallback layout, no routes (each unit says "skipped" without its tool).
func smallHardwareBlock() run.Block {
	o := QuickHardware(1)
	o.Widths, o.Stages, o.SplitStages, o.SweepWidth = []int{64}, nil, nil, 64
	o.Yosys, o.Parts, o.Vectors = []string{"debian"}, nil, 100
	return run.NewBlock(run.Spec[HardwareUnit]{Name: "hardware", Title: hardwareTitle, Order: 60,
		Units: func(run.Config) ([]run.Unit[HardwareUnit], error) {
			us, err := HardwareUnits(o)
			var small []run.Unit[HardwareUnit]
			for _, u := range us {
				if !strings.HasPrefix(u.Key, "cosim/") || u.Key == "cosim/icarus/w64" {
					small = append(small, u)
				}
			}
			return small, err
		},
		Layout: func(_ run.Config, us []HardwareUnit) (*report.Result, error) { return HardwareLayout(o, us) },
	})
}
