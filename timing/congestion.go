package timing

// SaturatedUtil is the busiest gate's utilisation at or above which a run
// counts as congested: its load oversubscribed the link, so reads queue in
// front of the gate. Table 4's default congested row at N = 1 measures
// 99.98%; the same share with one outstanding line per stream measures 7%.
const SaturatedUtil = 0.9

// Congested reports whether p's identity run kept its busiest gate at
// least SaturatedUtil busy: whether the run measured congestion, rather
// than whether its link share was reduced.
func (p Pair) Congested() bool { return p.Identity.LinkUtil >= SaturatedUtil }

// PeakLinkUtil is the highest identity-run gate utilisation among pairs
// (0 for none).
func PeakLinkUtil(pairs []Pair) float64 {
	var u float64
	for _, p := range pairs {
		u = max(u, p.Identity.LinkUtil)
	}
	return u
}
