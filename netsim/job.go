package netsim

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/usage"
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

// JobOptions is one job simulated once and judged by the Commander
// ('nfabric telemetry ns3'). Its errors name the command's flags.
type JobOptions struct {
	// Model, Batch and BucketMiB build the trace (see Trace).
	Model     string
	Batch     int
	BucketMiB float64
	// Config is the network; its Scale must be given (>= 1), not left 0.
	Config Config
	// Commander judges the trace.
	Commander control.CommanderConfig
}

// Job is the outcome of RunJob: the run, its telemetry with the
// Commander's verdict and figure series, and the bottleneck samples and
// per-link loads behind them.
type Job struct {
	Result *Result
	Outcome
	Samples []Sample
	Loads   []Interval
}

// Plan checks o and builds its trace's schedule, without starting ns-3;
// every error is a usage error naming the flag.
func (o JobOptions) Plan() (*Schedule, error) {
	switch {
	case !(o.BucketMiB > 0) || math.IsInf(o.BucketMiB, 0):
		return nil, usage.Errorf("--bucket-mib %v must be > 0", o.BucketMiB)
	case o.Config.Scale == 0:
		return nil, usage.Errorf("--scale 0: want >= 1 (1 runs unscaled)")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, usage.Wrap(err)
	}
	if err := o.Commander.Validate(); err != nil {
		return nil, usage.Errorf("--smooth: %v", err)
	}
	tr, err := Trace(o.Model, o.Batch, int64(o.BucketMiB*(1<<20)))
	if err != nil {
		return nil, usage.Errorf("--model: %v", err)
	}
	sched, err := Plan(o.Config, tr)
	if err != nil {
		return nil, usage.Wrap(err)
	}
	return sched, nil
}

// RunJob plans o (usage errors first), then, with ns-3 available, runs it
// and judges its telemetry.
func RunJob(ctx context.Context, o JobOptions) (*Job, error) {
	sched, err := o.Plan()
	if err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	res, err := Run(ctx, o.Config, sched)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sched.Model, err)
	}
	return judge(res, o.Commander)
}

// judge turns a run into its telemetry, the Commander's verdict under cc
// and the figure series.
func judge(res *Result, cc control.CommanderConfig) (*Job, error) {
	samples, loads, err := res.Samples()
	if err != nil {
		return nil, err
	}
	tel, err := res.Telemetry()
	if err != nil {
		return nil, err
	}
	v, err := Judge(tel, cc)
	if err != nil {
		return nil, err
	}
	fig, err := FigureSeries(loads, samples, v.Modes)
	if err != nil {
		return nil, err
	}
	return &Job{Result: res, Samples: samples, Loads: loads,
		Outcome: Outcome{Background: res.Config.Background.String(), Telemetry: tel, Verdict: v, Figure: fig}}, nil
}

// WriteTelemetry writes the job's telemetry CSV (control.WriteTelemetry).
func (j *Job) WriteTelemetry(w io.Writer) error { return control.WriteTelemetry(w, j.Telemetry) }

// WriteLoads writes the traffic each link carried per interval beside the
// samples and the Commander's modes (WriteLoads).
func (j *Job) WriteLoads(w io.Writer) error {
	return WriteLoads(w, j.Loads, j.Samples, j.Verdict.Modes)
}
