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
	bin, err := Binary(ctx)
	if err != nil {
		return nil, err
	}
	interval := c.IntervalNS
	if interval == 0 {
		interval = max(sched.StepNS/10, 1000)
	}
	last := sched.Releases[len(sched.Releases)-1].AtNS
	duration := max(int64(c.Steps+1)*sched.StepNS, last+interval)
	duration = (duration + interval - 1) / interval * interval
	dir, err := os.MkdirTemp("", "nfabric-ns3-")
	if err != nil {
		return nil, fmt.Errorf("netsim: %w", err)
	}
	defer os.RemoveAll(dir)
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
