package main

import "testing"

// TestBudgetChanged: a study's claims name the tier unchanged only when
// no flag but the tier, seed, data directory or output flags was given.
func TestBudgetChanged(t *testing.T) {
	for _, c := range []struct {
		flags map[string]string
		want  bool
	}{
		{map[string]string{"tier": "standard", "seed": "7", "json": "true"}, false},
		{map[string]string{"tier": "standard", "epochs": "20"}, true},
		{map[string]string{"all-policies": "true"}, true},
		{nil, false},
	} {
		fs := newTrainStudyCmd("boundary").Flags()
		for k, v := range c.flags {
			if err := fs.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		if got := budgetChanged(fs); got != c.want {
			t.Errorf("%v: changed %v, want %v", c.flags, got, c.want)
		}
	}
}
