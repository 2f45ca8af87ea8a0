package experiments

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
)

// TestSameSeedSameBytes runs cheap blocks with GOMAXPROCS 1 and the
// default and compares every file written, byte for byte. The timing
// block, whose ddr5 pairs are now the mean of 8 refresh schedules (about 3
// CPU-minutes a run), is checked at the level of its drivers instead, on
// small configurations: TestTable4Determinism here, TestRunPairsDeterminism
// and TestPhasedPairDeterminism in package timing.
func TestSameSeedSameBytes(t *testing.T) {
	bs, err := run.Select([]string{"payload", "collective"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dir := t.TempDir()
		if _, err := run.Run(context.Background(), bs, run.Config{Seed: 7}, dir, nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b := run(1), run(runtime.NumCPU()+1)
	files, _ := filepath.Glob(filepath.Join(a, "*"))
	if len(files) < 5 {
		t.Fatalf("only %d files written", len(files))
	}
	for _, f := range files {
		x, _ := os.ReadFile(f)
		y, err := os.ReadFile(filepath.Join(b, filepath.Base(f)))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between GOMAXPROCS 1 and %d", filepath.Base(f), runtime.NumCPU()+1)
		}
	}
}
