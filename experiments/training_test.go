package experiments

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/stats"
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
		m, s := stats.MeanSD(tt.xs)
		if math.Abs(m-tt.mean) > 1e-9 || math.Abs(s-tt.std) > 1e-9 {
			t.Errorf("stats.MeanSD(%v) = %v, %v; want %v, %v", tt.xs, m, s, tt.mean, tt.std)
		}
	}
}

// TestBoundaryTiny runs the whole boundary study on a sliver of the
// stand-in and checks the typed runs (not the accuracies): every row and
// seed ran, in order, with its diagnostics; the paper's model's traffic
// equals the paper's Table 6 column; each run survives a JSON round trip
// exactly; and the layout has Table 6, Table 5 and Fig. 5 (without
// WallClock no step-time table).
func TestBoundaryTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST")
	}
	o := BoundaryOptions(run.TierQuick, 1)
	o.TrainN, o.TestN, o.Epochs, o.Seeds, o.Hidden, o.Batch, o.DiagSteps = 256, 128, 1, 2, []int{8}, 64, 2
	o.Only, o.Model = nil, "resnet-standin-small" // every row; the small ResNet keeps the test cheap
	runs, err := RunStudy(context.Background(), StudyBoundary, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := byRow(runs)
	if len(runs) != 11*2 || len(rows) != 11 {
		t.Fatalf("%d runs in %d rows; want 22 in 11", len(runs), len(rows))
	}
	for i, p := range Table6Policies() {
		r := rows[i].Runs[0]
		if r.Label != p.Label() || r.Policy != p.String() || r.Seed != o.Seed || rows[i].Runs[1].Seed != o.Seed+1 {
			t.Errorf("row %d: %q %q seed %d; want %q %q seed %d", i, r.Label, r.Policy, r.Seed, p.Label(), p, o.Seed)
		}
		if got, want := train.FormatRatio(r.PaperModel.Ratio), paperTable6[p.Label()][1]; got != want {
			t.Errorf("%s: ResNet-18/100 traffic %s; paper %s", r.Label, got, want)
		}
	}
	for _, r := range runs {
		if len(r.Result.Diags) != 1 || r.Result.Diags[0].Steps != 2 || len(r.Result.Epochs) != 1 || r.Data.Train != 256 {
			t.Errorf("%s seed %d: %d diags, %d epochs, %d images", r.Label, r.Seed, len(r.Result.Diags), len(r.Result.Epochs), r.Data.Train)
		}
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back TrainRun
		if err := run.DecodeExact(raw, &back); err != nil || !reflect.DeepEqual(back.Result.History, r.Result.History) {
			t.Errorf("%s seed %d: JSON round trip: %v", r.Label, r.Seed, err)
		}
	}
	res, err := BoundaryLayout(o, runs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range res.Tables {
		names = append(names, tb.Name)
	}
	if !slices.Equal(names, []string{"table6", "claims-boundary", "convergence", "table5"}) || len(res.Figures) != 1 {
		t.Errorf("layout: tables %q, %d figures", names, len(res.Figures))
	}
	// One epoch cannot show a plateau: every claim that ran is indicative,
	// and each is one ledger row.
	if len(res.Claims) != 5 {
		t.Fatalf("%d claims, want 5", len(res.Claims))
	}
	for _, c := range res.Claims {
		if c.Verdict != report.VerdictIndicative || c.Tier != runs[0].Data.tierCell("quick") || !strings.HasPrefix(c.Convergence, "not converged") {
			t.Errorf("%s: verdict %q tier %q convergence %q", c.Name, c.Verdict, c.Tier, c.Convergence)
		}
	}
}

func TestTrainOptionsErrors(t *testing.T) {
	o := BoundaryOptions(run.TierQuick, 1)
	o.Seeds = 0
	if _, err := StudyUnits(StudyBoundary, o); err == nil {
		t.Error("zero seeds accepted")
	}
	if _, err := StudyUnits("sideways", BoundaryOptions(run.TierQuick, 1)); err == nil {
		t.Error("unknown study accepted")
	}
	o = BoundaryOptions(run.TierQuick, 1)
	o.Data = "no-such-set"
	if _, err := Boundary(context.Background(), o); err == nil || !strings.Contains(err.Error(), "no-such-set") {
		t.Errorf("unknown data set: err %v", err)
	}
}

// Fig. 7(b) places rules only: a run per (study, rule, seed) with a final
// accuracy and its traffic; the split policy is left out and the two
// rules that computed the same vote (same accuracy per seed, same
// traffic) share one point and one label.
func TestFig7bPlacesRules(t *testing.T) {
	run := func(study, label string, final, ratio float64) TrainRun {
		r := TrainRun{Study: study, Label: label, Data: DataInfo{Name: "set-" + study}}
		r.Result.Final = final
		r.Result.Traffic.Paper.Ratio = ratio
		return r
	}
	var v []TrainRun
	for _, seed := range []float64{0, 0.01} {
		v = append(v, run(StudyValidated, "FP32 all", 0.83+seed, 1), run(StudyValidated, "G-Binary all", 0.81+seed, 1.0/32),
			run(StudyValidated, "MajoritySignSGD all", 0.81+seed, 1.0/32), run(StudyValidated, "G-Ternary all", 0.80, 1.58/32))
	}
	b := []TrainRun{run(StudyBoundary, "FP32 all", 0.7, 1), run(StudyBoundary, "G-Binary backbone + FP32 head", 0.69, 0.09)}
	fig, err := fig7bPlot(v, b)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(fig.SVG)
	for _, want := range []string{">FP32<", ">G-Binary / MajoritySignSGD<", ">G-Ternary<", ">validated study, set-validated<", ">boundary study, set-boundary<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("Fig. 7(b) lacks %s", want)
		}
	}
	if strings.Contains(svg, "backbone") || strings.Contains(svg, ">G-Binary<") {
		t.Error("Fig. 7(b) holds a split policy or a second G-Binary label")
	}
}
