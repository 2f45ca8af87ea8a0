package netsim

import (
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/workload"
)

// Trace builds the FP32 gradient bucket trace of a model (a built-in
// profile name or a YAML profile file): the A100 time model at the
// profile's batch (batch 0) or the given one, buckets of bucketBytes (0:
// the paper's 32 MiB) cut from the flat gradient stream.
func Trace(model string, batch int, bucketBytes int64) (*workload.Trace, error) {
	p, err := workload.LoadProfile(model, 0)
	if err != nil {
		return nil, err
	}
	tl, err := p.Timeline(workload.Schedule{Accel: workload.A100, Batch: batch})
	if err != nil {
		return nil, err
	}
	return workload.Bucketize(tl, workload.BucketOptions{CapBytes: bucketBytes, Mode: workload.SplitTensors})
}

// HostLink is the link the FP32 reference schedule times the ring on: the
// host rate, and alpha the two link delays between a host and its ring
// neighbour through the switch.
func (c Config) HostLink() collective.Link {
	return collective.Link{Name: "ns-3 host link", Bandwidth: c.HostRate, Latency: 2 * float64(c.DelayNS) * 1e-9}
}

// Plan checks c and builds the schedule of c.Steps steps of tr at the FP32
// reference step period, and checks the run's samples against
// MaxLinkSamples, without starting ns-3: a command calls it before any
// work and reports its error as a usage error.
func Plan(c Config, tr *workload.Trace) (*Schedule, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	stepNS, err := ReferenceStepNS(tr, c.Workers, c.HostLink())
	if err != nil {
		return nil, err
	}
	sched, err := NewSchedule(tr, c.Steps, stepNS, c.scale(), c.Workers)
	if err != nil {
		return nil, err
	}
	if _, _, err := c.sampling(sched); err != nil {
		return nil, err
	}
	return sched, nil
}

// Simulate runs c.Steps steps of tr at the FP32 reference step period
// (Plan, then Run).
func Simulate(ctx context.Context, c Config, tr *workload.Trace) (*Result, error) {
	sched, err := Plan(c, tr)
	if err != nil {
		return nil, err
	}
	res, err := Run(ctx, c, sched)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tr.Model, err)
	}
	return res, nil
}
