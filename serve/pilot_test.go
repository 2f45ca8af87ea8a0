package serve_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/pilot"
	"github.com/neuronfabric/nfabric/serve"
	"github.com/neuronfabric/nfabric/serve/wire"
	"github.com/neuronfabric/nfabric/train"
)

// blobs is a tiny synthetic data set (the pilot package's test set): class
// c is a Gaussian blob of 4x4 pixels around a class-specific mean.
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
	for i := range n {
		for j := range 16 {
			v := centers[i%classes][j] + 25*r.NormFloat64()
			d.Pixels = append(d.Pixels, uint8(min(255, max(0, v))))
		}
		d.Labels = append(d.Labels, i%classes)
	}
	return d
}

// TestRecordedPilotOverSocket: a control session fed the events of a
// recorded pilot (the recovery scenario, with a fault window that raises
// an alarm) returns, over a Unix socket, exactly the actions the
// in-process pilot took, each at the step event of its step.
func TestRecordedPilotOverSocket(t *testing.T) {
	cc := control.DefaultConfig()
	cc.WarmupSteps, cc.CooldownSteps, cc.CalibrationSteps = 10, 8, 4
	cc.Ladder = control.Ladder{{Format: lowbit.Binary, Min: 0.2}, {Format: lowbit.Ternary, Min: 0.1}}
	var rec pilot.Recording
	cfg := pilot.Config{
		Scenario:  pilot.GBinaryDefault,
		Train:     train.Config{Model: "mlp", Hidden: []int{16}, Workers: 8, Batch: 64, Epochs: 4, LR: 0.05, SignLR: 0.002, Momentum: 0.9, Seed: 3},
		Control:   cc,
		Gate:      lowbit.PaperGate,
		DiagEvery: 5,
		Fault:     pilot.Fault{StartEpoch: 3, EndEpoch: 3, Rate: 0.9},
		Record:    &rec,
	}
	res, err := pilot.Run(context.Background(), cfg, &data.Sets{Train: blobs(512, 4, 1), Test: blobs(128, 4, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Alarms == 0 || len(res.Actions) < 2 {
		t.Fatalf("the pilot raised %d alarms and took %d actions: nothing to recover from", res.Alarms, len(res.Actions))
	}
	ts := startServer(t, serve.Options{})
	c := ts.dial(t)
	ctx := context.Background()
	s, err := c.OpenSession(ctx, wire.SessionConfig(rec.Control, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var got []control.Action
	for i, ev := range rec.Events {
		acts, err := s.Send(ctx, ev)
		if err != nil {
			t.Fatalf("event %d %+v: %v", i, ev, err)
		}
		for _, a := range acts {
			if ev.Type != control.EvStep || a.Step != ev.Step {
				t.Fatalf("event %d %+v answered with %v", i, ev, a)
			}
		}
		got = append(got, acts...)
	}
	if !reflect.DeepEqual(got, res.Actions) || !reflect.DeepEqual(rec.Actions, res.Actions) {
		t.Fatalf("session actions %v\nrecorded %v\npilot took %v", got, rec.Actions, res.Actions)
	}
	t.Logf("%d events, %d actions, %d alarms", len(rec.Events), len(got), res.Alarms)
}
