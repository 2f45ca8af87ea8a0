package experiments

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/verify"
)

// functionalClaims are the Sec. 6 claims: each paper mode's read-back
// matches its mode-specific oracle exactly, and the naive read-equals-write
// oracle is right for identity and wrong for the transformed modes. Every
// claim is listed whatever the result holds: a mode without a row says not
// run (functionalClaims of an empty result is the block's claim list).
func functionalClaims(vr verify.Result) []report.Claim {
	var out []report.Claim
	naiveOK, missing := true, 0
	var naive []string
	for _, m := range []cxl.Mode{cxl.Identity, cxl.Aggregate(lowbit.Binary), cxl.Aggregate(lowbit.Ternary)} {
		c := report.Claim{Section: "Sec. 6",
			Name:      fmt.Sprintf("%s read-back matches its oracle exactly", m),
			Paper:     "exact match",
			Criterion: "0 mismatched lines against the mode's oracle"}
		i := slices.IndexFunc(vr.Rows, func(r verify.ModeRow) bool { return r.Mode == m.String() })
		if i < 0 {
			out = append(out, notRun(c, "no read-back of this mode"))
			missing++
			continue
		}
		r := vr.Rows[i]
		c.Ours = fmt.Sprintf("%d mismatched of %d lines", r.Mismatches, r.Lines)
		c.Criterion = "0 mismatched lines against the " + r.Oracle
		c.Verdict = modelVerdict(r.Match && r.Mismatches == 0)
		out = append(out, c)
		// Identity must pass the naive oracle; a transformed mode must be
		// flagged by it (its response is not the stored bytes).
		if (m == cxl.Identity) != (r.NaiveFlagged == 0) {
			naiveOK = false
		}
		naive = append(naive, fmt.Sprintf("%s %d", r.Mode, r.NaiveFlagged))
	}
	c := report.Claim{Section: "Sec. 6",
		Name:      "read-equals-write is the right oracle for identity only",
		Paper:     "wrong oracle for G-Binary and G-Ternary",
		Criterion: "identity flags none; each transformed mode is flagged"}
	if missing > 0 {
		return append(out, notRun(c, fmt.Sprintf("%d of the 3 modes have no read-back", missing)))
	}
	c.Ours, c.Verdict = "lines flagged: "+strings.Join(naive, ", "), modelVerdict(naiveOK)
	return append(out, c)
}
