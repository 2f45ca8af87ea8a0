package experiments

import (
	"math"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/timing"
	"github.com/neuronfabric/nfabric/timing/cxldev"
)

// A row's closed form T_agg / path latency is, under the ideal model, the
// paper's latency-bound form (stages x cycle over lookup + memory + one
// gate interval, a separate closed form), and under a silicon preset the
// datapath's latency over the device's published idle read, within the 5%
// its calibration allows.
func TestClosedFormPct(t *testing.T) {
	c := timing.DefaultConfig()
	if got, want := closedFormPct(c), c.LatencyBoundExposurePct(c.Controller.Stages); math.Abs(got/want-1) > 1e-5 { // IdleRead rounds the gate interval to the picosecond
		t.Errorf("ideal: T_agg/path %.6f%%, latency-bound form %.6f%%", got, want)
	}
	for _, p := range cxldev.Devices() {
		if p.Class == "projection" {
			continue
		}
		c, err := timing.PresetConfig(p.Config.Preset)
		if err != nil {
			t.Fatal(err)
		}
		want := 100 * c.PipelineLatency().NS() / p.IdleNS
		if got := closedFormPct(c); math.Abs(got/want-1) > 0.05 {
			t.Errorf("%s: T_agg/path %.3f%%, the published idle read gives %.3f%%", p.Config.Preset, got, want)
		}
	}
}

// The quick tier runs the silicon Table 4 pairs once on the periodic
// refresh schedule and no silicon envelope, the others average over the
// default schedules and run an envelope per preset; the cost model
// follows.
func TestSiliconSetupTiers(t *testing.T) {
	s := DefaultTimingSetup()
	for _, tier := range []run.Tier{run.TierQuick, run.TierStandard} {
		cfg := run.Config{Tier: tier}
		want := len(siliconPresets())
		if tier == run.TierQuick {
			want = 0
		}
		if us := timingSiliconFig3Units(cfg, s); len(us) != want {
			t.Errorf("%v: %d silicon envelope units, want %d", tier, len(us), want)
		}
		for _, p := range siliconPresets() {
			d, err := siliconSetup(cfg, s, p)
			if err != nil {
				t.Fatal(err)
			}
			want := timing.DefaultConfig().Memory.RefreshPhases
			if tier == run.TierQuick {
				want = 0
			}
			if d.Model.Memory.RefreshPhases != want || d.Model.Device.Preset != p {
				t.Errorf("%v %s: refresh phases %d, preset %s", tier, p, d.Model.Memory.RefreshPhases, d.Model.Device.Preset)
			}
			q, c := timingCost(run.Config{Tier: run.TierQuick})("silicon/table4/"+p), timingCost(cfg)("silicon/table4/"+p)
			if tier != run.TierQuick && timingCost(cfg)("silicon/fig3/"+p) <= 0 {
				t.Errorf("%v %s: the envelope has no cost", tier, p)
			}
			if q <= 0 || (tier != run.TierQuick && c != q*time.Duration(timing.DefaultConfig().Memory.RefreshPhases)) {
				t.Errorf("%v %s: cost %v (quick %v)", tier, p, c, q)
			}
		}
	}
}
