package workload_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/workload"
)

func ExampleBucketize() {
	p, _ := workload.Builtin("gpt2-xl", 0)
	tl, _ := p.Timeline(workload.Schedule{Accel: workload.A100})
	tr, _ := workload.Bucketize(tl, workload.BucketOptions{CapBytes: workload.PaperBucketBytes})
	fmt.Printf("%s: %d params, %d buckets of 32 MiB (last %d bytes)\n", p.Name, p.Params(), len(tr.Buckets), tr.Buckets[len(tr.Buckets)-1].Bytes)
	fmt.Printf("backward %.1f ms, first bucket ready at %.2f ms\n", float64(tl.BackwardPS)/1e9, float64(tr.Buckets[0].ReadyPS)/1e9)
	// Output:
	// gpt2-xl: 1557611200 params, 186 buckets of 32 MiB (last 22874880 bytes)
	// backward 399.6 ms, first bucket ready at 20.72 ms
}
