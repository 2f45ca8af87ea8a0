package experiments

import (
	"fmt"
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

// payloadClaims are the Sec. 2 claims the payload block checks: the worked
// example's G-Binary and G-Ternary results, and the traffic ratios of the
// paper's accounting.
func payloadClaims(us []PayloadUnit) []report.Claim {
	var out []report.Claim
	for _, u := range us {
		switch {
		case u.Example != nil:
			e := u.Example
			// The example: elements 0-2 each have six positive and two
			// negative signs; element 2 falls on the 2-of-3 gate's zero.
			want := [][2]int{{1, 1}, {1, 1}, {1, 0}}
			ok := len(e.Binary) == len(want)
			var got []string
			for i := range e.Binary {
				got = append(got, fmt.Sprintf("(%s, %s)", signed(e.Binary[i]), signed(e.Ternary[i])))
				if i < len(want) && (e.Binary[i] != want[i][0] || e.Ternary[i] != want[i][1]) {
					ok = false
				}
			}
			out = append(out, report.Claim{Section: "Sec. 2, worked example",
				Name:      "six positive, two negative of eight: G-Binary +1; G-Ternary 0 where the 2-of-3 gate is zero",
				Paper:     "(+1, +1), (+1, +1), (+1, 0)",
				Ours:      strings.Join(got, ", "),
				Criterion: "(G-Binary, G-Ternary) per element equal to the paper's",
				Verdict:   modelVerdict(ok)})
		case u.Bits != nil:
			for _, b := range u.Bits {
				if b.PaperRatio == "-" || b.Format == lowbit.FP32.String() {
					continue
				}
				ours := report.FormatFloat(b.Ratio)
				name := "G-Binary traffic: 1 bit per element"
				if b.Format == lowbit.Ternary.String() {
					name = "G-Ternary traffic under the paper's accounting (log2 3 bits)"
				}
				out = append(out, report.Claim{Section: "Sec. 2; Table 6 traffic", Name: name,
					Paper: b.PaperRatio + "x FP32", Ours: ours + "x FP32",
					Criterion: "equal to the paper's ratio at its 4 decimals",
					Verdict:   modelVerdict(ours == b.PaperRatio)})
			}
		}
	}
	chk, bad := 0, 0
	for _, u := range us {
		if u.Check != nil {
			chk++
			if u.Check.Mismatches != 0 {
				bad++
			}
		}
	}
	if chk > 0 {
		out = append(out, report.Claim{Section: "Sec. 2, semantics",
			Name:      "packed kernels compute c = popcount, a = 2c - W, u = sgn(a) (and m*u) exactly",
			Paper:     "the definitions",
			Ours:      fmt.Sprintf("%d of %d kernel cross-checks without a mismatch", chk-bad, chk),
			Criterion: "no element differs from the reference loops",
			Verdict:   modelVerdict(bad == 0)})
	}
	return out
}

// signed prints a vote as the paper writes it: +1, -1 or 0.
func signed(v int) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%+d", v)
}
