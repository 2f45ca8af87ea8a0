package pilot

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/train"
)

// blobs is a tiny synthetic data set: class c is a Gaussian blob around a
// class-specific mean, so training is fast and deterministic.
func blobs(n, classes int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	d := &data.Dataset{Name: "blobs", C: 1, H: 4, W: 4, Classes: classes, Mean: []float32{0.5}, Std: []float32{0.25}}
	centers := make([][]float64, classes)
	for c := range centers {
		centers[c] = make([]float64, 16)
		for j := range centers[c] {
			centers[c][j] = 40 + 175*r.Float64()
		}
	}
	for i := 0; i < n; i++ {
		c := i % classes
		for j := 0; j < 16; j++ {
			v := centers[c][j] + 25*r.NormFloat64()
			d.Pixels = append(d.Pixels, uint8(min(255, max(0, v))))
		}
		d.Labels = append(d.Labels, c)
	}
	return d
}

func testConfig(tr Trace) Config {
	cc := control.DefaultConfig()
	cc.WarmupSteps, cc.CooldownSteps, cc.CalibrationSteps = 10, 8, 4
	cc.Ladder = control.Ladder{BinaryMin: 0.2, TernaryMin: 0.1}
	return Config{
		Trace:     tr,
		Train:     train.Config{Model: "mlp", Hidden: []int{16}, Workers: 8, Batch: 64, Epochs: 4, LR: 0.05, SignLR: 0.002, Momentum: 0.9, Seed: 3},
		Control:   cc,
		Gate:      lowbit.PaperGate,
		DiagEvery: 5,
		Fault:     Fault{StartEpoch: 3, EndEpoch: 3, Rate: 0.9},
	}
}

func TestTraces(t *testing.T) {
	sets := &data.Sets{Train: blobs(1024, 4, 1), Test: blobs(256, 4, 2)}
	results := map[Trace]*Result{}
	for _, tr := range Traces() {
		res, err := Run(context.Background(), testConfig(tr), sets)
		if err != nil {
			t.Fatalf("%v: %v", tr, err)
		}
		results[tr] = res
		if res.Steps != 4*1024/64 {
			t.Errorf("%v: %d steps", tr, res.Steps)
		}
	}
	if r := results[AlwaysFP32]; r.LowBitSteps != 0 || r.Traffic != 1 {
		t.Errorf("always-fp32: low-bit %v traffic %v", r.LowBitSteps, r.Traffic)
	}
	if r := results[AlwaysGBinary]; r.LowBitSteps != 1 || r.Traffic != 1.0/32 {
		t.Errorf("always-g-binary: low-bit %v traffic %v", r.LowBitSteps, r.Traffic)
	}
	gd := results[GBinaryDefault]
	if gd.Epochs[0].LowBitBackbone == 1 {
		t.Error("g-binary-default did not start on FP32 (warm-up)")
	}
	if gd.Alarms == 0 {
		t.Errorf("the injected fault raised no recovery alarm: %+v", gd.Epochs)
	}
	if !(gd.LowBitSteps > 0.3 && gd.LowBitSteps < 1) {
		t.Errorf("g-binary-default low-bit share %v", gd.LowBitSteps)
	}
	// Same seed, same result.
	again, err := Run(context.Background(), testConfig(GBinaryDefault), sets)
	if err != nil {
		t.Fatal(err)
	}
	if again.Final != gd.Final || again.LowBitSteps != gd.LowBitSteps || len(again.Actions) != len(gd.Actions) {
		t.Error("pilot is not deterministic")
	}
	for _, tr := range []Trace{FP32Default, GBinaryDefault} {
		if results[tr].LatchOps == 0 || len(results[tr].Actions) == 0 {
			t.Errorf("%v: the plane wrote no latch", tr)
		}
	}
}

func TestParseTrace(t *testing.T) {
	for _, tr := range Traces() {
		if p, err := ParseTrace(tr.String()); err != nil || p != tr {
			t.Errorf("ParseTrace(%q) = %v, %v", tr, p, err)
		}
	}
	if _, err := ParseTrace("sometimes"); err == nil {
		t.Error("unknown trace accepted")
	}
}
