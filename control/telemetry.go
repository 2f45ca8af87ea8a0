package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Telemetry is one network telemetry sample: our stand-in for the paper's
// NS-3 replay of communication state.
type Telemetry struct {
	// TimeNS is when the sample was taken.
	TimeNS int64 `json:"time_ns"`
	// DemandGBps is the gradient traffic offered to the CXL path, and
	// CapacityGBps the bandwidth available to it (after background load).
	DemandGBps   float64 `json:"demand_gbps"`
	CapacityGBps float64 `json:"capacity_gbps"`
	// LineReads is the cache-line read rate, in lines per second.
	LineReads float64 `json:"line_reads_per_s"`
}

// Pressure is DemandGBps / CapacityGBps: above 1 the link is oversubscribed.
func (t Telemetry) Pressure() float64 { return t.DemandGBps / t.CapacityGBps }

// Validate checks that the sample's numbers are usable.
func (t Telemetry) Validate() error {
	if t.TimeNS < 0 {
		return fmt.Errorf("time %d ns is negative", t.TimeNS)
	}
	if !finite(t.DemandGBps) || t.DemandGBps < 0 {
		return fmt.Errorf("demand %v GB/s is not a finite non-negative number", t.DemandGBps)
	}
	if !finite(t.CapacityGBps) || t.CapacityGBps <= 0 {
		return fmt.Errorf("capacity %v GB/s is not a finite positive number", t.CapacityGBps)
	}
	if !finite(t.LineReads) || t.LineReads < 0 {
		return fmt.Errorf("line read rate %v is not a finite non-negative number", t.LineReads)
	}
	if !finite(t.Pressure()) {
		return fmt.Errorf("pressure %v / %v overflows", t.DemandGBps, t.CapacityGBps)
	}
	return nil
}

// CommanderConfig configures the Commander, which proposes low-bit relief
// from network telemetry with hysteresis: relief starts when pressure
// reaches RelievePressure and stops when it falls to ReleasePressure.
type CommanderConfig struct {
	// Enabled gates relief on telemetry. Disabled, admitted groups always
	// run their low-bit mode (a policy driven by training health alone).
	Enabled         bool    `yaml:"enabled" json:"enabled"`
	RelievePressure float64 `yaml:"relieve_pressure" json:"relieve_pressure"`
	ReleasePressure float64 `yaml:"release_pressure" json:"release_pressure"`
	// StaleNS: with no good sample for this long, relief falls back to
	// FP32. 0 never expires a sample.
	StaleNS int64 `yaml:"stale_ns" json:"stale_ns"`
	// Smooth is the weight of each new sample in the exponential average
	// of pressure the thresholds apply to, in (0, 1]; 0 means 1 (no
	// smoothing). Smoothing keeps sub-step gradient bursts from flipping
	// the mode every step.
	Smooth float64 `yaml:"smooth" json:"smooth"`
}

// Validate checks the thresholds.
func (c CommanderConfig) Validate() error {
	if !finite(c.RelievePressure) || !finite(c.ReleasePressure) || c.ReleasePressure < 0 || c.ReleasePressure > c.RelievePressure {
		return fmt.Errorf("control: commander: need 0 <= release_pressure (%v) <= relieve_pressure (%v)", c.ReleasePressure, c.RelievePressure)
	}
	if c.StaleNS < 0 {
		return fmt.Errorf("control: commander: stale_ns %d is negative", c.StaleNS)
	}
	if !(c.Smooth >= 0 && c.Smooth <= 1) {
		return fmt.Errorf("control: commander: smooth %v is not in [0, 1]", c.Smooth)
	}
	return nil
}

type commander struct {
	cfg      CommanderConfig
	lastTime int64
	last     Telemetry
	have     bool
	bad      bool    // the last sample was rejected
	pressure float64 // smoothed pressure
	grant    bool    // hysteresis state: relief granted at the last sample
}

// observe takes a sample; a bad one is an error and makes telemetry
// untrusted until the next good sample.
func (c *commander) observe(t Telemetry) error {
	if err := t.Validate(); err != nil {
		c.bad = true
		return fmt.Errorf("control: telemetry: %w", err)
	}
	if t.TimeNS < c.lastTime {
		c.bad = true
		return fmt.Errorf("control: telemetry: sample at %d ns arrives after one at %d ns", t.TimeNS, c.lastTime)
	}
	a := c.cfg.Smooth
	if a == 0 || !c.have {
		a = 1
	}
	c.pressure = (1-a)*c.pressure + a*t.Pressure()
	c.lastTime, c.last, c.have, c.bad = t.TimeNS, t, true, false
	p := c.pressure
	switch {
	case p >= c.cfg.RelievePressure:
		c.grant = true
	case p <= c.cfg.ReleasePressure:
		c.grant = false
	}
	return nil
}

// relief reports whether admitted groups should run low-bit at time now.
func (c *commander) relief(now int64) (bool, string) {
	if !c.cfg.Enabled {
		return true, ""
	}
	switch {
	case c.bad:
		return false, "commander: last telemetry sample was bad, FP32 fallback"
	case !c.have:
		return false, "commander: no telemetry yet, FP32"
	case c.cfg.StaleNS > 0 && now-c.last.TimeNS > c.cfg.StaleNS:
		return false, fmt.Sprintf("commander: telemetry %d ns old, FP32 fallback", now-c.last.TimeNS)
	case c.grant:
		return true, fmt.Sprintf("commander: pressure %.2f, relief", c.pressure)
	}
	return false, fmt.Sprintf("commander: pressure %.2f, no relief needed", c.pressure)
}

// MaxTelemetrySamples bounds a telemetry trace, generated or read: 2^22
// samples (4,194,304; 128 MiB as []Telemetry, about 250 MB of CSV), 11.6
// hours at the default 10 ms interval. Generate and Episodes refuse a
// duration and interval that would exceed it before allocating anything,
// and ReadTelemetry stops at the sample after it.
const MaxTelemetrySamples = 1 << 22

// TelemetrySamples returns how many samples a trace of durationNS sampled
// every intervalNS holds (durationNS/intervalNS + 1: times 0, interval,
// ... up to durationNS), or an error naming both when an argument is out
// of range or the count exceeds MaxTelemetrySamples.
func TelemetrySamples(durationNS, intervalNS int64) (int, error) {
	if intervalNS <= 0 || durationNS < 0 {
		return 0, fmt.Errorf("duration %d ns and interval %d ns: want duration >= 0 and interval > 0", durationNS, intervalNS)
	}
	if q := durationNS / intervalNS; q >= MaxTelemetrySamples { // q + 1 would overflow at q = MaxInt64
		return 0, fmt.Errorf("duration %d ns every %d ns is %d samples, more than the limit of %d (lengthen the interval or shorten the duration)",
			durationNS, intervalNS, uint64(q)+1, MaxTelemetrySamples)
	}
	return int(durationNS/intervalNS + 1), nil
}

// TelemetryHeader is the first line of a telemetry trace file.
const TelemetryHeader = "time_ns,demand_gbps,capacity_gbps,line_reads_per_s"

// ReadTelemetry reads a telemetry trace: CSV with the header
// TelemetryHeader, one sample per line, times non-decreasing. Blank lines
// and lines starting with # are skipped. Errors name the line. A trace
// with no sample after its header, or with more than MaxTelemetrySamples,
// is an error.
func ReadTelemetry(r io.Reader) ([]Telemetry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	var out []Telemetry
	line, header := 0, false
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if !header {
			if text != TelemetryHeader {
				return nil, fmt.Errorf("line %d: header %q, want %q", line, text, TelemetryHeader)
			}
			header = true
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %d fields, want 4", line, len(f))
		}
		var t Telemetry
		var err error
		if t.TimeNS, err = strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: time_ns: %v", line, err)
		}
		vals := []*float64{&t.DemandGBps, &t.CapacityGBps, &t.LineReads}
		for i, v := range vals {
			if *v, err = strconv.ParseFloat(strings.TrimSpace(f[i+1]), 64); err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", line, strings.Split(TelemetryHeader, ",")[i+1], err)
			}
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(out) == MaxTelemetrySamples {
			return nil, fmt.Errorf("line %d: more than %d samples", line, MaxTelemetrySamples)
		}
		if len(out) > 0 && t.TimeNS < out[len(out)-1].TimeNS {
			return nil, fmt.Errorf("line %d: time %d ns goes back from %d ns", line, t.TimeNS, out[len(out)-1].TimeNS)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if !header {
		return nil, errors.New("empty trace: no header line")
	}
	if len(out) == 0 {
		return nil, errors.New("empty trace: no sample after the header")
	}
	return out, nil
}

// WriteTelemetry writes samples in the format ReadTelemetry reads.
func WriteTelemetry(w io.Writer, ts []Telemetry) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, TelemetryHeader)
	for _, t := range ts {
		fmt.Fprintf(bw, "%d,%s,%s,%s\n", t.TimeNS, fmtF(t.DemandGBps), fmtF(t.CapacityGBps), fmtF(t.LineReads))
	}
	return bw.Flush()
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Scenario describes a synthetic telemetry trace.
type Scenario struct {
	// Name is "healthy" or "congested" for the built-in ones.
	Name string
	// LinkGBps is the CXL link bandwidth (128 GiB/s in the paper).
	LinkGBps float64
	// Background is the share of the link taken by other traffic, so the
	// capacity left for gradients is LinkGBps * (1 - Background).
	Background float64
	// StepNS is the training step period; BurstShare the share of the step
	// in which gradient buckets are communicated (the backward tail).
	StepNS     int64
	BurstShare float64
	// BurstGBps is the gradient demand during a burst, IdleGBps outside.
	BurstGBps, IdleGBps float64
	// Jitter is the relative standard deviation of the demand noise.
	Jitter float64
}

// HealthyScenario is a link with little background load: gradient bursts
// use about half of it.
func HealthyScenario() Scenario {
	return Scenario{Name: "healthy", LinkGBps: 137.4, Background: 0.1, StepNS: 100e6, BurstShare: 0.3, BurstGBps: 60, IdleGBps: 5, Jitter: 0.1}
}

// CongestedScenario shares the link with heavy background traffic, so
// gradient bursts oversubscribe it.
func CongestedScenario() Scenario {
	s := HealthyScenario()
	s.Name, s.Background, s.BurstGBps = "congested", 0.55, 90
	return s
}

// Generate returns samples every intervalNS over durationNS, deterministic
// for a seed. Line reads follow demand at 64 bytes per line. The sample
// count is checked against MaxTelemetrySamples first (TelemetrySamples).
func (s Scenario) Generate(durationNS, intervalNS int64, seed uint64) ([]Telemetry, error) {
	n, err := TelemetrySamples(durationNS, intervalNS)
	if err != nil {
		return nil, fmt.Errorf("telemetry scenario %q: %w", s.Name, err)
	}
	if s.StepNS <= 0 || !(s.LinkGBps > 0) || !(s.Background >= 0 && s.Background < 1) ||
		!(s.BurstShare >= 0 && s.BurstShare <= 1) || s.BurstGBps < 0 || s.IdleGBps < 0 || !(s.Jitter >= 0) {
		return nil, fmt.Errorf("telemetry scenario %q: bad parameters %+v (interval %d ns)", s.Name, s, intervalNS)
	}
	r := rand.New(rand.NewPCG(seed, 0x74656c65))
	out := make([]Telemetry, 0, n)
	capacity := s.LinkGBps * (1 - s.Background)
	for i := range int64(n) {
		t := i * intervalNS // at most durationNS: no overflow
		phase := float64(t%s.StepNS) / float64(s.StepNS)
		d := s.IdleGBps
		if phase >= 1-s.BurstShare {
			d = s.BurstGBps
		}
		d = math.Max(0, d*(1+s.Jitter*r.NormFloat64()))
		out = append(out, Telemetry{TimeNS: t, DemandGBps: d, CapacityGBps: capacity, LineReads: d * 1e9 / 64})
	}
	return out, nil
}

// Episodes returns a trace that alternates between scenario a and scenario
// b every episodeNS (a first), sampled every intervalNS over durationNS:
// congestion that comes and goes on a longer timescale than a step.
func Episodes(a, b Scenario, episodeNS, durationNS, intervalNS int64, seed uint64) ([]Telemetry, error) {
	if episodeNS <= 0 {
		return nil, fmt.Errorf("telemetry episodes: episode length %d ns must be positive", episodeNS)
	}
	if _, err := TelemetrySamples(durationNS, intervalNS); err != nil {
		return nil, fmt.Errorf("telemetry episodes: %w", err)
	}
	ta, err := a.Generate(durationNS, intervalNS, seed)
	if err != nil {
		return nil, err
	}
	tb, err := b.Generate(durationNS, intervalNS, seed+1)
	if err != nil {
		return nil, err
	}
	for i := range ta { // ta becomes the result: two traces in memory, not three
		if (ta[i].TimeNS/episodeNS)%2 != 0 {
			ta[i] = tb[i]
		}
	}
	return ta, nil
}
