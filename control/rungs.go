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

// Rungs is the admission ladder over any set of formats (paper Sec. 8,
// extended beyond the paper's two low-bit rungs, as its Sec. 1 allows):
// Admit tries the rungs in order of traffic, lowest first, under the
// paper's accounting (G-Binary 1, G-Ternary 1.58, INT8 8, BFP8 8.125 bits
// per element), and admits the first that passes; a group that passes none
// stays on FP32 (32 bits), which is never a rung: it always passes. The
// order is the formats' traffic, not the order the rungs are listed in.
//
// Ladder is the paper's two-rung case and admits through Rungs.
//
// # Calibration
//
// G-Binary's 0.75 and G-Ternary's 0.5 are Ladder's, set from the paper's
// Table 5 (see Ladder). The paper reports no 8-bit formats; their default
// 0.95 is a closed form: for an aggregate u = m + e with the quantization
// error e uncorrelated with the FP32 mean m, cos(u, m) = 1/sqrt(1 + r^2)
// with r = |e|/|m|, so 0.95 admits an 8-bit rung while its error stays
// under a third of the mean gradient (r = 0.33). Int8's error grows with
// a tensor's largest |g| over its typical |g| (one scale per bucket);
// BFP8's with the spread inside a 64-element block, which is why BFP8 is
// the rung above INT8: it passes where a heavy-tailed tensor fails INT8.
// On a workload, CalibrateRungs floors each rung to its calibration
// group's warm-up cosine as CalibrateLadder does; every value is
// configuration (ParseRungs, JSON).
type Rungs []Rung

// DefaultRungs returns a rung for every format of lowbit's registry but
// FP32, calibrated as described on Rungs: the paper's two at Ladder's
// thresholds, every format beyond the paper at 0.95.
func DefaultRungs() Rungs {
	r := DefaultLadder().Rungs()
	for _, f := range lowbit.Formats() {
		if !f.Paper() {
			r = append(r, Rung{f, 0.95})
		}
	}
	return r
}

// Rungs returns the paper's two rungs of l.
func (l Ladder) Rungs() Rungs {
	return Rungs{{lowbit.Binary, l.BinaryMin}, {lowbit.Ternary, l.TernaryMin}}
}

// rungTraffic is the order of the ladder: bits per element under the
// paper's accounting.
func rungTraffic(f lowbit.Format) float64 {
	return lowbit.BitsPerElement(f, lowbit.PaperGate, lowbit.PaperAccounting)
}

// Validate checks that every rung is a known format other than FP32,
// listed once, with a threshold in [-1, 1].
func (r Rungs) Validate() error {
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
func (r Rungs) Ordered() Rungs {
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

// Admit returns the lowest-traffic format whose rung cos passes
// (cos[f] >= Min, cos indexed by format; a NaN passes nothing), FP32 when
// none does, and a sentence that says why. It assumes Validate passed.
func (r Rungs) Admit(cos [lowbit.NumFormats]float64) (lowbit.Format, string) {
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

// andList joins "a", "a and b", "a, b and c".
func andList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// String writes the rungs as ParseRungs reads them, in ladder order:
// "g-binary:0.75,g-ternary:0.5,int8:0.95,bfp8:0.95".
func (r Rungs) String() string {
	parts := make([]string, 0, len(r))
	for _, g := range r.Ordered() {
		parts = append(parts, g.Format.String()+":"+strconv.FormatFloat(g.Min, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// ParseRungs reads comma-separated format:min entries, each format a name
// lowbit.ParseFormat accepts (so "int8:0.95,g-binary:0.7" and
// "binary:0.7" work), and validates them. "" (or "none") is no rung:
// everything stays on FP32.
func ParseRungs(s string) (Rungs, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return Rungs{}, nil
	}
	var r Rungs
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

// CalibrateRungs derives each rung's threshold from a calibration group's
// warm-up cosines (cos indexed by format, train.StepFormatCosines of the
// backbone of a fault-free FP32 run): the cosine floored to a multiple of
// LadderStep, exactly as CalibrateLadder does for the paper's two rungs,
// so the calibration group passes every rung. formats chooses the rungs.
func CalibrateRungs(formats []lowbit.Format, cos [lowbit.NumFormats]float64) (Rungs, error) {
	r := make(Rungs, 0, len(formats))
	for _, f := range formats {
		if !f.Valid() {
			return nil, fmt.Errorf("calibrate rungs: unknown format %v", f)
		}
		c := cos[f]
		if !finite(c) || math.Abs(c) > 1 {
			return nil, fmt.Errorf("calibrate rungs: %v cosine %v not in [-1, 1]", f, c)
		}
		r = append(r, Rung{Format: f, Min: floorToStep(c)})
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate rungs: %w", err)
	}
	return r, nil
}

// Min returns the threshold of f's rung, and whether r has one.
func (r Rungs) Min(f lowbit.Format) (float64, bool) {
	for _, g := range r {
		if g.Format == f {
			return g.Min, true
		}
	}
	return 0, false
}

// With returns r with f's rung set to min: changed in place of the old
// one, or added. r itself is not modified.
func (r Rungs) With(f lowbit.Format, min float64) Rungs {
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
func (r Rungs) above(f lowbit.Format) Rungs {
	var o Rungs
	for _, g := range r {
		if rungTraffic(g.Format) > rungTraffic(f) {
			o = append(o, g)
		}
	}
	return o
}
