package experiments

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzSavedRuns feeds arbitrary files to the saved-runs reader of `train
// validated|boundary --runs`: it must return runs or an error naming the
// file, never panic, and every run it returns must be one whose
// consistency check runs to an answer.
func FuzzSavedRuns(f *testing.F) {
	if !testing.Short() {
		f.Add(mustRead(f, saveStudy(f, tinyBoundary(), 1, 1)))
	}
	f.Add([]byte(`{"block":"training-boundary","title":"x","tables":[],"passed":0,"failed":0,"data":[{"study":"boundary","label":"FP32 all","policy":"fp32","seed":1}]}`))
	f.Add([]byte(`{"data":[{"config":{"hidden":[8,8]},"result":{"epochs":[{"epoch":1,"val_acc":7}],"final_acc":7}}]}`))
	f.Add([]byte(`{"data": [], "data": [{}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "runs.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		runs, err := readRunsFile(p)
		if err != nil {
			return
		}
		for _, r := range runs {
			_ = r.CheckConsistent()
		}
	})
}

func mustRead(tb testing.TB, p string) []byte {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
