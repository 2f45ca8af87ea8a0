package control

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
)

// Apply writes actions into the mode latches of every region of each
// action's group (a group's gradient buffer may span many regions), in
// order, time-stamping each write with its step. It stops at the first
// failure and says which action failed.
func Apply(w cxl.ModeWriter, regions map[string][]cxl.RegionID, acts []Action) error {
	for _, a := range acts {
		ids, ok := regions[a.Group]
		if !ok || len(ids) == 0 {
			return fmt.Errorf("control: apply %v: group has no region", a)
		}
		for _, id := range ids {
			if err := w.SetMode(id, a.Mode, a.Step); err != nil {
				return fmt.Errorf("control: apply %v: %w", a, err)
			}
		}
	}
	return nil
}
