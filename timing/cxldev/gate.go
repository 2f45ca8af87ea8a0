package cxldev

import (
	"fmt"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Gate is the CXL link modelled as a bandwidth gate (paper Sec. 3): a FIFO
// server that spaces cache-line transfers by lowbit.LineBytes/bandwidth. At
// 128 GiB/s the interval is 2^-31 s = 465.661... ps; the gate keeps the
// fractional picoseconds as an exact remainder, so a train of n
// back-to-back lines that starts at an idle gate at t ends at exactly
// t + round(n * 64 B / bandwidth) (half rounds up), and the long-run
// throughput equals the bandwidth with no rounding drift.
type Gate struct {
	name      string
	q, r, den int64    // interval = q + r/den picoseconds
	free      sim.Time // the gate is busy until free
	rem       int64    // accumulated r/den fraction, in [0, den)
	// Lines counts transfers; Busy sums their service time (rounded down).
	Lines int64
	Busy  sim.Time
	// Wait sums the time lines spent queued in front of the gate.
	Wait sim.Time
}

// GateBuilder builds bandwidth gates. Start from MakeGateBuilder.
type GateBuilder struct {
	bytesPerSec int64
}

// MakeGateBuilder returns a builder with the paper's 128 GiB/s.
func MakeGateBuilder() GateBuilder { return GateBuilder{bytesPerSec: 128 << 30} }

// WithBandwidth returns a copy with the given effective bandwidth in bytes
// per second (> 0).
func (b GateBuilder) WithBandwidth(bytesPerSec int64) GateBuilder {
	b.bytesPerSec = bytesPerSec
	return b
}

// Build returns an idle gate.
func (b GateBuilder) Build(name string) *Gate {
	if b.bytesPerSec <= 0 {
		panic(fmt.Sprintf("cxldev: link %s: bandwidth %d B/s", name, b.bytesPerSec))
	}
	num := int64(lowbit.LineBytes) * int64(sim.Second)
	return &Gate{name: sim.MustName(name), q: num / b.bytesPerSec, r: num % b.bytesPerSec, den: b.bytesPerSec}
}

// Name returns the component's hierarchical name.
func (l *Gate) Name() string { return l.name }

// Interval returns the per-line gate interval rounded down to a picosecond.
func (l *Gate) Interval() sim.Time { return sim.Time(l.q) }

// Accept queues a line that reaches the gate at arrive and returns when its
// transfer ends. Lines are served in the order Accept is called (an in-order
// response path).
func (l *Gate) Accept(arrive sim.Time) sim.Time {
	if arrive > l.free {
		// Idle gate: a new back-to-back train starts. Starting the fraction
		// at one half rounds every train end to the nearest picosecond.
		l.free, l.rem = arrive, l.den/2
	} else {
		l.Wait += l.free - arrive
	}
	start := l.free
	l.free += sim.Time(l.q)
	l.rem += l.r
	if l.rem >= l.den {
		l.free++
		l.rem -= l.den
	}
	l.Lines++
	l.Busy += l.free - start
	return l.free
}
