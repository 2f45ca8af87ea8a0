package hw

import (
	"bytes"
	"context"
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// ModeDatapath returns the sum datapath that runs integer-sum mode m (its
// name is the mode's); a mode that is not an integer-sum mode is an error.
func ModeDatapath(m cxl.Mode) (Datapath, error) {
	switch m.Format() {
	case lowbit.Int8:
		return Int8Sum, nil
	case lowbit.BFP8:
		return BFP8Sum, nil
	}
	return "", fmt.Errorf("hw: %v is not an integer-sum mode with a sum datapath", m)
}

// SumTiming is what a sum datapath's RTL shows in simulation
// (MeasureSumTiming), in rising clock edges.
type SumTiming struct {
	// Latency is the edges from an aggregate's last worker line to the
	// cycle its view is out (out_valid high), as the co-simulation counts
	// them (Config.Latency's convention).
	Latency int
	// Interval is the edges between two aggregates' views when their
	// worker lines arrive back to back, divided by the lines of one: the
	// initiation interval per worker line.
	Interval int
	// Lines is the worker lines of each aggregate (Config.Workers).
	Lines int
}

// MeasureSumTiming simulates c's sum datapath (for bfp8-sum, its mantissa
// pass) on two aggregates of c.Workers lines each, driven back to back
// with no idle cycle, then idle cycles, and reads the latency and the
// initiation interval off the cycles on which out_valid is high; both
// views must equal ExpectSum, and nothing else may be valid. It measures
// the RTL rather than trusting Datapath.Depth, which the timing model's
// datapath depth of the sum modes follows.
func MeasureSumTiming(ctx context.Context, c Config, sim Simulator, dir string) (SumTiming, error) {
	if err := c.Validate(); err != nil {
		return SumTiming{}, err
	}
	c = c.Normalized()
	if !c.Datapath.IsSum() {
		return SumTiming{}, fmt.Errorf("hw: measure sum timing of %s: not a sum datapath", c.Datapath)
	}
	g := &sumGen{c: c}
	w := c.Workers
	for a := range 2 {
		line := func(k int) []byte { return g.fill(func(i int) byte { return byte(int8(3*a + k - i%5)) }) }
		exp := func(k int) []byte { return g.groups(func(b int) int { return -(k + b + a) % 4 }) }
		g.agg(w, false, line, exp, false)
	}
	vs := g.vs
	last := []int{w - 1, 2*w - 1} // input indices of each aggregate's last line
	want := [][]byte{ExpectSum(c, vs[:w]), ExpectSum(c, vs[w:])}
	var in bytes.Buffer
	idle := Vector{Data: make([]byte, c.Elements())}
	for _, v := range append(vs, make([]Vector, MaxStages+4)...) {
		if v.Data == nil {
			v = idle
		}
		in.WriteString(c.EncodeSumVector(v))
		in.WriteByte('\n')
	}
	out, err := simulate(ctx, c, sim, in.Bytes(), dir)
	if err != nil {
		return SumTiming{}, err
	}
	var at []int
	for j, line := range responseLines(out) {
		valid, got, err := ParseResponse(line, c.OutWidth())
		if err != nil {
			return SumTiming{}, fmt.Errorf("hw: measure %s: response %d: %w", c.ModuleName(), j, err)
		}
		if !valid {
			continue
		}
		if len(at) == 2 {
			return SumTiming{}, fmt.Errorf("hw: measure %s: a third valid view at cycle %d", c.ModuleName(), j)
		}
		if !bytes.Equal(got, want[len(at)]) {
			return SumTiming{}, fmt.Errorf("hw: measure %s: view %d at cycle %d is %s, want %s", c.ModuleName(), len(at), j, hexMSB(got), hexMSB(want[len(at)]))
		}
		at = append(at, j)
	}
	if len(at) != 2 {
		return SumTiming{}, fmt.Errorf("hw: measure %s: %d valid views, want 2", c.ModuleName(), len(at))
	}
	// Output line j answers input j - (k - 1) (compareSum), so k = j - i + 1.
	t := SumTiming{Latency: at[0] - last[0] + 1, Lines: w}
	gap := at[1] - at[0]
	if gap%w != 0 || at[1]-last[1]+1 != t.Latency {
		return SumTiming{}, fmt.Errorf("hw: measure %s: views %d edges apart for %d lines each, latencies %d and %d", c.ModuleName(), gap, w, t.Latency, at[1]-last[1]+1)
	}
	t.Interval = gap / w
	return t, nil
}
