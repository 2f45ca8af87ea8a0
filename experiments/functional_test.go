package experiments

import (
	"context"
	"strings"
	"testing"
)

func TestFunctionalBlock(t *testing.T) {
	res, err := Functional(context.Background(), FunctionalParams{Lines: 2000, Workers: 8, Sweeps: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 0 || res.Passed == 0 {
		t.Fatalf("%s", FunctionalClosing(res))
	}
	sec6 := res.Tables[0]
	if len(sec6.Rows) != 4 || !strings.HasPrefix(sec6.Columns[5], "paper") {
		t.Fatalf("sec6 table %+v", sec6)
	}
	for _, r := range sec6.Rows {
		transformed := r[0] == "g-binary" || r[0] == "g-ternary"
		if r[4] != "match" || transformed != strings.HasPrefix(r[6], "flags") {
			t.Errorf("row %v", r)
		}
		if (r[0] != "fp32-bypass") != (r[5] == "match") {
			t.Errorf("paper column %v", r)
		}
	}
	if !strings.Contains(res.Text(), "g-ternary") {
		t.Error("text rendering lacks the table")
	}
	var found bool
	for _, b := range Blocks() {
		found = found || (b.Name == "functional" && b.Order == 10)
	}
	if !found {
		t.Error("functional block not registered at order 10")
	}
	if _, err := Functional(context.Background(), FunctionalParams{Lines: 10, Workers: 9}); err == nil {
		t.Error("9 workers accepted")
	}
}
