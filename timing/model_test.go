package timing

import (
	"github.com/neuronfabric/nfabric/timing/sim"

	"math/big"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
)

// roundTrain is the oracle for a back-to-back train of n lines through a
// gate of bw bytes/s: round(n * 64 B / bw) picoseconds, computed with exact
// rationals (independently of the gate's remainder arithmetic).
func roundTrain(n, bw int64) sim.Time {
	x := new(big.Rat).SetFrac(big.NewInt(n*LineBytes*int64(sim.Second)), big.NewInt(bw))
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(x.Num(), x.Denom()) // floor for positive values
	return sim.Time(q.Int64())
}

// missConfig is a configuration in which every read misses the LLC: each
// stream reads a footprint larger than the whole LLC once.
func missConfig() Config {
	c := DefaultConfig()
	c.LLC.SizeMiB = 0.25
	c.Streams.FootprintMiB = 0.5
	c.Streams.Passes = 1
	return c
}

func mustPair(t *testing.T, c Config, w Workload) Pair {
	t.Helper()
	p, err := RunPair(c, w)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSingleOutstandingClosedForm: one stream with one request in flight
// sees each request alone, so per-request time = LLC lookup + memory
// latency + one gate interval (+ the pipeline in low-bit mode), exactly.
func TestSingleOutstandingClosedForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stages int
		bw     float64
		lat    float64
	}{
		{"paper defaults", 5, 128, 200},
		{"deep pipeline", 20, 128, 200},
		{"slow link", 5, 8, 200},
		{"short latency", 10, 512, 50},
		{"no pipeline", 0, 128, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := missConfig()
			c.Streams.Count, c.Streams.Outstanding = 1, 1
			c.Controller.Stages, c.Link.BandwidthGiBps, c.Memory.LatencyNS = tc.stages, tc.bw, tc.lat
			p := mustPair(t, c, nil)
			n := c.FootprintLines()
			gate := roundTrain(1, c.LinkBytesPerSec())
			per := sim.FromNS(c.LLC.HitLatencyNS) + sim.FromNS(tc.lat) + gate
			pipe := sim.Time(tc.stages) * 500
			if got, want := p.Identity.RunTime, sim.Time(n)*per; got != want {
				t.Errorf("identity run time = %v; want %d x %v = %v", got, n, per, want)
			}
			if got, want := p.LowBit.RunTime, sim.Time(n)*(per+pipe); got != want {
				t.Errorf("low-bit run time = %v; want %d x %v = %v", got, n, per+pipe, want)
			}
			if p.Identity.ControllerReads != n || p.LowBit.LowBitReads != n || p.Identity.LowBitReads != 0 {
				t.Errorf("controller reads %d, low-bit reads %d/%d; want %d, %d/0", p.Identity.ControllerReads, p.LowBit.LowBitReads, p.Identity.LowBitReads, n, n)
			}
		})
	}
}

// TestSaturatedClosedForm: with far more requests in flight than the
// gate can serve in one round trip, the gate never idles after the first
// line arrives, so run time = first arrival + round(n * 64 B / bandwidth):
// throughput equals the link bandwidth. The congested share sets that
// bandwidth, and the low-bit pipeline is then fully hidden except for the
// first line's fill.
func TestSaturatedClosedForm(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bw    float64
		share float64
		w, l  int
	}{
		{"healthy link, 1 stream", 128, 1, 1, 1024},
		{"congested share 0.25", 128, 0.25, 8, 64},
		{"congested share 0.1, 3 streams", 100, 0.1, 3, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := missConfig()
			c.Link.BandwidthGiBps, c.Link.Share = tc.bw, tc.share
			c.Streams.Count, c.Streams.Outstanding = tc.w, tc.l
			c.Controller.InitiationCycles = 0 // keep the pipeline from limiting throughput
			p := mustPair(t, c, nil)
			n := c.FootprintLines() * int64(tc.w)
			first := sim.FromNS(c.LLC.HitLatencyNS) + sim.FromNS(c.Memory.LatencyNS)
			want := first + roundTrain(n, c.LinkBytesPerSec())
			if got := p.Identity.RunTime; got != want {
				t.Errorf("identity run time = %v; want %v + round(%d lines at %d B/s) = %v", got, first, n, c.LinkBytesPerSec(), want)
			}
			if got, want := p.Exposed, c.PipelineLatency(); got != want {
				t.Errorf("exposed = %v; want only the first fill %v", got, want)
			}
			if !p.Hidden() {
				t.Error("Hidden() = false; want true")
			}
			thr := float64(n*LineBytes) / ((p.Identity.RunTime - first).NS() * 1e-9)
			if rel := thr/float64(c.LinkBytesPerSec()) - 1; rel > 1e-6 || rel < -1e-6 {
				t.Errorf("throughput %g B/s; want the link's %d B/s", thr, c.LinkBytesPerSec())
			}
		})
	}
}

// TestHitsNeverReachController: after a write pass, a footprint that fits
// the LLC is read entirely from it, so no read reaches a controller and the
// identity and low-bit runs take exactly the same time.
func TestHitsNeverReachController(t *testing.T) {
	c := DefaultConfig()
	c.Streams.Count, c.Streams.FootprintMiB, c.Streams.Passes, c.Streams.Pattern = 4, 1, 3, "write-read"
	p := mustPair(t, c, nil)
	for _, r := range []Result{p.Identity, p.LowBit} {
		if r.ControllerReads != 0 || r.LowBitReads != 0 || r.Misses != 4*c.FootprintLines() {
			t.Errorf("controller reads %d, low-bit reads %d, misses %d; want 0, 0, %d (the first writes)", r.ControllerReads, r.LowBitReads, r.Misses, 4*c.FootprintLines())
		}
	}
	if p.Exposed != 0 {
		t.Errorf("exposed = %v; want 0", p.Exposed)
	}
	// Read-only: exactly the first pass misses; the rest hit and stay off
	// the controller.
	c.Streams.Pattern = "read"
	p = mustPair(t, c, nil)
	if got, want := p.LowBit.ControllerReads, 4*c.FootprintLines(); got != want || p.LowBit.Hits != 2*want {
		t.Errorf("controller reads %d, hits %d; want %d, %d", got, p.LowBit.Hits, want, 2*want)
	}
}

// TestInterleave: line-granular interleaving spreads sequential sweeps
// evenly over the stacks.
func TestInterleave(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8, 3} {
		c := missConfig()
		c.Controller.Stacks = n
		src, _ := Sweep{}.Sources(c)
		sys, err := NewSystem(c, src, All)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sys.Run()
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for i, st := range sys.Stacks() {
			sum += st.Reads
			lo, hi := r.ControllerReads/int64(n), (r.ControllerReads+int64(n)-1)/int64(n)
			if st.Reads < lo || st.Reads > hi {
				t.Errorf("N=%d: stack %d served %d reads; want %d..%d", n, i, st.Reads, lo, hi)
			}
		}
		if sum != r.ControllerReads {
			t.Errorf("N=%d: stacks served %d reads; want %d", n, sum, r.ControllerReads)
		}
	}
}

// TestTimeMonotone: a hook sees event times that never decrease, and every
// controller sees arrivals in time order (Stack.Accept panics otherwise).
func TestTimeMonotone(t *testing.T) {
	c := DefaultConfig()
	c.Streams.FootprintMiB, c.Controller.Stacks, c.Streams.IssueIntervalNS = 0.5, 3, 0.3
	for _, w := range []Window{None, All, {From: 5 * sim.Microsecond, Until: 40 * sim.Microsecond}} {
		src, _ := Sweep{}.Sources(c)
		sys, err := NewSystem(c, src, w)
		if err != nil {
			t.Fatal(err)
		}
		last, n := sim.Time(-1), 0
		sys.Engine().AddHook(func(now sim.Time, _ sim.Handler, _ int64) {
			if now < last {
				t.Fatalf("event at %v after one at %v", now, last)
			}
			last = now
			n++
		})
		r, err := sys.Run()
		if err != nil {
			t.Fatal(err)
		}
		if int64(n) != r.Events || last != r.RunTime {
			t.Errorf("hook saw %d events ending at %v; run had %d ending at %v", n, last, r.Events, r.RunTime)
		}
	}
}

// TestReplayClosedForm: one stream, one request in flight, two buckets:
// the second bucket's lines wait for its ready time.
func TestReplayClosedForm(t *testing.T) {
	c := missConfig()
	c.Streams.Count, c.Streams.Outstanding = 1, 1
	per := sim.FromNS(c.LLC.HitLatencyNS) + sim.FromNS(c.Memory.LatencyNS) + roundTrain(1, c.LinkBytesPerSec())
	pipe := c.PipelineLatency()
	ready := 50 * sim.Microsecond
	p := mustPair(t, c, Replay{Buckets: []Bucket{{Ready: 0, Lines: 10}, {Ready: ready, Lines: 7}}})
	if got, want := p.Identity.RunTime, ready+7*per; got != want {
		t.Errorf("identity = %v; want %v", got, want)
	}
	if got, want := p.LowBit.RunTime, ready+7*(per+pipe); got != want {
		t.Errorf("low-bit = %v; want %v", got, want)
	}
	// W streams share each bucket round-robin.
	c.Streams.Count = 3
	p = mustPair(t, c, Replay{Buckets: []Bucket{{Ready: 0, Lines: 10}}})
	if p.Identity.Lines != 10 {
		t.Errorf("replayed %d lines; want 10", p.Identity.Lines)
	}
	if _, err := RunPair(c, Replay{Buckets: []Bucket{{Ready: 5, Lines: 1}, {Ready: 4, Lines: 1}}}); err == nil {
		t.Error("unsorted buckets: no error")
	}
	if _, err := RunPair(c, Replay{Buckets: []Bucket{{Ready: 0, Lines: -1}}}); err == nil {
		t.Error("negative lines: no error")
	}
}

// randomConfig draws a small configuration for property tests.
func randomConfig(r *rand.Rand) Config {
	c := DefaultConfig()
	c.Streams.Count = 1 + r.IntN(8)
	c.Streams.Outstanding = 1 + r.IntN(64)
	c.Streams.FootprintMiB = float64(1+r.IntN(16)) / 64
	c.Streams.Passes = 1 + r.IntN(3)
	c.Streams.IssueIntervalNS = []float64{0, 0, 0.25, 1, 3}[r.IntN(5)]
	c.Streams.Pattern = []string{"read", "write-read"}[r.IntN(2)]
	c.LLC.SizeMiB = []float64{1.0 / 16, 0.125, 0.25}[r.IntN(3)]
	c.LLC.Ways = []int{1, 4, 16}[r.IntN(3)]
	c.Link.BandwidthGiBps = []float64{4, 16, 64, 128, 512}[r.IntN(5)]
	c.Link.Share = []float64{1, 0.5, 0.25}[r.IntN(3)]
	c.Memory.LatencyNS = []float64{0, 20, 200}[r.IntN(3)]
	c.Controller.Stacks = 1 + r.IntN(4)
	c.Controller.InterleaveBytes = []int{64, 256, 4096}[r.IntN(3)]
	c.Controller.Stages = r.IntN(12)
	c.Controller.InitiationCycles = r.IntN(2)
	return c
}

// TestOverheadProperties: on random configurations the exposed cost is
// never negative and never more than the pipeline's own time per request
// (the busiest stream's controller reads x stages x cycle), and the
// low-bit run time never decreases as the pipeline deepens.
func TestOverheadProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	trials := 60
	if testing.Short() {
		trials = 15
	}
	for i := range trials {
		c := randomConfig(r)
		var prev sim.Time
		for k := 0; k <= 8; k += 2 + c.Controller.Stages%3 {
			c.Controller.Stages = k
			src, _ := Sweep{}.Sources(c)
			id, _ := NewSystem(c, src, None)
			rid, err := id.Run()
			if err != nil {
				t.Fatal(err)
			}
			src, _ = Sweep{}.Sources(c)
			lb, _ := NewSystem(c, src, All)
			rlb, err := lb.Run()
			if err != nil {
				t.Fatal(err)
			}
			var busiest int64
			for _, st := range lb.Streams() {
				busiest = max(busiest, st.ControllerReads)
			}
			exposed := rlb.RunTime - rid.RunTime
			if exposed < 0 {
				t.Errorf("trial %d k=%d %+v: exposed %v < 0", i, k, c, exposed)
			}
			if bound := sim.Time(busiest) * c.PipelineLatency(); exposed > bound {
				t.Errorf("trial %d k=%d %+v: exposed %v above %d reads x %v = %v", i, k, c, exposed, busiest, c.PipelineLatency(), bound)
			}
			if rlb.RunTime < prev {
				t.Errorf("trial %d: low-bit run time fell from %v to %v when depth rose to %d (%+v)", i, prev, rlb.RunTime, k, c)
			}
			prev = rlb.RunTime
		}
	}
}

// TestRunPairsDeterminism: RunPairs gives the same pairs, in job order,
// whatever GOMAXPROCS is, and each is the pair RunWindowPair gives alone.
func TestRunPairsDeterminism(t *testing.T) {
	c := DefaultConfig()
	c.Streams.FootprintMiB = 0.25
	c.LLC.SizeMiB = 1
	var jobs []PairJob
	for _, w := range []int{1, 3, 8} {
		c.Streams.Count = w
		jobs = append(jobs, PairJob{Config: c, W: Sweep{}, Window: All})
	}
	run := func(procs int) []Pair {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ps, err := RunPairs(t.Context(), jobs)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	a, b := run(1), run(4)
	if len(a) != len(jobs) || len(b) != len(jobs) {
		t.Fatalf("%d and %d pairs for %d jobs", len(a), len(b), len(jobs))
	}
	for i, j := range jobs {
		alone, err := RunWindowPair(j.Config, j.W, j.Window)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a[i], b[i]) || !reflect.DeepEqual(a[i], alone) {
			t.Errorf("job %d differs across GOMAXPROCS or from RunWindowPair:\n%+v\n%+v\n%+v", i, a[i], b[i], alone)
		}
	}
}

// TestSimulateAllocsBounded: allocations depend on the configuration (LLC
// arrays, streams, pending events), not on the number of lines simulated.
func TestSimulateAllocsBounded(t *testing.T) {
	c := missConfig()
	allocs := func(passes int) float64 {
		c.Streams.Passes = passes
		return testing.AllocsPerRun(3, func() {
			if _, err := Simulate(c, nil, All); err != nil {
				t.Fatal(err)
			}
		})
	}
	a1, a8 := allocs(1), allocs(8)
	if a8 > a1+2 {
		t.Errorf("allocations grew with lines: %v for 1 pass, %v for 8", a1, a8)
	}
}
