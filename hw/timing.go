package hw

import (
	"bytes"
	"context"
	"fmt"
)

// Timing is what a datapath's RTL shows in simulation (MeasureTiming), in
// rising clock edges.
type Timing struct {
	// Latency is the edges from a request's last line to the cycle its
	// response is out (out_valid high), as the co-simulation counts them
	// (Config.Latency's convention).
	Latency int
	// Interval is the edges between two requests' responses when their
	// lines arrive back to back, divided by the lines of one: the
	// initiation interval per line.
	Interval int
	// Lines is the lines of each request: 1 for the vote datapath,
	// Config.Workers worker lines for a sum datapath's aggregate.
	Lines int
}

// MeasureTiming simulates c's datapath on two requests that each yield
// one response (a G-Binary line for the vote datapath; for a sum datapath
// a mantissa aggregate of c.Workers lines), driven back to back with no
// idle cycle, then idle cycles, and reads the latency and the initiation
// interval off the cycles on which out_valid is high; both responses must
// equal Expect, and nothing else may be valid. It measures the RTL rather
// than trusting Datapath.Depth, which the timing model's datapath depth
// follows.
func MeasureTiming(ctx context.Context, c Config, sim Simulator, dir string) (Timing, error) {
	if err := c.Validate(); err != nil {
		return Timing{}, err
	}
	c = c.Normalized()
	f := c.Datapath.fam()
	g0, g1 := f.group(c, 0), f.group(c, 1)
	w := len(g0)
	vs := append(append([]Vector{}, g0...), g1...)
	last := []int{w - 1, len(vs) - 1} // input indices of each request's last line
	exp := f.expect(c, vs)
	want := [][]byte{exp[last[0]], exp[last[1]]}
	if want[0] == nil || want[1] == nil || len(g1) != w {
		return Timing{}, fmt.Errorf("hw: measure %s: the family's timing requests yield no response", c.ModuleName())
	}
	var in bytes.Buffer
	idle := Vector{Data: make([]byte, c.Elements())}
	for _, v := range append(vs, make([]Vector, MaxStages+4)...) {
		if v.Data == nil {
			v = idle
		}
		in.WriteString(c.EncodeVector(v))
		in.WriteByte('\n')
	}
	out, err := simulate(ctx, c, sim, in.Bytes(), dir)
	if err != nil {
		return Timing{}, err
	}
	var at []int
	for j, line := range responseLines(out) {
		valid, got, err := ParseResponse(line, c.OutWidth())
		if err != nil {
			return Timing{}, fmt.Errorf("hw: measure %s: response %d: %w", c.ModuleName(), j, err)
		}
		if !valid {
			continue
		}
		if len(at) == 2 {
			return Timing{}, fmt.Errorf("hw: measure %s: a third valid response at cycle %d", c.ModuleName(), j)
		}
		if !bytes.Equal(got, want[len(at)]) {
			return Timing{}, fmt.Errorf("hw: measure %s: response %d at cycle %d is %s, want %s", c.ModuleName(), len(at), j, hexMSB(got), hexMSB(want[len(at)]))
		}
		at = append(at, j)
	}
	if len(at) != 2 {
		return Timing{}, fmt.Errorf("hw: measure %s: %d valid responses, want 2", c.ModuleName(), len(at))
	}
	// Output line j answers input j - (k - 1) (compare), so k = j - i + 1.
	t := Timing{Latency: at[0] - last[0] + 1, Lines: w}
	gap := at[1] - at[0]
	if gap%w != 0 || at[1]-last[1]+1 != t.Latency {
		return Timing{}, fmt.Errorf("hw: measure %s: responses %d edges apart for %d lines each, latencies %d and %d", c.ModuleName(), gap, w, t.Latency, at[1]-last[1]+1)
	}
	t.Interval = gap / w
	return t, nil
}
