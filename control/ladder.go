package control

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Rung is one format on the admission ladder: a group is admitted to it
// when the cosine between the format's aggregate of the group's warm-up
// gradients and their FP32 mean (train.StepFormatCosines) reaches Min.
type Rung struct {
	Format lowbit.Format
	Min    float64
}

// Ladder is the deterministic admission ladder of paper Sec. 8, over any
// set of formats (extended beyond the paper's two low-bit rungs, as its
// Sec. 1 allows): Admit tries the rungs in order of traffic, lowest first,
// under the paper's accounting (G-Binary 1, G-Ternary 1.58, INT8 8, BFP8
// 8.125 bits per element), and admits the first that passes; a group that
// passes none stays on FP32 (32 bits), which is never a rung: it always
// passes. The order is the formats' traffic, not the order the rungs are
// listed in. A group that passes no rung stays on FP32, which is how a
// sensitive classifier head stays on FP32 while its backbone is admitted.
//
// # Calibration
//
// The paper's two rungs (DefaultLadder) were set from the cosine
// diagnostics the paper reports at epoch 20 (its Table 5), not from our
// runs: a backbone measures .69-.72 (G-Binary) and .57-.59 (G-Ternary), a
// CIFAR-100 head .17/.14. With G-Binary at 0.75 and G-Ternary at 0.5,
// Table 5's CIFAR-100 values select G-Ternary for the backbone and FP32
// for the head, which is the mode the paper's live loop settles on;
// G-Binary's bar above the observed backbone value is the reason G-Binary
// is not chosen there. G-Binary's stricter bar reflects that it carries no
// zero gate to suppress uncertain elements.
//
// The paper reports no 8-bit formats; their default 0.95 (ExtendedLadder)
// is a closed form: for an aggregate u = m + e with the quantization error
// e uncorrelated with the FP32 mean m, cos(u, m) = 1/sqrt(1 + r^2) with
// r = |e|/|m|, so 0.95 admits an 8-bit rung while its error stays under a
// third of the mean gradient (r = 0.33). Int8's error grows with a
// tensor's largest |g| over its typical |g| (one scale per bucket); BFP8's
// with the spread inside a 64-element block, which is why BFP8 is the rung
// above INT8: it passes where a heavy-tailed tensor fails INT8.
//
// The values are configuration (ParseLadder, JSON): calibrate them on a
// workload's own warm-up diagnostics (CalibrateLadder; nfabric pilot
// prints them), as the paper notes that vision thresholds do not transfer
// unchanged to fine-tuning.
type Ladder []Rung

// DefaultLadder returns the paper's two rungs, G-Binary at 0.75 and
// G-Ternary at 0.5, calibrated as described on Ladder.
func DefaultLadder() Ladder { return Ladder{{lowbit.Binary, 0.75}, {lowbit.Ternary, 0.5}} }

// ExtendedLadder returns a rung for every format of lowbit's registry but
// FP32: the paper's two as DefaultLadder, every format beyond the paper at
// 0.95 (see Ladder).
func ExtendedLadder() Ladder {
	l := DefaultLadder()
	for _, f := range lowbit.Formats() {
		if !f.Paper() {
			l = append(l, Rung{f, 0.95})
		}
	}
	return l
}

// rungTraffic is the order of the ladder: bits per element under the
// paper's accounting.
func rungTraffic(f lowbit.Format) float64 {
	return lowbit.BitsPerElement(f, lowbit.PaperGate, lowbit.PaperAccounting)
}

// CheckWorkers returns an error when a rung's format cannot aggregate w
// workers exactly (lowbit.CheckSumWorkers: INT8 and BFP8 sum at most
// lowbit.MaxSumWorkers), so that a ladder which could admit such a rung is
// refused before the run, not when a group first reaches it.
func (r Ladder) CheckWorkers(w int) error {
	for _, g := range r {
		if err := lowbit.CheckSumWorkers(g.Format, w); err != nil {
			return fmt.Errorf("ladder rung %v: %w", g.Format, err)
		}
	}
	return nil
}

// Validate checks that every rung is a known format other than FP32,
// listed once, with a threshold in [-1, 1].
func (r Ladder) Validate() error {
	seen := map[lowbit.Format]bool{}
	for _, g := range r {
		switch {
		case !g.Format.Valid():
			return fmt.Errorf("ladder rung: unknown format %v", g.Format)
		case g.Format == lowbit.FP32:
			return fmt.Errorf("ladder rung fp32: FP32 is the ladder's top, always admitted, not a rung")
		case seen[g.Format]:
			return fmt.Errorf("ladder rung %v given twice", g.Format)
		case !(g.Min >= -1 && g.Min <= 1):
			return fmt.Errorf("ladder rung %v: minimum cosine %v is not in [-1, 1]", g.Format, g.Min)
		}
		seen[g.Format] = true
	}
	return nil
}

// Ordered returns the rungs in ladder order, lowest traffic first.
func (r Ladder) Ordered() Ladder {
	o := slices.Clone(r)
	slices.SortStableFunc(o, func(a, b Rung) int {
		ta, tb := rungTraffic(a.Format), rungTraffic(b.Format)
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})
	return o
}

// Label names the rung's format as the ladder's sentences do: G-Binary,
// G-Ternary, INT8, BFP8 (lowbit.Format.Label).
func (g Rung) Label() string { return g.Format.Label() }

// Admit is the admission rule: the one decision the control plane, the
// what-if planner and the format pilot take for a group. cos holds the
// group's latest diagnostics indexed by format, NaN where a format was not
// measured. It returns the lowest-traffic format whose rung cos passes
// (cos[f] >= Min; a NaN passes nothing), FP32 when none does or when no
// format other than FP32 was measured at all (no diagnostics yet), and a
// sentence that says why. The controller mode that runs the format is
// cxl.Aggregate(f), its training rule train.FormatRule(f). It assumes
// Validate passed.
func (r Ladder) Admit(cos [lowbit.NumFormats]float64) (lowbit.Format, string) {
	if !measured(cos) {
		return lowbit.FP32, "no diagnostics yet, stay on FP32"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	var failed []string
	o := r.Ordered()
	for _, g := range o {
		c := cos[g.Format]
		switch {
		case c >= g.Min:
			pass := fmt.Sprintf("%s cosine %s >= %s", g.Format.Label(), f(c), f(g.Min))
			return g.Format, "ladder: " + strings.Join(append(failed, pass), ", ")
		case math.IsNaN(c):
			failed = append(failed, g.Format.Label()+" not measured")
		default:
			failed = append(failed, fmt.Sprintf("%s cosine %s < %s", g.Format.Label(), f(c), f(g.Min)))
		}
	}
	if len(o) == 0 {
		return lowbit.FP32, "ladder: no rungs, keep FP32"
	}
	// A rung without a cosine is named as not measured, never printed as a
	// NaN "below" its minimum.
	var cs, ms, absent []string
	for _, g := range o {
		if c := cos[g.Format]; math.IsNaN(c) {
			absent = append(absent, g.Format.Label())
		} else {
			cs = append(cs, fmt.Sprintf("%s (%s)", f(c), g.Format.Label()))
			ms = append(ms, f(g.Min))
		}
	}
	var parts []string
	if len(cs) > 0 {
		word := "cosines"
		if len(cs) == 1 {
			word = "cosine"
		}
		parts = append(parts, fmt.Sprintf("%s %s below %s", word, andList(cs), andList(ms)))
	}
	if len(absent) > 0 {
		parts = append(parts, andList(absent)+" not measured")
	}
	return lowbit.FP32, "ladder: " + strings.Join(parts, ", ") + ", keep FP32"
}

// measured reports whether cos holds a cosine of some format other than
// FP32: whether a group has diagnostics at all; notMeasured is its empty
// value.
func measured(cos [lowbit.NumFormats]float64) bool {
	for f, c := range cos {
		if lowbit.Format(f) != lowbit.FP32 && !math.IsNaN(c) {
			return true
		}
	}
	return false
}

// notMeasured returns diagnostics in which no format was measured (every
// cosine NaN): what Admit reads as no diagnostics yet.
func notMeasured() [lowbit.NumFormats]float64 {
	var c [lowbit.NumFormats]float64
	for i := range c {
		c[i] = math.NaN()
	}
	return c
}

// andList joins "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// String writes the rungs as ParseLadder reads them, in ladder order:
// "g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95".
func (r Ladder) String() string {
	parts := make([]string, 0, len(r))
	for _, g := range r.Ordered() {
		parts = append(parts, g.Format.String()+":"+strconv.FormatFloat(g.Min, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// ParseLadder reads comma-separated format:min entries, each format a name
// lowbit.ParseFormat accepts (so "int8:0.95,g-binary:0.7" and
// "binary:0.7" work), and validates them. "" (or "none") is no rung:
// everything stays on FP32.
func ParseLadder(s string) (Ladder, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return Ladder{}, nil
	}
	var r Ladder
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("ladder rungs %q: entry %q is not format:min_cosine", s, part)
		}
		f, err := lowbit.ParseFormat(name)
		if err != nil {
			return nil, fmt.Errorf("ladder rungs %q: %w", s, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("ladder rungs %q: %v: minimum cosine %q is not a number", s, f, val)
		}
		r = append(r, Rung{Format: f, Min: v})
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("ladder rungs %q: %w", s, err)
	}
	return r, nil
}

type rungJSON struct {
	Format string  `json:"format"`
	Min    float64 `json:"min_cosine"`
}

// MarshalJSON writes {"format":"int8","min_cosine":0.95}.
func (g Rung) MarshalJSON() ([]byte, error) {
	if !g.Format.Valid() {
		return nil, fmt.Errorf("ladder rung: unknown format %v", g.Format)
	}
	return json.Marshal(rungJSON{Format: g.Format.String(), Min: g.Min})
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown format or a
// threshold outside [-1, 1] is an error.
func (g *Rung) UnmarshalJSON(b []byte) error {
	var j rungJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("ladder rung: %w", err)
	}
	f, err := lowbit.ParseFormat(j.Format)
	if err != nil {
		return fmt.Errorf("ladder rung: %w", err)
	}
	if !(j.Min >= -1 && j.Min <= 1) {
		return fmt.Errorf("ladder rung %v: minimum cosine %v is not in [-1, 1]", f, j.Min)
	}
	*g = Rung{Format: f, Min: j.Min}
	return nil
}

// Min returns the threshold of f's rung, and whether r has one.
func (r Ladder) Min(f lowbit.Format) (float64, bool) {
	for _, g := range r {
		if g.Format == f {
			return g.Min, true
		}
	}
	return 0, false
}

// With returns r with f's rung set to min: changed in place of the old
// one, or added. r itself is not modified.
func (r Ladder) With(f lowbit.Format, min float64) Ladder {
	o := slices.Clone(r)
	for i := range o {
		if o[i].Format == f {
			o[i].Min = min
			return o
		}
	}
	return append(o, Rung{Format: f, Min: min})
}

// above returns the rungs with more traffic than f's, the ones a group on
// f falls back through.
func (r Ladder) above(f lowbit.Format) Ladder {
	var o Ladder
	for _, g := range r {
		if rungTraffic(g.Format) > rungTraffic(f) {
			o = append(o, g)
		}
	}
	return o
}
