package experiments

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/usage"
)

// The GPT-scale window of ResNet-18 (11,173,962 parameters) through the
// controller: ceil(4 x 11173962 / 64) lines written and read at 2^37 B/s
// plus 2 x 200 ns; cycles = window x e x 2 GHz.
func TestCollectiveHand(t *testing.T) {
	r, err := RunCollective(context.Background(), run.Config{}, CollectiveOptions{Model: "gpt2-xl", Exposure: 0.01, Models: []string{"resnet18-cifar10"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := math.Ceil(11173962 * 4 / 64.0)
	win := 2*lines*64/math.Exp2(37) + 400e-9
	if len(r.GPTScale) != 1 || math.Abs(r.GPTScale[0].WindowS-win) > 1e-15 || math.Abs(r.GPTScale[0].Cycles-win*0.01*2e9) > 1e-6 {
		t.Errorf("rows %+v; want window %g", r.GPTScale, win)
	}
	if r.Measured || r.Exposure != 0.01 || r.Elements != r.ProfileElements {
		t.Errorf("exposure %v measured %v, elements %d of %d", r.Exposure, r.Measured, r.Elements, r.ProfileElements)
	}
	// The FP32 range spans the FP32 references and nothing else.
	var lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range r.Paths {
		if p.Family == collective.FamilyFP32 {
			lo, hi = math.Min(lo, p.Estimate.Seconds), math.Max(hi, p.Estimate.Seconds)
		}
	}
	if r.FP32Lo != lo || r.FP32Hi != hi || !(lo < hi) {
		t.Errorf("FP32 range %g..%g, want %g..%g", r.FP32Lo, r.FP32Hi, lo, hi)
	}
	// The paper's implied payload: 1.5e9 x 4 B written and read = 87.31 ms.
	if want := 2*6e9/math.Exp2(37) + 400e-9; math.Abs(r.PaperPayload[0]-want) > 1e-12 {
		t.Errorf("paper payload FP32 %g, want %g", r.PaperPayload[0], want)
	}
	res, err := CollectiveLayout(r)
	if err != nil || len(res.Figures) != 1 || len(res.Figures[0].SVG) == 0 || len(res.Tables) != 2 {
		t.Errorf("layout: %v", err)
	}
}

// A negative exposure is measured once by the timing model's anchor.
func TestCollectiveMeasuresExposure(t *testing.T) {
	r, err := RunCollective(context.Background(), run.Config{}, CollectiveOptions{Exposure: -1, Models: []string{"resnet18-cifar10"}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Measured || !(r.Exposure > 0 && r.Exposure < 0.1) || r.GPTScale[0].Exposure != r.Exposure {
		t.Errorf("exposure %v measured %v", r.Exposure, r.Measured)
	}
	if _, err := RunCollective(context.Background(), run.Config{}, CollectiveOptions{Workers: -1, Exposure: 0}); err == nil {
		t.Error("-1 workers accepted")
	}
}

// A 1 MiB payload (262,144 FP32 elements) keeps three significant digits
// in the table: G-Binary writes and reads 262144 bits = 32 KiB (512 lines)
// at 2^37 B/s plus 2 x 200 ns, with e = 0: 2 x (200 ns + 238.4 ns) =
// 876.8 ns, printed in ns (it printed "0.00" in a column fixed to ms).
func TestCollectiveSmallPayloadKeepsDigits(t *testing.T) {
	r, err := RunCollective(context.Background(), run.Config{}, CollectiveOptions{Elements: 262144, Exposure: 0, Models: []string{"resnet18-cifar10"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := CollectiveLayout(r)
	if err != nil {
		t.Fatal(err)
	}
	f7 := res.Tables[0]
	col := -1
	for i, c := range f7.Columns {
		if c == "measured time" {
			col = i
		}
	}
	found := false
	for _, row := range f7.Rows {
		if row[0] == collective.PathGBinary {
			found = true
			if row[col] != "877 ns" {
				t.Errorf("G-Binary time %q; want 877 ns", row[col])
			}
		}
	}
	if !found || col < 0 {
		t.Fatalf("no G-Binary row or time column in %v", f7.Columns)
	}
	if len(res.Figures) != 1 || res.Figures[0].Name != "fig7a-gpt2-xl" {
		t.Errorf("figures %v; want Fig. 7(a)'s bars", res.Figures)
	}
}

// TestCollectiveValidate: options wrong in themselves are usage errors
// naming the flag; the defaults pass; a links file is read into Links.
func TestCollectiveValidate(t *testing.T) {
	def := DefaultCollectiveOptions()
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		o    CollectiveOptions
		want string
	}{
		{CollectiveOptions{Workers: 0, WorkersGiven: true}, "--workers 0"},
		{CollectiveOptions{Workers: 1}, "--workers 1"},
		{CollectiveOptions{Workers: 8, PerNode: 3, PerNodeGiven: true}, "--per-node 3"},
		{CollectiveOptions{Workers: 8, PerNode: 3, Window: "hierarchical"}, "--per-node 3"},
		{CollectiveOptions{Elements: -1}, "--elements"},
		{CollectiveOptions{Exposure: 1.5, ExposureGiven: true}, "--exposure 150"},
		{CollectiveOptions{Exposure: -0.01, ExposureGiven: true}, "--exposure"},
		{CollectiveOptions{Net: "bogus"}, "--net"},
		{CollectiveOptions{Window: "bogus"}, "--window"},
		{CollectiveOptions{Models: []string{"nope"}}, "--model"},
	} {
		if err := c.o.Validate(); !usage.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want a usage error with %q", c.o, err, c.want)
		}
	}
	links := filepath.Join(t.TempDir(), "l.yaml")
	os.WriteFile(links, []byte("links:\n  - name: roce\n    bandwidth: 100Gb/s\n    latency: 3us\n"), 0o644)
	o := CollectiveOptions{LinksFile: links, Net: "roce"}
	if err := o.Validate(); err != nil || len(o.Links) != 1 || o.Links[0].Bandwidth != 12.5e9 {
		t.Errorf("links file: %v %+v", err, o.Links)
	}
	// Without --per-node the default that does not divide only leaves a row out.
	if err := (&CollectiveOptions{Workers: 6}).Validate(); err != nil {
		t.Errorf("6 workers with the default per-node: %v", err)
	}
}
