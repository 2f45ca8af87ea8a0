package experiments

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/verify"
)

func init() {
	run.Register(run.Spec[verify.Result]{Name: "functional", Title: functionalTitle, Order: 10,
		Units: functionalUnits, Layout: func(_ run.Config, rs []verify.Result) (*report.Result, error) {
			return FunctionalLayout(rs[0]), nil
		},
		Claims: func(run.Config) []report.Claim { return functionalClaims(verify.Result{}) }})
}

const functionalTitle = "Functional correctness (Sec. 6)"

// The framework checks every functional result read back from a shard
// against its own redundant fields (a row's match flag and mismatch count).
var _ run.Consistent = verify.Result{}

// FunctionalParams are the functional tester's parameters (see
// verify.Config); `nfabric verify` sets them from its flags.
type FunctionalParams struct {
	Lines   int
	Workers int
	Sweeps  int
	Seed    uint64
	Logf    func(format string, args ...any)
}

// Quick and full configurations of the block.
var (
	functionalQuick = FunctionalParams{Lines: 1 << 18, Workers: 8, Sweeps: 64}
	functionalFull  = FunctionalParams{Lines: 1 << 21, Workers: 8, Sweeps: 1024}
)

// functionalUnits is the block's one unit: the tester in the quick or
// full configuration (its sweeps share one controller, so they do not split).
func functionalUnits(cfg run.Config) ([]run.Unit[verify.Result], error) {
	p := functionalQuick
	if cfg.Full() {
		p = functionalFull
	}
	return []run.Unit[verify.Result]{{Key: "verify", Cost: functionalCost(p), Run: func(ctx context.Context, cfg run.Config) (verify.Result, error) {
		p.Seed, p.Logf = cfg.Seed, cfg.Progressf
		return RunFunctional(ctx, p)
	}}}, nil
}

// paperFunctional is the paper's Sec. 6 outcome per mode: the payloads of
// identity, G-Binary and G-Ternary "match their corresponding oracle
// exactly". FP32 bypass is not part of the paper's functional test.
var paperFunctional = map[cxl.Mode]string{cxl.Identity: "match", cxl.Aggregate(lowbit.Binary): "match", cxl.Aggregate(lowbit.Ternary): "match"}

// RunFunctional runs the transformation-aware functional tester (the
// block's unit). Failed checks are counted in the result; the error is for
// a bad parameter or a cancelled ctx.
func RunFunctional(ctx context.Context, p FunctionalParams) (verify.Result, error) {
	vr, err := verify.Run(ctx, verify.Config{Lines: p.Lines, Workers: p.Workers, Sweeps: p.Sweeps, Seed: p.Seed, Logf: p.Logf})
	if err != nil {
		return verify.Result{}, err
	}
	return *vr, nil
}

// Functional runs the tester and lays its result out (see FunctionalLayout).
func Functional(ctx context.Context, p FunctionalParams) (*report.Result, error) {
	vr, err := RunFunctional(ctx, p)
	if err != nil {
		return nil, err
	}
	return FunctionalLayout(vr), nil
}

// FunctionalLayout returns the tester's tables: the Sec. 6 read-back per
// mode with the paper's outcome and the naive oracle beside ours, the
// checks beyond the paper, and the controller's traffic counters. Failed
// checks are counted in Result.Failed.
func FunctionalLayout(vr verify.Result) *report.Result {
	res := &report.Result{
		Block:  "functional",
		Title:  functionalTitle,
		Data:   vr,
		Passed: vr.Passed,
		Failed: vr.Failed,
	}
	res.Summary = append(res.Summary,
		fmt.Sprintf("%d virtual workers write %d sign packets (%d elements) over one address range; the controller reads them back under every mode and each response is compared with its mode-specific oracle and with the naive read-equals-write oracle.", vr.Workers, vr.Lines, vr.Lines*64),
		fmt.Sprintf("%d passed, %d failed", vr.Passed, vr.Failed))

	sec6 := report.Table{
		Name:    "functional-sec6",
		Title:   "Sec. 6 packet read-back: mode-specific oracle vs the naive read-equals-write oracle",
		Columns: []string{"mode", "oracle", "lines", "mismatches", "result", "paper", "naive oracle (read == write)"},
		Notes: []string{
			"element-major packets (paper layout): byte i bit k = sign of worker k for element i; G-Binary returns the byte-level count c_i, G-Ternary int8 m_i*u_i with the paper's 2-of-3 gate.",
			fmt.Sprintf("the first %d lines are packed from FP32 gradients (with zeros and -0) and also checked against the Sec. 2 definitions on the gradients themselves; the rest are random sign packets.", min(vr.Lines, 4096)),
			"FP32 bypass is not in the paper's functional test (paper column '-'); its bytes are identity's.",
		},
	}
	for _, r := range vr.Rows {
		m, _ := cxl.ParseMode(r.Mode)
		result := "match"
		if !r.Match {
			result = fmt.Sprintf("MISMATCH (%d lines)", r.Mismatches)
		}
		paper := paperFunctional[m]
		if paper == "" {
			paper = "-"
		}
		naive := fmt.Sprintf("passes (%d of %d flagged)", r.NaiveFlagged, r.Lines)
		if r.NaiveFlagged > 0 {
			naive = fmt.Sprintf("flags %d of %d lines (%.2f%%)", r.NaiveFlagged, r.Lines, 100*float64(r.NaiveFlagged)/float64(r.Lines))
		}
		sec6.AddRow(r.Mode, r.Oracle, r.Lines, r.Mismatches, result, paper, naive)
	}

	checks := report.Table{
		Name:    "functional-checks",
		Title:   "Checks (the naive-oracle rows pass when it behaves as Sec. 6 says: right for identity, wrong for transformed modes)",
		Columns: []string{"group", "check", "mode", "lines", "mismatches", "result", "detail"},
	}
	var sweepPass, sweepFail, sweepLines int
	for _, c := range vr.Checks {
		if c.Group == "sweep" {
			sweepLines += c.Lines
			if c.Passed {
				sweepPass++
				continue
			}
			sweepFail++
		}
		checks.AddRow(c.Group, c.Name, c.Mode, c.Lines, c.Mismatches, passFail(c.Passed), c.Detail)
	}
	checks.AddRow("sweep", fmt.Sprintf("%d random cases beyond the paper", sweepPass+sweepFail), "all", sweepLines, sweepFail, passFail(sweepFail == 0),
		"W in 1..64, element-major and worker-major, gates pattern:P, worker and margin:T (extensions beyond the paper), concurrent writers, random mode switches between transactions, storage checked after all reads")

	stats := report.Table{
		Name:    "functional-stats",
		Title:   "Sec. 6 controller counters",
		Columns: []string{"mode", "write lines", "read lines", "transformed lines", "write bytes", "read bytes", "media lines read"},
		Notes:   []string{fmt.Sprintf("transactions %d, errors %d, mode changes %d", vr.Stats.Transactions, vr.Stats.TotalErrors(), vr.Stats.ModeChanges)},
	}
	for _, m := range cxl.Modes() {
		s := vr.Stats.Modes[m]
		stats.AddRow(m.String(), s.WriteLines, s.ReadLines, s.TransformedLines, s.WriteBytes, s.ReadBytes, s.MediaLinesRead)
	}
	res.Tables = []report.Table{sec6, checks, stats}
	res.Claims = functionalClaims(vr)
	return res
}

func passFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// FunctionalClosing is the tester's closing line: "N passed, N failed".
func FunctionalClosing(res *report.Result) string {
	return fmt.Sprintf("%d passed, %d failed", res.Passed, res.Failed)
}
