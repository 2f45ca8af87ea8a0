package report

// Claim is one row of the claims ledger: one claim of the paper checked
// by one evidence block. The block computes every field from its runs;
// the report only lays the rows out (the ledger is the first table of
// REPORT.md and index.html, and JSON carries the same rows).
type Claim struct {
	// Block is the id of the block that checked the claim ("training",
	// "timing", ...); the framework fills it in when it is empty.
	Block string `json:"block"`
	// Section is where the paper makes the claim ("Sec. 7.2, Fig. 5").
	Section string `json:"section"`
	// Name says the claim in a few words.
	Name string `json:"claim"`
	// Paper is the paper's value, as the paper states it.
	Paper string `json:"paper"`
	// Ours is the value our runs measured (means over seeds where there
	// are seeds).
	Ours string `json:"ours"`
	// Interval is the confidence interval the verdict was judged on, with
	// its method and sample size ("95% CI [-1.2, 0.4], paired t, n = 5");
	// empty where the claim has no seeds (a deterministic model's value).
	Interval string `json:"interval,omitempty"`
	// Criterion is the rule the verdict applies, fixed before the runs.
	Criterion string `json:"criterion"`
	// Verdict is one of the Verdict* constants.
	Verdict string `json:"verdict"`
	// Tier is the budget the runs used ("quick", "standard", "full").
	Tier string `json:"tier"`
	// Convergence says whether the runs behind the claim had converged by
	// the block's stated rule ("converged", "not converged: ..."), or
	// "n/a" for claims that involve no training.
	Convergence string `json:"convergence"`
}

// Verdicts of a Claim. A claim on seeds holds when its whole interval lies
// inside the criterion, does not hold when the whole interval lies outside
// it, and is inconclusive otherwise; a claim whose runs have not converged
// is only indicative, whatever its interval says.
const (
	VerdictHolds        = "holds"
	VerdictDoesNotHold  = "does not hold"
	VerdictInconclusive = "inconclusive"
	VerdictIndicative   = "indicative (not converged)"
	VerdictNotRun       = "not run"
	VerdictSkipped      = "skipped"
)
