package run

import "fmt"

// Tier is the budget a run of the blocks uses. Quick keeps the whole of
// `reproduce` to minutes and its training verdicts indicative unless its
// runs converge; Standard is the training block's middle tier, sized so
// that the FP32 references converge and at least five paired seeds fit
// in about an hour on 2 cores (StandardValidatedOptions,
// StandardBoundaryOptions); Full is the paper-scale configuration behind
// the notes (hours). Blocks without a standard configuration of their own
// run their quick one at the standard tier.
type Tier int

// The tiers, cheapest first; the zero value is Quick.
const (
	TierQuick Tier = iota
	TierStandard
	TierFull
)

var tierNames = [...]string{"quick", "standard", "full"}

func (t Tier) String() string {
	if t < 0 || int(t) >= len(tierNames) {
		return fmt.Sprintf("tier(%d)", int(t))
	}
	return tierNames[t]
}

// ParseTier parses "quick", "standard" or "full".
func ParseTier(s string) (Tier, error) {
	for i, n := range tierNames {
		if s == n {
			return Tier(i), nil
		}
	}
	return 0, fmt.Errorf("tier %q: want quick, standard or full", s)
}

// MarshalText writes the tier's name (shard files carry it).
func (t Tier) MarshalText() ([]byte, error) {
	if t < 0 || int(t) >= len(tierNames) {
		return nil, fmt.Errorf("tier %d is not a tier", int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a tier's name, refusing any other.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
