package hw

import (
	"context"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/usage"
)

// TestParseNames: widths, simulators and sum datapaths by name, and the
// refusals a user can make, each a usage error.
func TestParseNames(t *testing.T) {
	if ws, err := ParseWidths([]string{"all"}); err != nil || !slices.Equal(ws, []int{64, 128, 256, 512, 1024}) {
		t.Errorf("all: %v %v", ws, err)
	}
	if ws, err := ParseWidths([]string{"512", " 64"}); err != nil || !slices.Equal(ws, []int{512, 64}) {
		t.Errorf("512,64: %v %v", ws, err)
	}
	ds, err := ParseSumDatapaths([]string{"int8", "bfp8", "int8", "none"})
	if err != nil || len(ds) != 2 || ds[0].Paper() || ds[1].Paper() || ds[0] == ds[1] {
		t.Errorf("int8,bfp8,int8,none: %v %v; want the two sum datapaths once each", ds, err)
	}
	for name, f := range map[string]func() error{
		"width 63":     func() error { _, err := ParseWidths([]string{"63"}); return err },
		"width x":      func() error { _, err := ParseWidths([]string{"x"}); return err },
		"sim foo":      func() error { _, err := ParseSimulators([]string{"foo"}); return err },
		"formats vote": func() error { _, err := ParseSumDatapaths([]string{"vote"}); return err },
		"vectors 0": func() error {
			_, err := CosimSweep(context.Background(), []Config{{Width: 64}}, Simulators, 0, 1, "", func(CosimRun) {})
			return err
		},
		"width 96 in a sweep": func() error {
			_, err := CosimSweep(context.Background(), []Config{{Width: 96}}, Simulators, 1, 1, "", func(CosimRun) {})
			return err
		},
	} {
		if err := f(); err == nil || !usage.Is(err) {
			t.Errorf("%s: %v; want a usage error", name, err)
		}
	}
	if err := (CosimTally{Passed: 3}).Err(); err != nil {
		t.Errorf("3 passed: %v", err)
	}
	if (CosimTally{Passed: 3, Failed: 1}).Err() == nil || (CosimTally{}).Err() == nil {
		t.Error("a failed run, or none at all, must be an error")
	}
}
