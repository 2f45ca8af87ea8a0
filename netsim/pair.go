package netsim

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/control"
)

// PairOptions is one job simulated twice: without background and with a
// congesting one.
type PairOptions struct {
	// Model, Batch and BucketBytes build the trace (see Trace).
	Model       string `json:"model"`
	Batch       int    `json:"batch,omitempty"`
	BucketBytes int64  `json:"bucket_bytes,omitempty"`
	// Config is the network; its Background is replaced by none and by
	// Congested.
	Config    Config     `json:"config"`
	Congested Background `json:"congested"`
	// Commander judges the traces (Judge) and colours the figures.
	Commander control.CommanderConfig `json:"commander"`
}

// PairRun is the outcome of RunPair.
type PairRun struct {
	// StepNS is the FP32 reference step period both runs used.
	StepNS int64   `json:"step_ns"`
	Quiet  Outcome `json:"quiet"`
	Loud   Outcome `json:"loud"`
}

// Outcome is one simulated trace with what the Commander made of it.
type Outcome struct {
	Background string              `json:"background"`
	Telemetry  []control.Telemetry `json:"telemetry"`
	Verdict    Verdict             `json:"verdict"`
	// Figure is FigureSeries of the run under the Commander's modes.
	Figure []Series `json:"figure"`
}

// RunPair simulates o's job without background and with o.Congested.
func RunPair(ctx context.Context, o PairOptions) (*PairRun, error) {
	tr, err := Trace(o.Model, o.Batch, o.BucketBytes)
	if err != nil {
		return nil, fmt.Errorf("netsim: %w", err)
	}
	out := &PairRun{}
	for i, bg := range []Background{{}, o.Congested} {
		c := o.Config
		c.Background = bg
		res, err := Simulate(ctx, c, tr)
		if err != nil {
			return nil, err
		}
		j, err := judge(res, o.Commander)
		if err != nil {
			return nil, err
		}
		r := j.Outcome
		out.StepNS = res.Schedule.StepNS
		if i == 0 {
			out.Quiet = r
		} else {
			out.Loud = r
		}
	}
	return out, nil
}
