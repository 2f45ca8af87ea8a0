package experiments

import (
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"

	"github.com/neuronfabric/nfabric/experiments/run"
)

// TestStandardTier: the standard tier's options come from its one budget
// per study (at least 5 seeds) and the block's units follow them.
func TestStandardTier(t *testing.T) {
	v, b := ValidatedOptions(run.TierStandard, 2), BoundaryOptions(run.TierStandard, 2)
	for _, c := range []struct {
		o  TrainOptions
		bu Budget
	}{{v, StandardValidated}, {b, StandardBoundary}} {
		if c.o.Tier != run.TierStandard || c.o.Seeds < 5 || c.o.Seeds != c.bu.Seeds || c.o.TrainN != c.bu.TrainN || c.o.Epochs != c.bu.Epochs || c.o.Seed != 2 {
			t.Errorf("%s: %+v from %+v", c.o.Data, c.o, c.bu)
		}
		// The tier trains with the schedule its sweep chose, one the
		// budget's epochs allow; the quick tier keeps the constant rate.
		if c.o.Schedule.String() != c.bu.Schedule.String() || c.o.Schedule.Kind == train.Constant || c.o.Schedule.Validate(c.o.Epochs) != nil {
			t.Errorf("%s: schedule %v from %v", c.o.Data, c.o.Schedule, c.bu.Schedule)
		}
	}
	if q := ValidatedOptions(run.TierQuick, 2).Schedule; q.Kind != train.Constant {
		t.Errorf("quick tier's schedule %v, want constant", q)
	}
	us, err := trainingUnits(run.Config{Tier: run.TierStandard, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	vr, err1 := studyRows(StudyValidated, v)
	br, err2 := studyRows(StudyBoundary, b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if want := len(vr)*v.Seeds + len(br)*b.Seeds; len(us) != want {
		t.Errorf("%d units, want %d", len(us), want)
	}
	// Both halves of the learning-rate ablation run at the standard tier,
	// each with its FP32 head at the sign rate.
	var ablation int
	for _, r := range br {
		if strings.HasSuffix(r.label, "@lr") {
			ablation++
			if r.policy[nn.Head].Rule != train.FormatRule(lowbit.FP32) || r.policy[nn.Head].LR != b.SignLR || !r.policy[nn.Backbone].Rule.Sign() {
				t.Errorf("%s: policy %v", r.label, r.policy)
			}
		}
	}
	if ablation != 2 {
		t.Errorf("%d learning-rate ablation rows at the standard tier, want 2 (G-Binary and G-Ternary)", ablation)
	}
}
