package experiments

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/report"
)

// replayClaims are the Sec. 5.2 claims on the ideal preset's rows: in
// healthy CXL the G-Binary datapath leaves a small increment over the FP32
// reference (judged per unit of controller busy time, the normalisation
// comparable with the full-LLC-miss anchor; see the fig2b notes), and in
// congested CXL it is hidden by the bandwidth gate. Both are listed
// whatever the rows: without rows a claim says not run.
func replayClaims(o ReplayOptions, rows []ReplayRow) []report.Claim {
	budget := o.Setup.Experiments.ExposureBudgetPct
	var healthy, congested []string
	hOK, cOK := true, true
	nh, nc := 0, 0
	for _, r := range rows {
		inc := r.BusyIncrementPct
		if r.Exact {
			inc = r.IncrementPct
		}
		switch r.Condition {
		case "healthy":
			nh++
			healthy = append(healthy, fmt.Sprintf("%s %.2f%%", r.Model, inc))
			hOK = hOK && inc < budget
		case "congested":
			nc++
			word := "hidden"
			if !r.Hidden {
				word = fmt.Sprintf("%.3f%%", r.IncrementPct)
				cOK = false
			}
			congested = append(congested, r.Model+" "+word)
		}
	}
	h := report.Claim{Section: "Sec. 5.2, Fig. 2(b)",
		Name:      "healthy CXL: the G-Binary datapath adds a small increment over the FP32 reference",
		Paper:     paperReplayHealthy + "%",
		Criterion: fmt.Sprintf("every model below the %g%% exposed-cost gate", budget)}
	if nh > 0 {
		h.Ours, h.Verdict = strings.Join(healthy, ", ")+" of controller busy time", modelVerdict(hOK)
	} else {
		h = notRun(h, "no healthy replay row")
	}
	c := report.Claim{Section: "Sec. 5.2, Fig. 2(b)",
		Name:      "congested CXL: the bandwidth gate hides the datapath",
		Paper:     paperReplayCongested,
		Criterion: "every congested row hidden (at most one pipeline fill per busy period)"}
	if nc > 0 {
		c.Ours, c.Verdict = strings.Join(congested, ", "), modelVerdict(cOK)
	} else {
		c = notRun(c, "no congested replay row")
	}
	return []report.Claim{h, c}
}
