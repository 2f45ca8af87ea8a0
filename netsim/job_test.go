package netsim

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/usage"
)

// jobOptions is a small valid job: BERT-large on 4 hosts, one step.
func jobOptions() JobOptions {
	c := smallConfig()
	c.Steps = 1
	return JobOptions{Model: "bert-large", BucketMiB: 32, Config: c, Commander: control.DefaultConfig().Commander}
}

// TestJobPlanUsage: a job that cannot run is a usage error naming what is
// wrong, found without ns-3.
func TestJobPlanUsage(t *testing.T) {
	for _, c := range []struct {
		edit func(o *JobOptions)
		msg  string
	}{
		{func(o *JobOptions) { o.BucketMiB = 0 }, "--bucket-mib"},
		{func(o *JobOptions) { o.Config.Scale = 0 }, "--scale 0"},
		{func(o *JobOptions) { o.Config.Workers = 1 }, "workers 1"},
		{func(o *JobOptions) { o.Commander.Smooth = 2 }, "--smooth"},
		{func(o *JobOptions) { o.Model = "no-such-model" }, "--model"},
		{func(o *JobOptions) { o.Config.IntervalNS = 1 }, "limit"},
	} {
		o := jobOptions()
		c.edit(&o)
		if _, err := o.Plan(); !usage.Is(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v; want a usage error naming %q", o, err, c.msg)
		}
	}
	sched, err := jobOptions().Plan()
	if err != nil || len(sched.Releases) == 0 {
		t.Fatalf("valid job: %v", err)
	}
}

// TestRunJobIsSimulateAndJudge: RunJob's telemetry and verdict are those
// of Simulate and Judge on the same trace, byte for byte.
func TestRunJobIsSimulateAndJudge(t *testing.T) {
	needNS3(t)
	o := jobOptions()
	j, err := RunJob(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Trace(o.Model, o.Batch, int64(o.BucketMiB*(1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(context.Background(), o.Config, tr)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := res.Telemetry()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Judge(tel, o.Commander)
	if err != nil {
		t.Fatal(err)
	}
	var got, want bytes.Buffer
	if err := j.WriteTelemetry(&got); err != nil {
		t.Fatal(err)
	}
	control.WriteTelemetry(&want, tel)
	if !bytes.Equal(got.Bytes(), want.Bytes()) || j.Verdict.Label != v.Label || j.Verdict.Relief != v.Relief {
		t.Errorf("RunJob: %s relief %v; Simulate and Judge: %s relief %v (telemetry equal %v)", j.Verdict.Label, j.Verdict.Relief, v.Label, v.Relief, bytes.Equal(got.Bytes(), want.Bytes()))
	}
}
