package experiments

import (
	"math"
	"testing"

	"github.com/neuronfabric/nfabric/workload"
)

func TestReplayOptionsCheck(t *testing.T) {
	valid := func() ReplayOptions {
		return ReplayOptions{Models: []string{"bert-large"}, Accel: workload.A100, ValidateScale: 128}
	}
	tests := []struct {
		name string
		edit func(o *ReplayOptions)
		want string
	}{
		{"a model", func(*ReplayOptions) {}, ""},
		{"a trace alone", func(o *ReplayOptions) { o.Models, o.Traces = nil, []string{"t.csv"} }, ""},
		{"nothing", func(o *ReplayOptions) { o.Models = nil }, "nothing to replay: give --model or --trace"},
		{"zero peak", func(o *ReplayOptions) { o.Accel = workload.Accelerator{Name: "custom", Efficiency: 0.5} }, "accelerator custom: peak 0 FLOP/s must be finite and > 0"},
		{"infinite peak", func(o *ReplayOptions) { o.Accel.PeakFLOPS = math.Inf(1) }, "must be finite and > 0"},
		{"efficiency above 1", func(o *ReplayOptions) { o.Accel.Efficiency = 1.5 }, "efficiency 1.5 must be in (0, 1]"},
		{"zero validation scale", func(o *ReplayOptions) { o.ValidateScale = 0 }, "--validate-scale 0: want at least 1"},
		{"negative validation scale", func(o *ReplayOptions) { o.ValidateScale = -3 }, "--validate-scale -3: want at least 1"},
		{"negative batch", func(o *ReplayOptions) { o.Batch = -1 }, "--batch and --seq must be >= 0"},
		{"negative seq", func(o *ReplayOptions) { o.Seq = -1 }, "--batch and --seq must be >= 0"},
		{"profile defaults", func(o *ReplayOptions) { o.Batch, o.Seq = 0, 0 }, ""},
		{"first mistake wins", func(o *ReplayOptions) { o.Models, o.Batch = nil, -1 }, "nothing to replay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.edit(&o)
			wantUsage(t, o.Check(), tt.want)
		})
	}
}

func TestReplaySetBuckets(t *testing.T) {
	tests := []struct {
		mib      float64
		mode     string
		capBytes int64
		want     workload.BucketMode
		err      string
	}{
		{32, "split", 32 << 20, workload.SplitTensors, ""},
		{0.5, "whole", 512 << 10, workload.WholeTensors, ""},
		{1 << 20, "ddp", 1 << 40, workload.WholeTensors, ""},
		{0, "split", 0, 0, "--bucket-mib 0 must be in (0, 1048576]"},
		{-1, "split", 0, 0, "--bucket-mib -1 must be in (0, 1048576]"},
		{1<<20 + 1, "split", 0, 0, "--bucket-mib 1.048577e+06 must be in (0, 1048576]"},
		{math.NaN(), "split", 0, 0, "--bucket-mib NaN must be in"},
		{32, "layered", 0, 0, `--bucket-mode: unknown bucket mode "layered" (want split or whole)`},
	}
	for _, tt := range tests {
		var o ReplayOptions
		err := o.SetBuckets(tt.mib, tt.mode)
		wantUsage(t, err, tt.err)
		if err != nil {
			if o.Buckets != (workload.BucketOptions{}) {
				t.Errorf("SetBuckets(%v, %q) failed but set %+v", tt.mib, tt.mode, o.Buckets)
			}
			continue
		}
		if o.Buckets.CapBytes != tt.capBytes || o.Buckets.Mode != tt.want {
			t.Errorf("SetBuckets(%v, %q): %+v; want cap %d mode %v", tt.mib, tt.mode, o.Buckets, tt.capBytes, tt.want)
		}
	}
}
