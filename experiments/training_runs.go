package experiments

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/neuronfabric/nfabric/report"
)

// maxRunsFile bounds one saved study file read by StudyRunsFrom: a
// study's JSON with every curve and diagnostic is a few MiB.
const maxRunsFile = 256 << 20

// StudyRunsFrom reads a study's runs from the JSON files earlier study
// commands wrote (`nfabric train validated|boundary --out DIR` writes
// DIR/training-STUDY.json, whose data are its runs), so that seeds trained
// at different times or on different machines (`--seed 1 --seeds 2` here,
// `--seed 3 --seeds 3` there) are laid out as one study of o.Seeds seeds.
// The runs must be study's and must cover o's rows and seeds exactly, each
// (policy, seed) once, on o's data and budget; they are returned in the
// order RunStudy returns them, so the layout is the one a single run gives.
func StudyRunsFrom(study string, o TrainOptions, paths []string) ([]TrainRun, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no saved runs given")
	}
	us, err := StudyUnits(study, o)
	if err != nil {
		return nil, err
	}
	byKey := map[string]TrainRun{}
	from := map[string]string{}
	for _, p := range paths {
		runs, err := readRunsFile(p)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Study != study {
				return nil, fmt.Errorf("%s: a run of study %q, not %q", p, r.Study, study)
			}
			key := fmt.Sprintf("%s/%s/seed%d", r.Study, r.Policy, r.Seed)
			if q, dup := from[key]; dup {
				return nil, fmt.Errorf("%s: %s seed %d is also in %s", p, r.Label, r.Seed, q)
			}
			if err := o.matches(r); err != nil {
				return nil, fmt.Errorf("%s: %s seed %d: %w", p, r.Label, r.Seed, err)
			}
			byKey[key], from[key] = r, p
		}
	}
	out := make([]TrainRun, 0, len(us))
	var missing []string
	for _, u := range us {
		r, ok := byKey[u.Key]
		if !ok {
			missing = append(missing, u.Key)
			continue
		}
		out = append(out, r)
		delete(byKey, u.Key)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the saved runs lack %d of the %d runs asked for: %s", len(missing), len(us), strings.Join(missing, ", "))
	}
	for k := range byKey {
		return nil, fmt.Errorf("%s: %s is not among the runs asked for (check --seed, --seeds and the rows)", from[k], k)
	}
	return out, nil
}

// matches checks that a saved run was trained on o's data and budget.
func (o TrainOptions) matches(r TrainRun) error {
	if got, want := len(r.Result.Epochs), o.Epochs; got != want {
		return fmt.Errorf("%d epochs, the options ask for %d", got, want)
	}
	if o.TrainN > 0 && r.Data.Train != o.TrainN {
		return fmt.Errorf("%d training images, the options ask for %d", r.Data.Train, o.TrainN)
	}
	if o.TestN > 0 && r.Data.Test != o.TestN {
		return fmt.Errorf("%d test images, the options ask for %d", r.Data.Test, o.TestN)
	}
	want := ""
	if !o.Schedule.IsConstant() {
		want = o.Schedule.String()
	}
	if got := r.Result.Schedule; got != want {
		name := func(s string) string { return cmp.Or(s, "constant") }
		return fmt.Errorf("learning-rate schedule %s, the options ask for %s", name(got), name(want))
	}
	return nil
}

// readRunsFile decodes one saved study's runs.
func readRunsFile(p string) ([]TrainRun, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("saved runs: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("saved runs %s: not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRunsFile+1))
	if err != nil {
		return nil, fmt.Errorf("saved runs %s: %w", p, err)
	}
	if len(b) > maxRunsFile {
		return nil, fmt.Errorf("saved runs %s: larger than %d MiB", p, maxRunsFile>>20)
	}
	var saved struct {
		Data []TrainRun `json:"data"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("saved runs %s: %w", p, err)
	}
	if len(saved.Data) == 0 {
		return nil, fmt.Errorf("saved runs %s: no runs in its data (want a study's JSON from 'nfabric train validated|boundary --out')", p)
	}
	return saved.Data, nil
}

// SavedStudy lays out a study from saved runs (StudyRunsFrom) exactly as
// Validated or Boundary lays out the runs it trains.
func SavedStudy(study string, o TrainOptions, paths []string) (*report.Result, error) {
	runs, err := StudyRunsFrom(study, o, paths)
	if err != nil {
		return nil, err
	}
	if study == StudyValidated {
		return ValidatedLayout(o, runs)
	}
	return BoundaryLayout(o, runs)
}
