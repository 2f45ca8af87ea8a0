package experiments

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/workload"
)

// A user trace of two buckets far apart: each is served from an idle
// controller, so the replay ends at the second bucket's ready time plus
// one single-bucket service, which the test computes with timing directly.
func TestFig2UserTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.csv")
	os.WriteFile(path, []byte("bytes,ready_us\n262144,0\n131072,1000\n"), 0o644)
	us := runReplayUnits(t, ReplayOptions{Traces: []string{path}})
	var rows []ReplayRow
	for _, u := range us {
		rows = append(rows, u.Run.Row)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	single, err := timing.Simulate(timing.DefaultConfig(), timing.Replay{Buckets: []timing.Bucket{{Lines: 2048}}}, timing.None)
	if err != nil {
		t.Fatal(err)
	}
	want := (1000*sim.Microsecond + single.RunTime)
	if got := rows[0].IdentityMS; math.Abs(got-float64(want)/1e9) > 1e-12 {
		t.Errorf("identity run %v ms; want %v", got, float64(want)/1e9)
	}
	if rows[0].Condition != "healthy" || rows[1].Condition != "congested" || !rows[1].Hidden {
		t.Errorf("rows %+v", rows)
	}
	o := ReplayOptions{Traces: []string{path}}
	o.defaults()
	res, err := Fig2Layout(o, us)
	if err != nil || len(res.Figures) != 2 {
		t.Fatalf("layout: %v", err)
	}
	catalogueMatches(t, "replay", run.Config{Tier: run.TierQuick}, res.Claims)
}

func runReplayUnits(t *testing.T, o ReplayOptions) []ReplayUnit {
	t.Helper()
	us, err := fig2Units(o)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]ReplayUnit, len(us))
	for i, u := range us {
		if rs[i], err = u.Run(context.Background(), run.Config{}); err != nil {
			t.Fatal(err)
		}
		// Shards carry units as JSON: the result must survive it exactly.
		raw, err := json.Marshal(rs[i])
		if err != nil {
			t.Fatal(err)
		}
		var back ReplayUnit
		if err := run.DecodeExact(raw, &back); err != nil {
			t.Errorf("unit %s: %v", u.Key, err)
		}
	}
	return rs
}

// Validation on a small model passes and is counted, under both presets.
func TestFig2Validate(t *testing.T) {
	us := runReplayUnits(t, ReplayOptions{Models: []string{"resnet18-cifar10"}, Validate: true, ValidateScale: 16,
		Buckets: workload.BucketOptions{CapBytes: 4 * workload.MiB}, DDR5: true})
	var pass, checks int
	for _, u := range us {
		if u.Check != nil {
			checks++
			// Independent of the recorded verdict: the event simulation
			// and the fast-forward agree within 0.1%.
			c := u.Check.Check
			if d := 100 * math.Abs(float64(c.Fast-c.Exact)) / float64(c.Exact); d <= 0.1 && u.Check.Pass {
				pass++
			}
		}
	}
	if checks != 8 || pass != 8 {
		t.Errorf("validation: %d of %d checks pass", pass, checks)
	}
}

func TestFig2Errors(t *testing.T) {
	if _, err := Fig2(context.Background(), run.Config{}, ReplayOptions{Models: []string{"gpt3"}, Exact: true}); err == nil {
		t.Error("exact GPT-3 accepted")
	}
	if _, err := Fig2(context.Background(), run.Config{}, ReplayOptions{Traces: []string{"/no/such.csv"}}); err == nil {
		t.Error("missing trace accepted")
	}
}

// The increment column says 'not resolved' where the row's increment is
// within the fast-forward's error bound, 'hidden (...)' where it is only
// pipeline fills, and the bare figure otherwise.
func TestFig2ResolvedLabels(t *testing.T) {
	o := ReplayOptions{}
	o.defaults()
	rows := []ReplayRow{
		{Model: "a", Condition: "ddr5 healthy", IncrementPct: 0.15, Resolved: false},
		{Model: "b", Condition: "ddr5 congested", IncrementPct: 0, Hidden: true, Resolved: true},
		{Model: "c", Condition: "ddr5 healthy", IncrementPct: 2.4, Resolved: true},
		{Model: "d", Condition: "ddr5 congested", IncrementPct: 0, Hidden: true, Resolved: false},
	}
	_, b := fig2Tables(o, rows)
	col := -1
	for i, c := range b.Columns {
		if c == "% of replay" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no '%% of replay' column in %v", b.Columns)
	}
	for i, want := range []string{"0.150 (not resolved)", "hidden (0.000)", "2.400", "hidden (0.000), not resolved"} {
		if got := b.Rows[i][col]; got != want {
			t.Errorf("row %d: %q, want %q", i, got, want)
		}
	}
}
