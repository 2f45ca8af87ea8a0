package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

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
	// SeedsToDecide, for an inconclusive claim, says how many paired
	// seeds would decide it (SeedsRule) or what else it lacks; empty for
	// every other verdict.
	SeedsToDecide string `json:"seeds_to_decide,omitempty"`
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

// LedgerColumns are the ledger table's columns, in order.
var LedgerColumns = []string{"block", "section", "claim", "paper", "ours", "interval", "criterion", "verdict", "tier", "convergence"}

// SeedsColumn is the ledger's column of SeedsToDecide, shown (after the
// verdict) when some claim has one.
const SeedsColumn = "seeds to decide"

// HasSeedsToDecide reports whether some claim says how many seeds would
// decide it: the ledger then has the SeedsColumn and the SeedsRule note.
func HasSeedsToDecide(claims []Claim) bool {
	return slices.ContainsFunc(claims, func(c Claim) bool { return c.SeedsToDecide != "" })
}

// LedgerTable lays claims out as the ledger table, one row per claim in
// the order given. blockCell renders a row's block cell (a link to the
// block's section or file); nil prints the block's name.
func LedgerTable(claims []Claim, blockCell func(block string) string) Table {
	seeds := HasSeedsToDecide(claims)
	cols := LedgerColumns
	if seeds {
		cols = slices.Insert(slices.Clone(cols), slices.Index(cols, "verdict")+1, SeedsColumn)
	}
	t := Table{Name: "ledger", Title: "Claims ledger: every claim of every block", Columns: cols}
	for _, c := range claims {
		b := c.Block
		if blockCell != nil {
			b = blockCell(c.Block)
		}
		interval := c.Interval
		if interval == "" {
			interval = "-"
		}
		row := []string{b, c.Section, c.Name, c.Paper, c.Ours, interval, c.Criterion, c.Verdict, c.Tier, c.Convergence}
		if seeds {
			row = slices.Insert(row, 8, cmp.Or(c.SeedsToDecide, "-"))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = []string{LedgerRule}
	if seeds {
		t.Notes = append(t.Notes, SeedsRule)
	}
	return t
}

// SeedsRule states the power rule behind the SeedsColumn.
const SeedsRule = "Seeds to decide (inconclusive claims): the number n of paired seeds at which the 95% t interval, at the observed mean and standard deviation of the per-seed values (for a recovery fraction, of (split - full) - θ(FP32 - full) at the criterion's θ), would lie wholly on one side of the criterion's nearest end: the least n with t(0.975, n-1)·s/√n < δ, δ the distance from the mean to that end (stats.SeedsToDecide). Since a new estimate falls on either side of the present one, that n decides the claim about half the time; the figure after it is the n for 80% power, (t(0.975, n-1) + t(0.8, n-1))·s/√n < δ. For a claim over several rules, the most any rule needs. Run them with `nfabric reproduce --tier T --only BLOCK --seeds N` (or `--shard i/n` on a cluster: docs/running.md)."

// LedgerRule states how the ledger's verdicts are reached; printed under
// the ledger in every rendering.
const LedgerRule = "Verdicts: a claim measured over seeds holds when its whole 95% interval lies inside the criterion, does not hold when the whole interval lies outside it, and is inconclusive otherwise; a claim whose training runs had not converged by the block's stated rule is only indicative. Claims of deterministic models (no seeds, no interval) are judged on the one value. Paper values are the paper's; every other cell was computed by this run."

// LedgerSummary counts the claims by verdict, in the Verdict* order:
// "12 claims: 7 hold, 1 does not hold, 2 inconclusive, 2 indicative
// (not converged)". Verdicts outside the Verdict* set are counted as
// they are spelled.
func LedgerSummary(claims []Claim) string {
	order := []string{VerdictHolds, VerdictDoesNotHold, VerdictInconclusive, VerdictIndicative, VerdictNotRun, VerdictSkipped}
	n := map[string]int{}
	var other []string
	for _, c := range claims {
		if n[c.Verdict] == 0 && !slices.Contains(order, c.Verdict) {
			other = append(other, c.Verdict)
		}
		n[c.Verdict]++
	}
	parts := []string{}
	for _, v := range append(order, other...) {
		if n[v] == 0 {
			continue
		}
		word := v
		if v == VerdictHolds && n[v] == 1 {
			word = "holds"
		} else if v == VerdictHolds {
			word = "hold"
		} else if v == VerdictDoesNotHold && n[v] > 1 {
			word = "do not hold"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n[v], word))
	}
	noun := "claims"
	if len(claims) == 1 {
		noun = "claim"
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d %s.", len(claims), noun)
	}
	return fmt.Sprintf("%d %s: %s.", len(claims), noun, strings.Join(parts, ", "))
}
