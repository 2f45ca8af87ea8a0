package control

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestTelemetrySizeLimit: a trace one sample over MaxTelemetrySamples is
// refused before anything is generated (--duration 1000h or
// --interval 1ns would otherwise end in an out-of-memory crash), and one at the
// limit is generated in full; the count is duration/interval + 1, by hand.
func TestTelemetrySizeLimit(t *testing.T) {
	const ivl = 1000
	atLimit := int64(MaxTelemetrySamples-1) * ivl
	for _, c := range []struct {
		dur, ivl int64
		want     int // 0: an error
	}{
		{0, 1, 1},
		{10, 3, 4}, // 0, 3, 6, 9
		{atLimit, ivl, MaxTelemetrySamples},
		{atLimit + ivl, ivl, 0},
		{1000 * 3600e9, 10e6, 0}, // --duration 1000h
		{10e9, 1, 0},             // --interval 1ns
		{math.MaxInt64, math.MaxInt64, 2},
		{math.MaxInt64, 1, 0},
		{-1, 1, 0},
		{1, 0, 0},
	} {
		n, err := TelemetrySamples(c.dur, c.ivl)
		if c.want == 0 {
			if err == nil || (c.ivl > 0 && c.dur >= 0 && !strings.Contains(err.Error(), "limit")) {
				t.Errorf("TelemetrySamples(%d, %d) = %d, %v; want an error naming the limit", c.dur, c.ivl, n, err)
			}
			if _, err := HealthyScenario().Generate(c.dur, c.ivl, 1); err == nil {
				t.Errorf("Generate(%d, %d) accepted", c.dur, c.ivl)
			}
			if _, err := Episodes(HealthyScenario(), CongestedScenario(), 1e9, c.dur, c.ivl, 1); err == nil {
				t.Errorf("Episodes(%d, %d) accepted", c.dur, c.ivl)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("TelemetrySamples(%d, %d) = %d, %v; want %d", c.dur, c.ivl, n, err, c.want)
		}
		if c.want > 1000 {
			continue // generated below once
		}
		ts, err := HealthyScenario().Generate(c.dur, c.ivl, 1)
		if err != nil || len(ts) != c.want || ts[len(ts)-1].TimeNS > c.dur {
			t.Errorf("Generate(%d, %d): %d samples, %v; want %d within the duration", c.dur, c.ivl, len(ts), err, c.want)
		}
	}
	ts, err := HealthyScenario().Generate(atLimit, ivl, 1)
	if err != nil || len(ts) != MaxTelemetrySamples || ts[len(ts)-1].TimeNS != atLimit {
		t.Fatalf("Generate at the limit: %d samples, %v", len(ts), err)
	}
}

// TestReadTelemetryHeaderOnly: a trace with a header and no sample is an
// error, not an empty trace that the pilot silently replaces with its
// synthetic episodes.
func TestReadTelemetryHeaderOnly(t *testing.T) {
	for _, in := range []string{TelemetryHeader + "\n", "# c\n" + TelemetryHeader + "\n\n# only comments\n"} {
		if ts, err := ReadTelemetry(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "no sample") {
			t.Errorf("ReadTelemetry(%q) = %d samples, %v; want an error saying it has no sample", in, len(ts), err)
		}
	}
	var big bytes.Buffer
	big.WriteString(TelemetryHeader + "\n")
	for i := range MaxTelemetrySamples + 1 {
		big.WriteString(strconv.Itoa(i))
		big.WriteString(",1,2,3\n")
	}
	if _, err := ReadTelemetry(&big); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("ReadTelemetry of %d samples: %v; want the limit", MaxTelemetrySamples+1, err)
	}
}

// FuzzTelemetrySize: for any duration and interval, Generate and Episodes
// either refuse before work or return exactly TelemetrySamples samples, at
// most MaxTelemetrySamples, every one inside the duration.
func FuzzTelemetrySize(f *testing.F) {
	f.Add(int64(10e9), int64(10e6), int64(2e9))
	f.Add(int64(1000*3600e9), int64(10e6), int64(1))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64-1), int64(1))
	f.Add(int64(0), int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, dur, ivl, ep int64) {
		n, nerr := TelemetrySamples(dur, ivl)
		ts, err := HealthyScenario().Generate(dur, ivl, 1)
		if (err == nil) != (nerr == nil) {
			t.Fatalf("Generate(%d, %d): %v, but TelemetrySamples says %v", dur, ivl, err, nerr)
		}
		if err != nil {
			return
		}
		if len(ts) != n || n > MaxTelemetrySamples || ts[0].TimeNS != 0 || ts[n-1].TimeNS > dur || ts[n-1].TimeNS < 0 {
			t.Fatalf("Generate(%d, %d): %d samples (want %d), last at %d ns", dur, ivl, len(ts), n, ts[len(ts)-1].TimeNS)
		}
		es, err := Episodes(HealthyScenario(), CongestedScenario(), ep, dur, ivl, 1)
		if (err == nil) != (ep > 0) || (err == nil && len(es) != n) {
			t.Fatalf("Episodes(%d, %d, %d): %d samples, %v", ep, dur, ivl, len(es), err)
		}
	})
}
