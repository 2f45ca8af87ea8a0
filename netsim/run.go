package netsim

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/neuronfabric/nfabric/report"
)

// Result is one finished ns-3 run.
type Result struct {
	Config   Config         `json:"config"`
	Schedule *Schedule      `json:"-"`
	Interval int64          `json:"interval_ns"`
	Duration int64          `json:"duration_ns"`
	Links    []LinkSample   `json:"-"`
	Buckets  []BucketResult `json:"-"`
	Totals   []LinkTotal    `json:"-"`
	Hosts    []HostSample   `json:"-"`
}

// Args returns the ns-3 program's command-line flags for c, without the
// file paths. Rates are divided by the scale and passed in bit/s.
func (c Config) Args(intervalNS, durationNS int64) []string {
	s := c.scale()
	bps := func(r float64) string { return strconv.FormatInt(int64(math.Round(r*8/s)), 10) }
	a := []string{
		"--workers=" + strconv.Itoa(c.Workers),
		"--topology=" + c.Topology.String(),
		"--hostRate=" + bps(c.HostRate),
		"--delayNs=" + strconv.FormatInt(c.DelayNS, 10),
		"--queuePackets=" + strconv.Itoa(c.QueuePackets),
		"--intervalNs=" + strconv.FormatInt(intervalNS, 10),
		"--durationNs=" + strconv.FormatInt(durationNS, 10),
		"--seed=" + strconv.FormatUint(c.Seed%(1<<31)+1, 10),
	}
	if c.Topology == LeafSpine {
		a = append(a, "--leaves="+strconv.Itoa(c.Leaves), "--spines="+strconv.Itoa(c.Spines))
		if c.FabricRate > 0 {
			a = append(a, "--fabricRate="+bps(c.FabricRate))
		}
	}
	b := c.Background
	if b.Bulk > 0 {
		a = append(a, "--bulk="+strconv.Itoa(b.Bulk))
	}
	if b.OnOff > 0 {
		a = append(a, "--onoff="+strconv.Itoa(b.OnOff), "--onoffShare="+strconv.FormatFloat(b.Share, 'g', -1, 64),
			"--onNs="+strconv.FormatInt(b.OnNS, 10), "--offNs="+strconv.FormatInt(b.OffNS, 10))
	}
	return a
}

// Run simulates sched on the network c describes. It writes the schedule
// and the program's outputs into a temporary directory that it removes
// before returning; cancelling ctx kills the program.
func Run(ctx context.Context, c Config, sched *Schedule) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if sched == nil || len(sched.Releases) == 0 || sched.StepNS <= 0 {
		return nil, fmt.Errorf("netsim: empty schedule")
	}
	interval, duration, err := c.sampling(sched)
	if err != nil {
		return nil, err
	}
	bin, err := Binary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nfabric-ns3-")
	if err != nil {
		return nil, fmt.Errorf("netsim: %w", err)
	}
	defer os.RemoveAll(dir)
	defer report.RegisterTemp(dir)() // an interrupt removes it too
	path := func(n string) string { return filepath.Join(dir, n) }
	var sb bytes.Buffer
	if err := sched.WriteCSV(&sb); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path("schedule.csv"), sb.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("netsim: %w", err)
	}
	args := append(c.Args(interval, duration), "--schedule="+path("schedule.csv"),
		"--links="+path("links.csv"), "--buckets="+path("buckets.csv"), "--totals="+path("totals.csv"), "--hosts="+path("hosts.csv"))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("netsim: ns-3 run cancelled: %w", ctx.Err())
		}
		return nil, fmt.Errorf("netsim: ns-3 program failed: %w\n%s", err, tail(stderr.String(), 2000))
	}
	res := &Result{Config: c, Schedule: sched, Interval: interval, Duration: duration}
	if err := readOutput(path("links.csv"), func(f *os.File) error { res.Links, err = ReadLinks(f, "links.csv"); return err }); err != nil {
		return nil, err
	}
	if err := readOutput(path("buckets.csv"), func(f *os.File) error { res.Buckets, err = ReadBuckets(f, "buckets.csv"); return err }); err != nil {
		return nil, err
	}
	if err := readOutput(path("totals.csv"), func(f *os.File) error { res.Totals, err = ReadTotals(f, "totals.csv"); return err }); err != nil {
		return nil, err
	}
	if err := readOutput(path("hosts.csv"), func(f *os.File) error { res.Hosts, err = ReadHosts(f, "hosts.csv"); return err }); err != nil {
		return nil, err
	}
	if len(res.Buckets) != len(sched.Releases) {
		return nil, fmt.Errorf("netsim: ns-3 reported %d buckets for a schedule of %d", len(res.Buckets), len(sched.Releases))
	}
	return res, nil
}

// MaxLinkSamples bounds a run's per-link samples, intervals times link
// directions (2^21 = 2,097,152): the ns-3 program holds five counters per
// sample and this package about 100 bytes once read (some 200 MB at the
// limit), so a too-fine --interval is refused before ns-3 starts instead of
// ending in std::bad_alloc. The default interval (a tenth of the step) over
// the default 3 steps is about 40 intervals.
const MaxLinkSamples = 1 << 21

// linkDirections is how many link directions the program samples: both
// directions of each host link, and of each leaf-spine link.
func (c Config) linkDirections() int64 {
	n := 2 * int64(c.Workers)
	if c.Topology == LeafSpine {
		n += 2 * int64(c.Leaves) * int64(c.Spines)
	}
	return n
}

// sampling returns the run's sampling interval (c.IntervalNS, or a tenth
// of the step) and its duration (Steps+1 steps, at least past the last
// release, rounded up to whole intervals), or an error when the duration
// overflows or the samples would pass MaxLinkSamples.
func (c Config) sampling(sched *Schedule) (interval, duration int64, err error) {
	interval = c.IntervalNS
	if interval == 0 {
		interval = max(sched.StepNS/10, 1000)
	}
	last := sched.Releases[len(sched.Releases)-1].AtNS
	if int64(c.Steps+1) > (math.MaxInt64/2)/sched.StepNS || last > math.MaxInt64/2-interval {
		return 0, 0, fmt.Errorf("netsim: %d steps of %d ns overflow the simulated time", c.Steps, sched.StepNS)
	}
	duration = max(int64(c.Steps+1)*sched.StepNS, last+interval)
	intervals := (duration + interval - 1) / interval
	if intervals > MaxLinkSamples/c.linkDirections() {
		return 0, 0, fmt.Errorf("netsim: %d intervals of %d ns over %d link directions is more than the limit of %d link samples (lengthen --interval to at least %d ns or simulate fewer --steps)",
			intervals, interval, c.linkDirections(), MaxLinkSamples, duration/(MaxLinkSamples/c.linkDirections())+1)
	}
	return interval, intervals * interval, nil
}

func readOutput(p string, fn func(*os.File) error) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("netsim: ns-3 output: %w", err)
	}
	defer f.Close()
	if err := fn(f); err != nil {
		return fmt.Errorf("netsim: ns-3 output %w", err)
	}
	return nil
}
