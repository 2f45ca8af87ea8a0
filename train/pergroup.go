package train

import (
	"encoding/json"
	"fmt"

	"github.com/neuronfabric/nfabric/nn"
)

// PerGroup holds one value per layer group, indexed by nn.Group. It
// marshals as a JSON object keyed by the groups' names (nn.Group.String),
// in index order: {"backbone":…,"head":…}.
type PerGroup[T any] [nn.NumGroups]T

// MarshalJSON writes the groups in index order.
func (p PerGroup[T]) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for g, v := range p {
		e, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("group %v: %w", nn.Group(g), err)
		}
		if g > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), nn.Group(g).String()...), `":`...)
		b = append(b, e...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes; a missing group keeps its
// zero value, an unknown one is an error.
func (p *PerGroup[T]) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("per-group values: %w", err)
	}
	var out PerGroup[T]
	for k, raw := range m {
		g, err := ParseGroup(k)
		if err != nil || g.String() != k {
			return fmt.Errorf("per-group values: unknown group %q", k)
		}
		if err := json.Unmarshal(raw, &out[g]); err != nil {
			return fmt.Errorf("per-group values: %s: %w", k, err)
		}
	}
	*p = out
	return nil
}
