package experiments

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

func TestTable6TrafficWithPaperModel(t *testing.T) {
	r18 := nn.ResNet18(rand.New(rand.NewPCG(0, 0)), 100)
	for _, p := range Table6Policies() {
		want, ok := paperTable6[p.Label()]
		if !ok {
			t.Fatalf("no paper row for %q", p.Label())
		}
		if got := train.FormatRatio(train.PolicyTraffic(r18, p).Paper.Ratio); got != want[1] {
			t.Errorf("%s: traffic %s; paper %s", p.Label(), got, want[1])
		}
	}
}

func TestMeanStd(t *testing.T) {
	for _, tt := range []struct {
		xs        []float64
		mean, std float64
	}{
		{nil, 0, 0},
		{[]float64{5}, 5, 0},
		{[]float64{1, 2, 3}, 2, 1},
		{[]float64{74.1, 74.5, 74.75}, 74.45, 0.3278719262},
	} {
		m, s := MeanStd(tt.xs)
		if math.Abs(m-tt.mean) > 1e-9 || math.Abs(s-tt.std) > 1e-9 {
			t.Errorf("MeanStd(%v) = %v, %v; want %v, %v", tt.xs, m, s, tt.mean, tt.std)
		}
	}
}

// TestBoundaryTiny runs the whole boundary study on a sliver of the
// stand-in to check the tables' shape (not the accuracies). Without
// WallClock there is no step-time table.
func TestBoundaryTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST")
	}
	o := BoundaryOptions(false, 1)
	o.TrainN, o.TestN, o.Epochs, o.Seeds, o.Hidden, o.Batch, o.DiagSteps = 256, 128, 1, 2, []int{8}, 64, 2
	res, err := Boundary(context.Background(), o)
	if errors.Is(err, data.ErrNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 2 || len(res.Tables[0].Rows) != 11 || len(res.Figures) != 1 {
		t.Fatalf("got %d tables (%d rows), %d figures", len(res.Tables), len(res.Tables[0].Rows), len(res.Figures))
	}
	for _, row := range res.Tables[0].Rows[:7] {
		if row[5] != row[6] {
			t.Errorf("%s: ResNet-18/100 traffic %s differs from the paper's %s", row[0], row[5], row[6])
		}
	}
	if !strings.Contains(res.Tables[1].Title, "cosine") || len(res.Tables[1].Rows) != 4 {
		t.Errorf("cosine table %q has %d rows; want 4", res.Tables[1].Title, len(res.Tables[1].Rows))
	}
}

func TestTrainOptionsErrors(t *testing.T) {
	o := BoundaryOptions(false, 1)
	o.Seeds = 0
	if _, err := RunPolicies(context.Background(), o, nil, nil, nil); err == nil {
		t.Error("zero seeds accepted")
	}
	o = BoundaryOptions(false, 1)
	o.Data = "no-such-set"
	if _, err := Boundary(context.Background(), o); err == nil || !strings.Contains(err.Error(), "no-such-set") {
		t.Errorf("unknown data set: err %v", err)
	}
}
