package workload

import (
	"strings"
	"testing"
)

// TestTimelineRefusesOverflow: a step too long for the picosecond
// timeline (fwd_flops: 1e30, or a huge batch) is an error naming the
// model, not a negative time.
func TestTimelineRefusesOverflow(t *testing.T) {
	p, err := ParseProfileYAML([]byte("name: big\nlayers: [{name: a, tensors: [{name: w, shape: [4]}], fwd_flops: 1e30}]\n"), "big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Timeline(Schedule{Accel: A100}); err == nil || !strings.Contains(err.Error(), "big") || !strings.Contains(err.Error(), "too long") {
		t.Errorf("fwd_flops 1e30: err %v", err)
	}
	g, err := Builtin("gpt3", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Timeline(Schedule{Accel: A100, Batch: 1000000}); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("gpt3 batch 1e6: err %v", err)
	}
	if tl, err := g.Timeline(Schedule{Accel: A100, Batch: 1}); err != nil || tl.BackwardPS <= 0 {
		t.Errorf("gpt3 batch 1: %v", err)
	}
}
