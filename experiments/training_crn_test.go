package experiments

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

// firstStep is what a run of a study starts from: its initial weights,
// its first epoch's order, its first batch, and each worker's gradient of
// that batch (which depends on the weights and on which images the
// worker's shard holds).
type firstStep struct {
	weights [][]float32
	order   []int
	x       []float32
	y       []int
	shards  [][2]int
	grads   [][][]float32
}

func startOf(t *testing.T, o TrainOptions, sets *data.Sets, p train.Policy, seed uint64) firstStep {
	t.Helper()
	l, err := train.Start(o.Config(p, seed), sets)
	if err != nil {
		t.Fatalf("%s seed %d: %v", p.Label(), seed, err)
	}
	st := l.Stepper
	var f firstStep
	for _, prm := range st.Model.Params {
		f.weights = append(f.weights, slices.Clone(prm.Value))
	}
	b, err := st.Batches(1)
	if err != nil {
		t.Fatal(err)
	}
	f.order = b.Order()
	n := b.Next(st.X, st.Y)
	f.x, f.y = slices.Clone(st.X[:n*sets.Train.ImageSize()]), slices.Clone(st.Y[:n])
	for k := range st.Reps {
		lo, hi := nn.Shard(n, len(st.Reps), k)
		f.shards = append(f.shards, [2]int{lo, hi})
	}
	if _, _, err := st.Step(n); err != nil {
		t.Fatal(err)
	}
	for _, g := range st.Grads {
		var w [][]float32
		for _, gi := range g {
			w = append(w, slices.Clone(gi))
		}
		f.grads = append(f.grads, w)
	}
	return f
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// differences names the parts of two starts that differ.
func differences(a, b firstStep) []string {
	var d []string
	if !slices.EqualFunc(a.weights, b.weights, sameBits) {
		d = append(d, "initial weights")
	}
	if !slices.Equal(a.order, b.order) {
		d = append(d, "data order")
	}
	if !sameBits(a.x, b.x) || !slices.Equal(a.y, b.y) {
		d = append(d, "first batch")
	}
	if !slices.Equal(a.shards, b.shards) {
		d = append(d, "shard split")
	}
	if len(a.grads) != len(b.grads) {
		d = append(d, "worker count")
	} else {
		for k := range a.grads {
			if !slices.EqualFunc(a.grads[k], b.grads[k], sameBits) {
				d = append(d, "worker gradients")
				break
			}
		}
	}
	return d
}

// TestCommonRandomNumbers: within a seed, every policy of each study
// (every row, the extensions included) starts from the same initial
// weights, walks the same first-epoch order, draws the same first batch,
// splits it into the same worker shards and gets the same per-worker
// gradients, bit for bit; another seed differs in weights, order and
// batch. This is what makes the claims' per-seed differences paired.
func TestCommonRandomNumbers(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and takes a step of every policy")
	}
	for _, study := range []string{StudyValidated, StudyBoundary} {
		o := ValidatedOptions(run.TierQuick, 1)
		if study == StudyBoundary {
			o = BoundaryOptions(run.TierQuick, 1)
		}
		o.TrainN, o.TestN, o.Only, o.Extensions = 256, 64, nil, true
		sets, _, err := o.LoadSets()
		if errors.Is(err, data.ErrNotFound) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		rows, err := studyRows(study, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) < 5 {
			t.Fatalf("%s: %d rows", study, len(rows))
		}
		ref := startOf(t, o, sets, rows[0].policy, o.Seed)
		for _, r := range rows[1:] {
			if d := differences(ref, startOf(t, o, sets, r.policy, o.Seed)); len(d) > 0 {
				t.Errorf("%s seed %d: %s differs from %s in %v", study, o.Seed, r.label, rows[0].label, d)
			}
		}
		other := startOf(t, o, sets, rows[len(rows)-1].policy, o.Seed+1)
		d := differences(ref, other)
		for _, want := range []string{"initial weights", "data order", "first batch", "worker gradients"} {
			if !slices.Contains(d, want) {
				t.Errorf("%s: seeds %d and %d share their %s", study, o.Seed, o.Seed+1, want)
			}
		}
	}
}
