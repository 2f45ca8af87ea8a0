package timing

// SaturatedUtil is the busiest gate's utilisation at or above which a run
// counts as congested: its load oversubscribed the link, so reads queue in
// front of the gate. Table 4's default congested row at N = 1 measures
// 99.98%; the same share with one outstanding line per stream measures 7%.
const SaturatedUtil = 0.9

// Congested reports whether r's identity run kept its busiest gate at
// least SaturatedUtil busy: whether the run measured congestion, rather
// than whether its link share was reduced.
func (r Row) Congested() bool { return r.Pair.Identity.LinkUtil >= SaturatedUtil }

// PeakLinkUtil is the highest identity-run gate utilisation among rows
// (0 for none).
func PeakLinkUtil(rows []Row) float64 {
	var u float64
	for _, r := range rows {
		u = max(u, r.Pair.Identity.LinkUtil)
	}
	return u
}
