package experiments

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/strictjson"
	"github.com/neuronfabric/nfabric/train"
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
// (policy, seed) once; each must be consistent in itself
// (TrainRun.CheckConsistent) and trained with o's configuration
// (RunConfig: data, budget, model, optimizer; an error names the flag that
// differs), and all on the same images (the same set, or all on the same
// stand-in). A field the files do not define is an error, not ignored.
// They are returned in the order RunStudy returns them, so the layout is
// the one a single run gives.
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
	var first *TrainRun
	var firstFrom string
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
			if err := r.CheckConsistent(); err != nil {
				return nil, fmt.Errorf("%s: %s seed %d: %w", p, r.Label, r.Seed, err)
			}
			if d := r.Config.differs(o.RunConfig()); d != "" {
				return nil, fmt.Errorf("%s: %s seed %d: trained with %s", p, r.Label, r.Seed, d)
			}
			if first == nil {
				first, firstFrom = &r, p
			} else if r.Data != first.Data {
				return nil, fmt.Errorf("%s: %s seed %d trained on %+v, but %s's %s seed %d on %+v", p, r.Label, r.Seed, r.Data, firstFrom, first.Label, first.Seed, first.Data)
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
	// The file is a study's report (report.Result) whose data are its
	// runs: both levels are decoded strictly, so a misspelt or foreign
	// field, or a key given twice, is an error rather than silently
	// dropped or overwritten.
	if err := strictjson.Decode(b, "saved runs "+p, &report.Result{}); err != nil {
		return nil, err
	}
	var saved struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("saved runs %s: %w", p, err)
	}
	var runs []TrainRun
	if len(saved.Data) > 0 {
		if err := strictjson.Decode(saved.Data, "saved runs "+p+": data", &runs); err != nil {
			return nil, err
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("saved runs %s: no runs in its data (want a study's JSON from 'nfabric train validated|boundary --out')", p)
	}
	return runs, nil
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

// RunConfig is what of TrainOptions shapes one run: the data asked for and
// its trimming, the model, the budget and the optimizer (the policy and
// seed are the run's own). JSON names follow the train flags.
type RunConfig struct {
	Data        string  `json:"data"`
	TrainN      int     `json:"train_n"`
	TestN       int     `json:"test_n"`
	PerClass    int     `json:"per_class"`
	HoldOut     bool    `json:"hold_out"`
	Model       string  `json:"model"`
	Hidden      []int   `json:"hidden"`
	Epochs      int     `json:"epochs"`
	Batch       int     `json:"batch"`
	Workers     int     `json:"workers"`
	LR          float32 `json:"lr"`
	SignLR      float32 `json:"sign_lr"`
	Momentum    float32 `json:"momentum"`
	WeightDecay float32 `json:"wd"`
	// Schedule is the learning-rate schedule (train.Schedule.String), ""
	// when constant.
	Schedule    string `json:"schedule,omitempty"`
	Layout      string `json:"layout"`
	Augment     bool   `json:"augment"`
	DiagEpoch   int    `json:"diag_epoch"`
	DiagSteps   int    `json:"diag_steps"`
	DiagFormats bool   `json:"diag_formats"`
}

// RunConfig returns the configuration o's runs train with.
func (o TrainOptions) RunConfig() RunConfig {
	return RunConfig{Data: o.Data, TrainN: o.TrainN, TestN: o.TestN, PerClass: o.PerClass, HoldOut: o.HoldOut,
		Model: o.Model, Hidden: slices.Clone(o.Hidden), Epochs: o.Epochs, Batch: o.Batch, Workers: o.Workers,
		LR: o.LR, SignLR: o.SignLR, Momentum: o.Momentum, WeightDecay: o.WeightDecay, Schedule: scheduleName(o.Schedule), Layout: o.Layout.String(),
		Augment: o.Augment, DiagEpoch: o.DiagEpoch, DiagSteps: o.DiagSteps, DiagFormats: o.DiagFormats}
}

// scheduleName is how RunConfig and train.Result name a schedule: "" for
// constant, else Schedule.String.
func scheduleName(s train.Schedule) string {
	if s.IsConstant() {
		return ""
	}
	return s.String()
}

// differs names the first field where c and want differ, as the train
// flag that sets it, with both values; "" when they agree.
func (c RunConfig) differs(want RunConfig) string {
	for _, f := range []struct {
		flag      string
		got, want any
	}{
		{"data", c.Data, want.Data}, {"train-n", c.TrainN, want.TrainN}, {"test-n", c.TestN, want.TestN},
		{"per-class", c.PerClass, want.PerClass}, {"held-out validation", c.HoldOut, want.HoldOut},
		{"model", c.Model, want.Model}, {"hidden", fmt.Sprint(c.Hidden), fmt.Sprint(want.Hidden)},
		{"epochs", c.Epochs, want.Epochs}, {"batch", c.Batch, want.Batch}, {"workers", c.Workers, want.Workers},
		{"lr", c.LR, want.LR}, {"sign-lr", c.SignLR, want.SignLR}, {"momentum", c.Momentum, want.Momentum},
		{"wd", c.WeightDecay, want.WeightDecay}, {"schedule", cmp.Or(c.Schedule, "constant"), cmp.Or(want.Schedule, "constant")}, {"layout", c.Layout, want.Layout}, {"augment", c.Augment, want.Augment},
		{"diag-epoch", c.DiagEpoch, want.DiagEpoch}, {"diag-steps", c.DiagSteps, want.DiagSteps},
		{"diag-formats", c.DiagFormats, want.DiagFormats},
	} {
		if f.got != f.want {
			return fmt.Sprintf("--%s %v, the options ask for %v", f.flag, f.got, f.want)
		}
	}
	return ""
}

// CheckConsistent reports the first place where a training unit's result
// contradicts itself (train.Result.CheckConsistent, and the run's own
// fields against it: policy, label, epochs, images, the paper model's
// traffic). The framework calls it on every result a shard carries, and
// StudyRunsFrom on every saved run.
func (r TrainRun) CheckConsistent() error {
	if r.Config.Model == "" && r.Config.Epochs == 0 {
		return fmt.Errorf("the run records no configuration (it was saved by an nfabric from before runs recorded theirs): train it again")
	}
	if err := r.Result.CheckConsistent(); err != nil {
		return err
	}
	p, _ := train.ParsePolicy(r.Policy) // the result's policy parsed
	switch {
	case r.Policy != r.Result.Policy:
		return fmt.Errorf("policy %s, but its result's is %s", r.Policy, r.Result.Policy)
	case r.Label != r.Result.Label && !strings.HasPrefix(r.Label, r.Result.Label+" "):
		return fmt.Errorf("row %q for a run of %q", r.Label, r.Result.Label)
	case r.Result.Schedule != r.Config.Schedule:
		return fmt.Errorf("trained under schedule %q, but the configuration's is %q", r.Result.Schedule, r.Config.Schedule)
	case len(r.Result.Epochs) != r.Config.Epochs:
		return fmt.Errorf("%d epochs, but the configuration's is %d", len(r.Result.Epochs), r.Config.Epochs)
	case r.Data.Train < 1 || r.Data.Test < 1 || r.Data.Classes < 2 || r.Data.Name == "":
		return fmt.Errorf("data %q of %d training and %d test images in %d classes", r.Data.Name, r.Data.Train, r.Data.Test, r.Data.Classes)
	case r.Config.TrainN > 0 && r.Data.Train > r.Config.TrainN, r.Config.TestN > 0 && r.Data.Test > r.Config.TestN:
		return fmt.Errorf("%d training and %d test images, more than the configuration keeps (%d, %d)", r.Data.Train, r.Data.Test, r.Config.TrainN, r.Config.TestN)
	case r.Data.StandInFor != "" && r.Data.StandInFor != r.Config.Data:
		return fmt.Errorf("ran on a stand-in for %s, but the configuration asks for %s", r.Data.StandInFor, r.Config.Data)
	case r.Data.StandInFor == "" && strings.TrimSuffix(r.Data.Name, heldOutSuffix) != r.Config.Data:
		return fmt.Errorf("trained on %s, but the configuration asks for %s", r.Data.Name, r.Config.Data)
	}
	pm := paperModel()
	want := ModelTraffic{Params: pm.NumParams(), Head: pm.GroupParams(nn.Head), Ratio: train.PolicyTraffic(pm, p).Paper.Ratio}
	if r.PaperModel != want {
		return fmt.Errorf("traffic on ResNet-18/100 %+v, but policy %s gives %+v", r.PaperModel, r.Policy, want)
	}
	return nil
}
