package pilot

import (
	"context"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/usage"
)

// TestResultConsistent: every scenario's own result is consistent; a
// final accuracy that is not the last epoch's, an accuracy or traffic out
// of [0, 1], a step count that is not its losses' or a cosine of 5 (a
// result edited in a shard) is not.
func TestResultConsistent(t *testing.T) {
	sets := &data.Sets{Train: blobs(512, 4, 1), Test: blobs(128, 4, 2)}
	var gd *Result
	for _, sc := range Scenarios() {
		r, err := Run(context.Background(), testConfig(sc), sets)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.CheckConsistent(); err != nil {
			t.Errorf("%v: its own result: %v", sc, err)
		}
		if sc == GBinaryDefault {
			gd = r
		}
	}
	if len(gd.Diags) == 0 {
		t.Fatal("no diagnostics to tamper with")
	}
	for _, tc := range []struct {
		name string
		edit func(r *Result)
		want string
	}{
		{"final 7.0", func(r *Result) { r.Final = 7 }, "final accuracy 7"},
		{"negative accuracy", func(r *Result) { r.Epochs[0].ValAcc = -0.2 }, "want each in [0, 1]"},
		{"traffic above 1", func(r *Result) { r.Traffic = 32 }, "traffic 32"},
		{"steps", func(r *Result) { r.Steps++ }, "losses"},
		{"cosine 5", func(r *Result) { r.Diags[0].Binary.Global = 5 }, "cosine 5"},
		{"epochs renumbered", func(r *Result) { r.Epochs[1].Epoch = 9 }, "numbered 9"},
	} {
		r := *gd
		r.Epochs = append([]EpochStat(nil), gd.Epochs...)
		r.Diags = append([]Diag(nil), gd.Diags...)
		tc.edit(&r)
		if err := r.CheckConsistent(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

// TestParseEpochs: a fault window is FIRST-LAST, 1-based, FIRST <= LAST;
// anything else is a usage error and leaves the window as it was.
func TestParseEpochs(t *testing.T) {
	f := Fault{StartEpoch: 4, EndEpoch: 5}
	if err := f.ParseEpochs("2-7"); err != nil || f.StartEpoch != 2 || f.EndEpoch != 7 {
		t.Errorf("2-7: %+v %v", f, err)
	}
	for _, s := range []string{"0-3", "5-4", "3", "a-b", "3-", ""} {
		g := Fault{StartEpoch: 4, EndEpoch: 5}
		if err := g.ParseEpochs(s); err == nil || !usage.Is(err) || g.StartEpoch != 4 || g.EndEpoch != 5 {
			t.Errorf("%q: %+v %v; want a usage error and the window unchanged", s, g, err)
		}
	}
}
