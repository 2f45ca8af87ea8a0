package timing

import (
	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/timing/sim"

	"math"
	"testing"
)

// refreshShare runs a DRAM-saturated read sweep on one DDR5-6400 stack of
// channels sub-channels with and without refresh and returns the share of
// the refreshing run's time that refresh cost, 1 - T(no refresh)/T.
func refreshShare(t *testing.T, channels int) (share float64, d dram.Spec) {
	t.Helper()
	cfg, err := PresetConfig(projection)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Device.Media, err = dram.Preset("ddr5-6400"); err != nil {
		t.Fatal(err)
	}
	cfg.Device.Media.Channels = channels
	// Saturated: 8 streams x 64 outstanding keep every sub-channel's read
	// queue full (the host waits on credits), so the window of a stream
	// never empties behind a refreshing sub-channel and the data buses,
	// not the streams, set the pace. 8 x 1 MiB past a 1 MiB LLC: every
	// line reaches the DRAM.
	cfg.Streams.Outstanding, cfg.Streams.FootprintMiB, cfg.Streams.Passes, cfg.LLC.SizeMiB = 64, 1, 1, 1
	// The device's buffers hold every request in flight, so that they do
	// not couple the sub-channels: a shared response queue smaller than
	// the load fills with the refreshing sub-channel's requests and starves
	// the other (the device's effect, not the DRAM's; at 128 entries two
	// sub-channels lose 11.4%).
	cfg.Device.RequestQueue, cfg.Device.ResponseQueue = 1024, 1024
	run := func(c Config) sim.Time {
		r, err := Simulate(c, nil, None)
		if err != nil {
			t.Fatal(err)
		}
		return r.RunTime
	}
	with, d := run(cfg), cfg.Device.Media
	cfg.Device.Media.TREFINS = 0
	without := run(cfg)
	return 1 - float64(without)/float64(with), d
}

// TestRefreshSharePerSubChannel: each DDR5 sub-channel has its own command
// bus and refresh, so two saturated sub-channels lose the same share of
// their time to refresh as one does; a refresh on one must not stall the
// other. The oracle is the refresh's own closed form: every tREFI the
// sub-channel's data bus idles for at least tRFC, and at most for the
// read-to-precharge, precharge-all, refresh and re-activation chain
// tRTP + tRP + tRFC + tRCD (the open rows close before REF and the first
// read after it needs an ACT). So the share lies in
//
//	[tRFC/tREFI, (tRTP + tRP + tRFC + tRCD)/tREFI] = [7.56%, 8.59%]
//
// for DDR5-6400, held with 0.3 points of slack at the top: a run of ~330
// us (1 sub-channel) sees ~85 refreshes, and the one refresh that may
// fall at the run's end is 1/85 of the refresh time (0.1 point), plus the
// first ACTs after a refresh waiting on tRRD/tFAW. One and two
// sub-channels are held to 0.3 points of each other for the same reason.
// Before the request queue dispatched per sub-channel, two sub-channels
// lost 9.9% here: a full queue behind a refresh blocked the head for both.
// (Until the dispatch read a request's channel before releasing it, the
// second sub-channel was also fed only on arrivals, and this run stopped
// early.)
func TestRefreshSharePerSubChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("four saturated DDR5 runs (-short)")
	}
	one, d := refreshShare(t, 1)
	two, _ := refreshShare(t, 2)
	c := func(ns float64) float64 { return float64(d.Cycles(ns)) * float64(d.Clock()) }
	lo := c(d.TRFCNS) / c(d.TREFINS)
	hi := (c(d.TRTPNS)+c(d.TRPNS)+c(d.TRFCNS)+c(d.TRCDNS))/c(d.TREFINS) + 0.003
	for _, c := range []struct {
		n     int
		share float64
	}{{1, one}, {2, two}} {
		if c.share < lo || c.share > hi {
			t.Errorf("%d sub-channel(s): refresh costs %.2f%% of a saturated run; want within [%.2f%%, %.2f%%] (tRFC/tREFI to the PREA+REF+ACT chain)",
				c.n, 100*c.share, 100*lo, 100*hi)
		}
	}
	if math.Abs(one-two) > 0.003 {
		t.Errorf("refresh share: 1 sub-channel %.2f%%, 2 sub-channels %.2f%%; each refreshes on its own, so they must agree", 100*one, 100*two)
	}
	if testing.Verbose() {
		t.Logf("refresh share: 1 sub-channel %.2f%%, 2 sub-channels %.2f%%, bounds [%.2f%%, %.2f%%]", 100*one, 100*two, 100*lo, 100*hi)
	}
}
