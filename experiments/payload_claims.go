package experiments

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
)

// modelVerdict is a deterministic claim's verdict: holds when ok, does not
// hold otherwise (a model without seeds has no interval to be unsure on).
func modelVerdict(ok bool) string {
	if ok {
		return report.VerdictHolds
	}
	return report.VerdictDoesNotHold
}

// notRun marks a claim its block could not check, saying why.
func notRun(c report.Claim, why string) report.Claim {
	c.Ours, c.Verdict, c.Interval = "not run: "+why, report.VerdictNotRun, ""
	return c
}

// payloadClaims are the Sec. 2 claims the payload block checks: the worked
// example's G-Binary and G-Ternary results, and the traffic ratios of the
// paper's accounting, and the kernels against their reference loops. Every
// claim is listed whatever the units returned: one whose unit is missing
// says not run (payloadClaims(nil) is the block's claim list).
func payloadClaims(us []PayloadUnit) []report.Claim {
	var ex *PayloadExample
	var bits []PayloadBits
	chk, bad := 0, 0
	for _, u := range us {
		switch {
		case u.Example != nil:
			ex = u.Example
		case u.Bits != nil:
			bits = u.Bits
		case u.Check != nil:
			chk++
			if u.Check.Mismatches != 0 {
				bad++
			}
		}
	}
	example := report.Claim{Section: "Sec. 2, worked example",
		Name:      "six positive, two negative of eight: G-Binary +1; G-Ternary 0 where the 2-of-3 gate is zero",
		Paper:     "(+1, +1), (+1, +1), (+1, 0)",
		Criterion: "(G-Binary, G-Ternary) per element equal to the paper's"}
	if ex == nil {
		example = notRun(example, "no worked-example result")
	} else {
		// The example: elements 0-2 each have six positive and two
		// negative signs; element 2 falls on the 2-of-3 gate's zero.
		want := [][2]int{{1, 1}, {1, 1}, {1, 0}}
		ok := len(ex.Binary) == len(want) && len(ex.Ternary) == len(want)
		var got []string
		for i := range ex.Binary {
			t := 0
			if i < len(ex.Ternary) {
				t = ex.Ternary[i]
			}
			got = append(got, fmt.Sprintf("(%s, %s)", signed(ex.Binary[i]), signed(t)))
			if i < len(want) && (ex.Binary[i] != want[i][0] || t != want[i][1]) {
				ok = false
			}
		}
		example.Ours, example.Verdict = strings.Join(got, ", "), modelVerdict(ok)
	}
	out := []report.Claim{example}
	for _, row := range payloadBitsRows {
		r, ok := paperRatio(row.f, row.g)
		if !ok || row.f == lowbit.FP32 {
			continue
		}
		paper := fmt.Sprintf("%.4f", r)
		name := "G-Binary traffic: 1 bit per element"
		if row.f == lowbit.Ternary {
			name = "G-Ternary traffic under the paper's accounting (log2 3 bits)"
		}
		c := report.Claim{Section: "Sec. 2; Table 6 traffic", Name: name, Paper: paper + "x FP32",
			Criterion: "equal to the paper's ratio at its 4 decimals"}
		i := slices.IndexFunc(bits, func(b PayloadBits) bool { return b.Format == row.f.String() && b.Gate == row.gate() })
		if i < 0 {
			out = append(out, notRun(c, "no accounting result"))
			continue
		}
		ours := report.FormatFloat(bits[i].Ratio)
		c.Ours, c.Verdict = ours+"x FP32", modelVerdict(ours == paper)
		out = append(out, c)
	}
	kernels := report.Claim{Section: "Sec. 2, semantics",
		Name:      "packed kernels compute c = popcount, a = 2c - W, u = sgn(a) (and m*u) exactly",
		Paper:     "the definitions",
		Criterion: "no element differs from the reference loops"}
	if chk == 0 {
		kernels = notRun(kernels, "no kernel cross-check result")
	} else {
		kernels.Ours, kernels.Verdict = fmt.Sprintf("%d of %d kernel cross-checks without a mismatch", chk-bad, chk), modelVerdict(bad == 0)
	}
	return append(out, kernels)
}

// signed prints a vote as the paper writes it: +1, -1 or 0.
func signed(v int) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%+d", v)
}
