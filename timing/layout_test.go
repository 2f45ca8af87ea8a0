package timing

import (
	"math"
	"slices"
	"testing"
)

// scatterFrames is a permutation of the frames, and not a near-identity
// one (a random permutation has one fixed point on average).
func TestScatterFrames(t *testing.T) {
	for _, n := range []int64{1, 2, 7, 4096} {
		f := scatterFrames(n)
		sorted := slices.Clone(f)
		slices.Sort(sorted)
		fixed := 0
		for i := range sorted {
			if sorted[i] != uint32(i) {
				t.Fatalf("n=%d: frames are not a permutation (sorted[%d] = %d)", n, i, sorted[i])
			}
			if f[i] == uint32(i) {
				fixed++
			}
		}
		if n == 4096 && fixed > 16 {
			t.Errorf("n=%d: %d fixed points, want a shuffle", n, fixed)
		}
	}
}

// physical is the identity under contiguous and, under scattered, a
// bijection of the streams' range that keeps each line's offset in its
// page and each page's lines together.
func TestPhysicalLayout(t *testing.T) {
	for _, layout := range []string{LayoutContiguous, LayoutScattered} {
		cfg := DefaultConfig()
		cfg.Streams.Count, cfg.Streams.FootprintMiB, cfg.Streams.Layout = 3, 0.0625, layout
		src, err := Sweep{}.Sources(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sys, err := NewSystem(cfg, src, None)
		if err != nil {
			t.Fatal(err)
		}
		span := uint64(3 * 65536)
		pages := map[uint64]uint64{}
		moved := 0
		for a := uint64(0); a < span; a += LineBytes {
			p := sys.physical(a)
			if p%PageBytes != a%PageBytes || p >= span {
				t.Fatalf("%s: %#x -> %#x leaves the page offset or the range", layout, a, p)
			}
			if q, ok := pages[p/PageBytes]; ok && q != a/PageBytes {
				t.Fatalf("%s: pages %d and %d share frame %d", layout, q, a/PageBytes, p/PageBytes)
			}
			pages[p/PageBytes] = a / PageBytes
			if p != a {
				moved++
			}
		}
		if (layout == LayoutContiguous) != (moved == 0) {
			t.Errorf("%s: %d lines moved", layout, moved)
		}
		// Beyond the range, a page keeps its place relative to the range.
		if got, want := sys.physical(span+5*PageBytes+64), span+sys.physical(5*PageBytes+64); got != want {
			t.Errorf("%s: beyond the range %#x, want %#x", layout, got, want)
		}
	}
}

// The aggregation pipeline never touches a DRAM address, so without a
// bank lock the identity and low-bit runs find the same share of open
// rows. Under one periodic refresh schedule (refresh_phases 0) at N = 2
// stacks the contiguous sweeps lock (the low-bit run's row-hit rate far
// below the identity run's); on scattered pages both runs agree. The
// default pair, the mean over dithered refresh schedules, no longer
// shows the lock on contiguous pages either (the timing block's
// ddr5-layout ablation), so the lock is tested where it exists.
func TestLayoutBankLock(t *testing.T) {
	if testing.Short() {
		t.Skip("four 524,288-line ddr5 runs")
	}
	for _, tc := range []struct {
		layout string
		locked bool
	}{{LayoutContiguous, true}, {LayoutScattered, false}} {
		cfg, err := PresetConfig(projection)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Controller.Stacks, cfg.Streams.Layout = 2, tc.layout
		cfg.Memory.RefreshPhases = 0
		p, err := RunPair(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, lb := p.Identity.Detail.RowHitRate, p.LowBit.Detail.RowHitRate
		if gap := id - lb; (gap > 0.1) != tc.locked || (!tc.locked && math.Abs(gap) > 0.02) {
			t.Errorf("%s: row-hit rates identity %.3f, low-bit %.3f (locked: want %v)", tc.layout, id, lb, tc.locked)
		}
	}
}

// The layout that models real allocation is the dram default: an unset
// streams.layout is scattered under memory.model dram and contiguous under
// ideal, an explicit one is kept, and a dram system built from a device
// really moves pages (physical differs from the stream address somewhere).
func TestDefaultLayoutPerModel(t *testing.T) {
	for _, tc := range []struct {
		preset, layout, want string
	}{
		{projection, "", LayoutScattered},
		{PresetIdeal, "", LayoutContiguous},
		{projection, LayoutContiguous, LayoutContiguous},
		{PresetIdeal, LayoutScattered, LayoutScattered},
	} {
		cfg, err := PresetConfig(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Streams.Layout = tc.layout
		if got := cfg.StreamLayout(); got != tc.want {
			t.Errorf("%s with layout %q: %s, want %s", tc.preset, tc.layout, got, tc.want)
		}
	}
	cfg, _ := PresetConfig(projection)
	cfg.Streams.Count, cfg.Streams.FootprintMiB = 2, 0.0625
	src, err := Sweep{}.Sources(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys, err := NewSystem(cfg, src, None)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for a := uint64(0); a < 2*(1<<16); a += PageBytes {
		if sys.physical(a) != a {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("ddr5 preset: no page moved; the default layout is not scattered")
	}
}
