package experiments

import (
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/report"
)

// collectiveClaims is Sec. 9's Fig. 7 claim: for one All-Reduce of the
// model's gradients the controller's G-Binary and G-Ternary rows take far
// less modelled time than every FP32 collective reference. The criterion is
// the ordering the paper draws (each low-bit controller row below the
// fastest FP32 reference), not its milliseconds, which depend on the
// payload size and network it assumes (see the fig7 notes).
func collectiveClaims(r CollectiveResult) []report.Claim {
	var bin, ter float64
	var haveBin, haveTer bool
	for _, p := range r.Paths {
		switch p.Path {
		case collective.PathGBinary:
			bin, haveBin = p.Estimate.Seconds, true
		case collective.PathGTernaryPaper:
			ter, haveTer = p.Estimate.Seconds, true
		}
	}
	c := report.Claim{Section: "Sec. 9, Fig. 7(a)",
		Name:      fmt.Sprintf("%s: the controller's G-Binary and G-Ternary All-Reduce are far below the FP32 collectives", r.Model),
		Paper:     fmt.Sprintf("%g ms and %g ms vs %s ms", paperFig7BinaryMS, paperFig7TernaryMS, paperFig7FP32Range),
		Criterion: "both low-bit controller rows below the fastest FP32 reference"}
	if !haveBin || !haveTer {
		return []report.Claim{notRun(c, "no G-Binary or G-Ternary controller path")}
	}
	c.Ours = fmt.Sprintf("%s and %s vs %s – %s", report.FormatSeconds(bin), report.FormatSeconds(ter),
		report.FormatSeconds(r.FP32Lo), report.FormatSeconds(r.FP32Hi))
	c.Verdict = modelVerdict(bin < r.FP32Lo && ter < r.FP32Lo)
	return []report.Claim{c}
}
