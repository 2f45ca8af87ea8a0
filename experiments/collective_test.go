package experiments

import (
	"context"
	"math"
	"testing"
)

// Hand computation: 1.5e9 elements at 1 bit = 187,500,000 B = 2,929,687.5
// lines -> 2,929,688 lines of 64 B, written and read at 2^37 B/s, times
// (1 + e).
func TestFig7Hand(t *testing.T) {
	const e = 0.02
	res, err := Fig7(context.Background(), Config{}, CollectiveOptions{Model: "gpt2-xl", Exposure: e, Elements: 1_500_000_000})
	if err != nil {
		t.Fatal(err)
	}
	data := res.Data.(map[string]any)
	rows := data["rows"].([]Fig7Row)
	want := map[string]float64{
		"G-Binary (CXL controller)":                       2 * 2929688 * 64 / math.Exp2(37) * (1 + e),
		"FP32 CXL pooling (write + read, no aggregation)": 2 * 6e9 / math.Exp2(37),
		"FP32 NCCL/RDMA ring":                             14*5e-6 + 1.75*6e9/25e9,
	}
	found := 0
	for _, r := range rows {
		w, ok := want[r.Path]
		if !ok {
			continue
		}
		found++
		// The CXL rows include 2 x 200 ns of latency, scaled by (1+e) when aggregating.
		lat := 0.0
		if r.Route == "cxl" {
			lat = 400e-9
			if r.Bits < 32 {
				lat *= 1 + e
			}
		}
		if math.Abs(r.Seconds-(w+lat)) > 1e-12 {
			t.Errorf("%s: %.9f s; want %.9f", r.Path, r.Seconds, w+lat)
		}
	}
	if found != len(want) {
		t.Errorf("found %d of %d rows", found, len(want))
	}
	if len(res.Figures) != 1 || len(res.Figures[0].SVG) == 0 {
		t.Error("no figure")
	}
}

func TestGPTScaleHand(t *testing.T) {
	res, err := GPTScale(context.Background(), Config{}, CollectiveOptions{Exposure: 0.01, Models: []string{"resnet18-cifar10"}})
	if err != nil {
		t.Fatal(err)
	}
	rows := res.Data.([]GPTScaleRow)
	lines := math.Ceil(11173962 * 4 / 64.0)
	win := 2*lines*64/math.Exp2(37) + 400e-9
	if len(rows) != 1 || math.Abs(rows[0].WindowS-win) > 1e-15 || math.Abs(rows[0].Cycles-win*0.01*2e9) > 1e-6 {
		t.Errorf("rows %+v; want window %g", rows, win)
	}
}
