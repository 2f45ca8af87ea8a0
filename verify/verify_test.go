package verify

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

func TestVerifyPasses(t *testing.T) {
	res, err := Run(context.Background(), Config{Lines: 5000, Sweeps: 40, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("%s %s %s: %s", c.Group, c.Name, c.Mode, c.Detail)
		}
	}
	if res.Failed != 0 || res.Passed != len(res.Checks) || len(res.Rows) != len(cxl.Modes()) {
		t.Fatalf("%d passed, %d failed, %d rows", res.Passed, res.Failed, len(res.Rows))
	}
	// The paper's point: the naive oracle flags the transformed modes and
	// passes the untransformed ones.
	for _, r := range res.Rows {
		m, _ := cxl.ParseMode(r.Mode)
		if m.LowBit() != (r.NaiveFlagged > 0) || !r.Match {
			t.Errorf("row %+v", r)
		}
	}
	groups := map[string]int{}
	for _, c := range res.Checks {
		groups[c.Group] += c.Lines
	}
	// 2 x 4096 sum view lines per format, plus BFP8's 64 exponent lines.
	if groups["sum"] < 2*2*4096 || groups["sum-sweep"] == 0 {
		t.Errorf("integer-sum checks compared %d and %d lines", groups["sum"], groups["sum-sweep"])
	}
	st := res.Stats
	if st.Modes[cxl.Aggregate(lowbit.Binary)].TransformedLines < 5000 || st.Modes[cxl.Identity].WriteLines != 5000 || st.Modes[cxl.FP32Bypass].ReadLines != 5000 {
		t.Errorf("stats %+v", st.Modes)
	}
}

func TestVerifyDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	run := func() string {
		res, err := Run(context.Background(), Config{Lines: 300, Sweeps: 10, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v", *res)
	}
	a := run()
	runtime.GOMAXPROCS(1)
	if b := run(); a != b {
		t.Errorf("same seed, different results with GOMAXPROCS=1:\n%s\n%s", a, b)
	}
}

func TestVerifyConfigErrors(t *testing.T) {
	for _, c := range []Config{{Lines: -1}, {Workers: 9}, {Workers: -2}, {Sweeps: -1}, {Fault: "no-such-fault"}} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("Run(%+v) succeeded", c)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Lines: 10}); err == nil {
		t.Error("Run with a cancelled context succeeded")
	}
}

// TestVerifyCatchesFaults injects every deliberate controller fault
// (cxl.Faults); each must make the tester fail, in the group named here.
func TestVerifyCatchesFaults(t *testing.T) {
	group := map[cxl.Fault]string{
		cxl.FaultTernaryBitFlip:    "sec6",
		cxl.FaultBinaryStored:      "sec6",
		cxl.FaultIdentityByte:      "sec6",
		cxl.FaultReadWrites:        "sec6",
		cxl.FaultLatchAtCompletion: "latch",
		cxl.FaultInt8Lane:          "sum",
		cxl.FaultExponentView:      "sum",
		cxl.FaultIgnoreExponents:   "sum-sweep",
		cxl.FaultUnalignedAccepted: "errors",
		cxl.FaultPlaneWorker:       "sweep",
	}
	if len(group) != len(cxl.Faults()) {
		t.Fatalf("%d faults have a group, cxl has %d", len(group), len(cxl.Faults()))
	}
	type fault struct {
		name  cxl.Fault
		group string
	}
	var faults []fault
	for _, f := range cxl.Faults() {
		faults = append(faults, fault{f, group[f]})
	}
	for _, f := range faults {
		t.Run(string(f.name), func(t *testing.T) {
			cfg := Config{Lines: 20000, Sweeps: 24, Seed: 3, Fault: f.name}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed == 0 {
				t.Fatalf("fault not caught: %d checks passed", res.Passed)
			}
			caught := false
			for _, c := range res.Checks {
				if !c.Passed && c.Group == f.group {
					caught = true
					t.Logf("caught by %s/%s %s: %s", c.Group, c.Name, c.Mode, c.Detail)
				}
			}
			if !caught {
				t.Errorf("fault not caught by a %s check", f.group)
			}
		})
	}
}

// TestVerifyEveryPacketWidth: the Sec. 6 test passes for every W the
// packet carries. With W = 1 the G-Binary count byte is the written byte,
// so the naive oracle must flag no G-Binary line there; its expectation is
// the number of lines whose correct response differs from the write,
// counted here by hand from the reduction's definition.
func TestVerifyEveryPacketWidth(t *testing.T) {
	for w := 1; w <= 8; w++ {
		res, err := Run(context.Background(), Config{Lines: 300, Workers: w, Sweeps: 0, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Checks {
			if !c.Passed {
				t.Errorf("W=%d: %s %s %s: %s", w, c.Group, c.Name, c.Mode, c.Detail)
			}
		}
		for _, r := range res.Rows {
			if w == 1 && r.Mode == cxl.Aggregate(lowbit.Binary).String() && r.NaiveFlagged != 0 {
				t.Errorf("W=1: the naive oracle flagged %d G-Binary lines; the count byte equals the written byte", r.NaiveFlagged)
			}
		}
	}
}

// TestVerifyResultConsistent: the tester's own result is consistent; a
// row saying 5 mismatches and match, a failed count that does not count
// the checks, or a negative count is not (such a result can only come from
// a file edited after the run, e.g. a reproduce shard).
func TestVerifyResultConsistent(t *testing.T) {
	res, err := Run(context.Background(), Config{Lines: 200, Sweeps: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.CheckConsistent(); err != nil {
		t.Fatalf("the tester's result: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(r *Result)
		want string
	}{
		{"mismatches with match", func(r *Result) { r.Rows[1].Mismatches = 5 }, "mismatches 5 with match true"},
		{"match with no mismatch", func(r *Result) { r.Rows[0].Match = false }, "mismatches 0 with match false"},
		{"negative", func(r *Result) { r.Rows[0].Mismatches, r.Rows[0].Match = -1, false }, "want each in [0, lines]"},
		{"more than lines", func(r *Result) { r.Rows[0].NaiveFlagged = r.Rows[0].Lines + 1 }, "want each in [0, lines]"},
		{"failed count", func(r *Result) { r.Failed++ }, "checks passed"},
		{"check passed with mismatches", func(r *Result) {
			for i := range r.Checks {
				if r.Checks[i].Group == "sec6" && r.Checks[i].Mode != "" {
					r.Checks[i].Mismatches = 2
					return
				}
			}
		}, "mismatches 2 with passed true"},
	} {
		r := *res
		r.Rows = append([]ModeRow(nil), res.Rows...)
		r.Checks = append([]Check(nil), res.Checks...)
		tc.edit(&r)
		if err := r.CheckConsistent(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
