package replay_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/replay"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Two buckets queue behind each other, a third arrives on an idle system;
// the fast-forward and the event simulation agree to the picosecond.
func ExampleFastForward() {
	cfg := timing.DefaultConfig()
	buckets := []timing.Bucket{{Ready: 0, Lines: 8192}, {Ready: 0, Lines: 8192}, {Ready: 100 * sim.Microsecond, Lines: 8192}}
	for _, m := range []replay.Mode{replay.Identity, replay.LowBit} {
		c, _ := replay.NewCalibrator(cfg, m)
		ff, _ := replay.FastForward(c, buckets, 0)
		ex, _ := replay.Exact(cfg, buckets, m)
		fmt.Printf("%-8s fast-forward equals event simulation: %v\n", m, ff.RunTime == ex.RunTime)
	}
	// Output:
	// identity fast-forward equals event simulation: true
	// g-binary fast-forward equals event simulation: true
}
