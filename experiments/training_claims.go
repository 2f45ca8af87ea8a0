package experiments

import (
	"fmt"
	"math"
	"strings"

	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/report"
)

// Verdicts of a Claim.
const (
	Holds       = "holds"
	DoesNotHold = "does not hold"
	NotRun      = "not run"
)

// Claim is one claim of the paper's Sec. 7 checked on a study's runs:
// what the paper reports, what the runs show (means ± std over seeds),
// the criterion, and the verdict the criterion gives, computed from the
// runs.
type Claim struct {
	Name      string `json:"claim"`
	Paper     string `json:"paper"`
	Ours      string `json:"ours"`
	Criterion string `json:"criterion"`
	Verdict   string `json:"verdict"`
}

// Thresholds of the claims' criteria, fixed before any run: "about" a
// figure is within a factor of 1.5 of it, "most of the gap" is at least
// half of it, "weak" head alignment is below half the backbone's.
const (
	aboutFactor  = 1.5
	mostFraction = 0.5
	weakFraction = 0.5
)

// The paper's Fig. 5 full-path gap (CIFAR-100, points).
const paperGap = 11.6

// finals are the rows' final accuracies (%) by label.
type finals map[string][]float64

func finalsOf(runs []PolicyRuns) finals {
	f := finals{}
	for _, pr := range runs {
		f[pr.Label] = pr.Finals()
	}
	return f
}

func (f finals) mean(label string) (float64, bool) {
	xs, ok := f[label]
	if !ok {
		return 0, false
	}
	m, _ := MeanStd(xs)
	return m, true
}

// cell is a row's mean ± std, or "not run".
func (f finals) cell(label string) string {
	if xs, ok := f[label]; ok {
		return pm(xs)
	}
	return NotRun
}

// part is one rule's half of a claim.
type part struct {
	rule    string
	ran, ok bool
	ours    string
}

// verdict combines the parts: "not run" when none ran, "does not hold"
// when one that ran fails, else "holds"; the rules that did not run are
// named.
func verdict(parts []part) (string, string) {
	var ours, missing []string
	ran, ok := 0, true
	for _, p := range parts {
		if !p.ran {
			missing = append(missing, p.rule)
			continue
		}
		ran++
		ok = ok && p.ok
		ours = append(ours, p.ours)
	}
	if ran == 0 {
		return NotRun + " (" + strings.Join(missing, ", ") + " not in this configuration)", NotRun
	}
	v := Holds
	if !ok {
		v = DoesNotHold
	}
	if len(missing) > 0 {
		v += " (" + strings.Join(missing, ", ") + " not run)"
	}
	return strings.Join(ours, "; "), v
}

var lowBitRules = []string{"G-Binary", "G-Ternary"}

// validatedClaims are Fig. 4's two claims on the validated study.
func validatedClaims(f finals) []Claim {
	within := func(ref string, tol float64) (string, string) {
		var parts []part
		r, rok := f.mean(ref + " all")
		for _, rule := range lowBitRules {
			m, ok := f.mean(rule + " all")
			p := part{rule: rule, ran: ok && rok}
			if p.ran {
				p.ok = math.Abs(m-r) <= tol
				p.ours = fmt.Sprintf("%s %s (%+.2f)", rule, f.cell(rule+" all"), m-r)
			}
			parts = append(parts, p)
		}
		ours, v := verdict(parts)
		return ref + " " + f.cell(ref+" all") + "; " + ours, v
	}
	o1, v1 := within("FP32", 2)
	o2, v2 := within("MajoritySignSGD", 1)
	return []Claim{
		{Name: "Fig. 4: G-Binary and G-Ternary within 2 points of FP32", Paper: "holds on CIFAR-10/ResNet-18", Ours: o1,
			Criterion: "|mean - FP32 mean| <= 2 points for both rules", Verdict: v1},
		{Name: "Fig. 4: G-Binary and G-Ternary within 1 point of MajoritySignSGD", Paper: "holds on CIFAR-10/ResNet-18", Ours: o2,
			Criterion: "|mean - MajoritySignSGD mean| <= 1 point for both rules", Verdict: v2},
	}
}

// boundaryClaims are the claims of Fig. 5, Tables 5 and 6 and the
// learning-rate ablation on the boundary study; cos are the Table 5
// cosines of the FP32 trajectory ([G-Binary, G-Ternary][backbone, head]),
// with hasCos false when no run measured them.
func boundaryClaims(f finals, cos [2][2]float64, hasCos bool) []Claim {
	fp, fpOK := f.mean("FP32 all")
	eachRule := func(check func(rule string) part) (string, string) {
		var parts []part
		for _, rule := range lowBitRules {
			parts = append(parts, check(rule))
		}
		ours, v := verdict(parts)
		return "FP32 " + f.cell("FP32 all") + "; " + ours, v
	}
	gapOurs, gapV := eachRule(func(rule string) part {
		m, ok := f.mean(rule + " all")
		p := part{rule: rule, ran: ok && fpOK}
		gap := fp - m
		p.ok = gap >= paperGap/aboutFactor && gap <= paperGap*aboutFactor
		p.ours = fmt.Sprintf("%s all %s (gap %.2f)", rule, f.cell(rule+" all"), gap)
		return p
	})
	recovery := func(label func(rule string) string) func(rule string) part {
		return func(rule string) part {
			full, ok1 := f.mean(rule + " all")
			split, ok2 := f.mean(label(rule))
			p := part{rule: rule, ran: fpOK && ok1 && ok2}
			frac := (split - full) / (fp - full)
			p.ok = fp > full && frac >= mostFraction
			p.ours = fmt.Sprintf("%s %s (%.0f%% of the %.2f-point gap)", label(rule), f.cell(label(rule)), 100*frac, fp-full)
			return p
		}
	}
	split := func(rule string) string { return rule + " backbone + FP32 head" }
	recOurs, recV := eachRule(recovery(split))
	lrOurs, lrV := eachRule(recovery(func(rule string) string { return split(rule) + " @lr" }))
	var parts []part
	for _, rule := range lowBitRules {
		s, ok1 := f.mean(split(rule))
		rev := "FP32 backbone + " + rule + " head"
		r, ok2 := f.mean(rev)
		parts = append(parts, part{rule: rule, ran: ok1 && ok2, ok: r < s,
			ours: fmt.Sprintf("%s %s vs %s %s", rev, f.cell(rev), split(rule), f.cell(split(rule)))})
	}
	revOurs, revV := verdict(parts)
	cosOurs, cosV := NotRun+" (no cosine diagnostics)", NotRun
	if hasCos {
		parts = nil
		for i, rule := range lowBitRules {
			parts = append(parts, part{rule: rule, ran: true, ok: cos[i][1] < weakFraction*cos[i][0],
				ours: fmt.Sprintf("%s backbone %.3f, head %.3f", rule, cos[i][0], cos[i][1])})
		}
		cosOurs, cosV = verdict(parts)
	}
	return []Claim{
		{Name: "Fig. 5: full-path G-Binary and G-Ternary lag FP32 by about 11.6 points", Paper: "74.45 vs 62.33 / 62.22 (CIFAR-100)", Ours: gapOurs,
			Criterion: fmt.Sprintf("gap within a factor %.1f of 11.6 (%.1f to %.1f points) for both rules", aboutFactor, paperGap/aboutFactor, paperGap*aboutFactor), Verdict: gapV},
		{Name: "Table 5: weak head alignment, well-aligned backbone (100 classes)", Paper: "backbone .723 / .591, head .174 / .142", Ours: cosOurs,
			Criterion: fmt.Sprintf("head cosine < %.1f x backbone cosine (FP32 trajectory) for both aggregates", weakFraction), Verdict: cosV},
		{Name: "Table 6: low-bit backbone + FP32 head recovers most of the gap", Paper: "73.11 / 73.04 (89% / 88% of the gap)", Ours: recOurs,
			Criterion: fmt.Sprintf("recovers >= %.0f%% of the same rule's full-path gap", 100*mostFraction), Verdict: recV},
		{Name: "Table 6: the reverse split (FP32 backbone + low-bit head) is weaker", Paper: "72.46 / 67.26 vs 73.11 / 73.04", Ours: revOurs,
			Criterion: "reverse split mean below the layer-aware split's, for both rules", Verdict: revV},
		{Name: "Learning-rate ablation: FP32 head at the sign learning rate still recovers", Paper: "73.24 / 73.22", Ours: lrOurs,
			Criterion: fmt.Sprintf("recovers >= %.0f%% of the same rule's full-path gap", 100*mostFraction), Verdict: lrV},
	}
}

// fp32Cosines are the mean Table 5 cosines of the FP32 trajectory's
// diagnostics: [G-Binary, G-Ternary][backbone, head].
func fp32Cosines(runs []PolicyRuns) (cos [2][2]float64, ok bool) {
	var xs [2][2][]float64
	for _, pr := range runs {
		if pr.Label != "FP32 all" {
			continue
		}
		for _, r := range pr.Runs {
			for _, d := range r.Result.Diags {
				xs[0][0] = append(xs[0][0], d.Binary.Groups[nn.Backbone])
				xs[0][1] = append(xs[0][1], d.Binary.Groups[nn.Head])
				xs[1][0] = append(xs[1][0], d.Ternary.Groups[nn.Backbone])
				xs[1][1] = append(xs[1][1], d.Ternary.Groups[nn.Head])
			}
		}
	}
	if len(xs[0][0]) == 0 {
		return cos, false
	}
	for i := range 2 {
		for j := range 2 {
			cos[i][j], _ = MeanStd(xs[i][j])
		}
	}
	return cos, true
}

// claimsTable lays out claims beside the paper.
func claimsTable(name, title string, cs []Claim) report.Table {
	t := report.Table{Name: name, Title: title, Columns: []string{"claim", "paper", "ours (mean ± std over seeds)", "criterion", "verdict"}}
	for _, c := range cs {
		t.AddRow(c.Name, c.Paper, c.Ours, c.Criterion, c.Verdict)
	}
	t.Notes = []string{"Verdicts are computed from the runs by the criteria shown, whose thresholds were fixed before the runs ('about' = within a factor 1.5, 'most' = at least half, 'weak' = below half the backbone's); a claim whose policies were not run says so."}
	return t
}

// claimSummary is one summary line per claim.
func claimSummary(cs []Claim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s: %s (ours: %s; paper: %s).", c.Name, c.Verdict, c.Ours, c.Paper)
	}
	return out
}
