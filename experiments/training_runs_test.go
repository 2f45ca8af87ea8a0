package experiments

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/train"
)

// savedRuns writes the given (row, seed) runs of o's study as a study
// command's JSON would hold them and returns the file.
func savedRuns(t *testing.T, dir, name string, o TrainOptions, seeds []uint64, epochs int) string {
	t.Helper()
	rows, err := studyRows(StudyBoundary, o)
	if err != nil {
		t.Fatal(err)
	}
	var runs []TrainRun
	for _, r := range rows {
		for _, s := range seeds {
			runs = append(runs, TrainRun{Study: StudyBoundary, Label: r.label, Policy: r.policy.String(), Seed: s,
				Data: DataInfo{Train: o.TrainN, Test: o.TestN}, Result: train.Result{History: train.History{Epochs: make([]train.EpochStat, epochs)}}})
		}
	}
	b, err := json.Marshal(map[string]any{"block": "training-boundary", "data": runs})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStudyRunsFrom lays seeds 1-2 and 3-5 saved by two commands out as
// one five-seed study, in RunStudy's order (policy-major, seeds rising),
// and refuses a duplicate, a missing seed, an extra seed and another budget.
func TestStudyRunsFrom(t *testing.T) {
	o := BoundaryOptions(run.TierQuick, 1)
	o.Seeds, o.Seed, o.Epochs, o.TrainN, o.TestN = 5, 1, 4, 100, 50
	dir := t.TempDir()
	a := savedRuns(t, dir, "a.json", o, []uint64{1, 2}, 4)
	b := savedRuns(t, dir, "b.json", o, []uint64{3, 4, 5}, 4)
	got, err := StudyRunsFrom(StudyBoundary, o, []string{b, a})
	if err != nil {
		t.Fatal(err)
	}
	us, _ := StudyUnits(StudyBoundary, o)
	if len(got) != len(us) {
		t.Fatalf("%d runs, want %d", len(got), len(us))
	}
	for i, u := range us {
		if k := fmt.Sprintf("%s/%s/seed%d", got[i].Study, got[i].Policy, got[i].Seed); k != u.Key {
			t.Fatalf("run %d is %s, want %s (RunStudy's order)", i, k, u.Key)
		}
	}
	for _, tt := range []struct {
		name  string
		files func() []string
		want  string
	}{
		{"duplicate", func() []string { return []string{a, a, b} }, "is also in"},
		{"missing", func() []string { return []string{a} }, "lack"},
		{"extra", func() []string { return []string{a, b, savedRuns(t, dir, "c.json", o, []uint64{6}, 4)} }, "not among the runs asked for"},
		{"budget", func() []string { return []string{a, savedRuns(t, dir, "d.json", o, []uint64{3, 4, 5}, 3)} }, "3 epochs"},
		{"not a study", func() []string {
			p := filepath.Join(dir, "e.json")
			os.WriteFile(p, []byte(`{"data": []}`), 0o644)
			return []string{p}
		}, "no runs"},
	} {
		_, err := StudyRunsFrom(StudyBoundary, o, tt.files())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}
