// Package akita is a cross-check of package timing: the same CXL-path model
// (closed-loop read streams, tags-only LRU LLC, fixed-latency memory,
// k-stage pipeline, link bandwidth gate, N interleaved stacks) written on
// Akita's serial engine in Akita's style, one event per hop, with Akita's
// float64-second time. It lives in its own module so that the main module
// never depends on Akita.
//
// Differences from package timing, by design: every hop is its own event
// (timing reserves a line's whole path when it issues), the gate and
// pipeline serve lines in the order their events fire (timing relies on
// arrivals being in time order), time is float64 seconds (timing uses
// integer picoseconds), and Akita's queue orders same-time events by heap
// position, not by scheduling order. Only the "read" pattern with no issue
// interval and no low-bit window is supported.
package akita

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/timing"
	tsim "github.com/neuronfabric/nfabric/timing/sim"
	"github.com/sarchlab/akita/v4/sim"
)

type kind int

const (
	evIssue kind = iota
	evArrive
	evMemDone
	evPipeDone
	evComplete
)

// lineEvent is one hop of one cache line.
type lineEvent struct {
	*sim.EventBase
	kind   kind
	stream int
	addr   uint64
}

// lru is an independent tags-only LRU cache: each set is a slice of line
// numbers, most recent last.
type lru struct {
	sets [][]uint64
	ways int
	hits int64
}

func (c *lru) access(line uint64) bool {
	s := &c.sets[line%uint64(len(c.sets))]
	for i, t := range *s {
		if t == line {
			copy((*s)[i:], (*s)[i+1:])
			(*s)[len(*s)-1] = line
			c.hits++
			return true
		}
	}
	if len(*s) == c.ways {
		copy(*s, (*s)[1:])
		(*s)[len(*s)-1] = line
	} else {
		*s = append(*s, line)
	}
	return false
}

type stack struct {
	pipeFree, gateFree sim.VTimeInSec
}

type stream struct {
	next, end   uint64 // byte addresses of the next line and of the end of this pass
	base        uint64
	passes      int
	outstanding int
	finish      sim.VTimeInSec
}

// Model is the Akita version of the timing model.
type Model struct {
	eng     *sim.SerialEngine
	cfg     timing.Config
	lowBit  bool
	llc     lru
	stacks  []stack
	streams []stream

	lookup, mem, pipe, initiation, gate sim.VTimeInSec
	// Events counts handled events.
	Events int64
}

// New builds the model for cfg; lowBit selects the pipeline for every read.
func New(cfg timing.Config, lowBit bool) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Streams.Pattern != "read" || cfg.Streams.IssueIntervalNS != 0 {
		return nil, fmt.Errorf("akita cross-check supports pattern read with no issue interval")
	}
	ns := func(v float64) sim.VTimeInSec { return sim.VTimeInSec(v * 1e-9) }
	cyc := sim.VTimeInSec(float64(cfg.Cycle()) * 1e-12)
	m := &Model{
		eng: sim.NewSerialEngine(), cfg: cfg, lowBit: lowBit,
		lookup: ns(cfg.LLC.HitLatencyNS), mem: ns(cfg.Memory.LatencyNS),
		pipe:       sim.VTimeInSec(cfg.Controller.Stages) * cyc,
		initiation: sim.VTimeInSec(min(cfg.Controller.InitiationCycles, cfg.Controller.Stages)) * cyc,
		gate:       sim.VTimeInSec(float64(timing.LineBytes) / float64(cfg.LinkBytesPerSec())),
		stacks:     make([]stack, cfg.Controller.Stacks),
	}
	sets := int(cfg.LLC.SizeMiB*(1<<20)) / (timing.LineBytes * cfg.LLC.Ways)
	m.llc = lru{sets: make([][]uint64, sets), ways: cfg.LLC.Ways}
	fp := uint64(cfg.FootprintLines()) * timing.LineBytes
	for s := range cfg.Streams.Count {
		base := uint64(s) * fp
		m.streams = append(m.streams, stream{next: base, end: base + fp, base: base, passes: cfg.Streams.Passes})
	}
	return m, nil
}

func (m *Model) schedule(t sim.VTimeInSec, k kind, s int, addr uint64) {
	m.eng.Schedule(&lineEvent{EventBase: sim.NewEventBase(t, m), kind: k, stream: s, addr: addr})
}

// Handle implements sim.Handler.
func (m *Model) Handle(e sim.Event) error {
	ev := e.(*lineEvent)
	now := ev.Time()
	m.Events++
	switch ev.kind {
	case evIssue:
		m.tryIssue(ev.stream, now)
	case evArrive:
		m.schedule(now+m.mem, evMemDone, ev.stream, ev.addr)
	case evMemDone:
		if !m.lowBit {
			m.toGate(ev, now)
			return nil
		}
		st := &m.stacks[m.stackOf(ev.addr)]
		start := max(now, st.pipeFree)
		st.pipeFree = start + m.initiation
		m.schedule(start+m.pipe, evPipeDone, ev.stream, ev.addr)
	case evPipeDone:
		m.toGate(ev, now)
	case evComplete:
		s := &m.streams[ev.stream]
		s.outstanding--
		s.finish = now
		m.tryIssue(ev.stream, now)
	}
	return nil
}

func (m *Model) stackOf(addr uint64) int {
	return int((addr / uint64(m.cfg.Controller.InterleaveBytes)) % uint64(len(m.stacks)))
}

func (m *Model) toGate(ev *lineEvent, now sim.VTimeInSec) {
	st := &m.stacks[m.stackOf(ev.addr)]
	start := max(now, st.gateFree)
	st.gateFree = start + m.gate
	m.schedule(st.gateFree, evComplete, ev.stream, ev.addr)
}

func (m *Model) tryIssue(si int, now sim.VTimeInSec) {
	s := &m.streams[si]
	for s.outstanding < m.cfg.Streams.Outstanding && s.passes > 0 {
		addr := s.next
		s.next += timing.LineBytes
		if s.next == s.end {
			s.next = s.base
			s.passes--
		}
		s.outstanding++
		if m.llc.access(addr / timing.LineBytes) {
			m.schedule(now+m.lookup, evComplete, si, addr)
		} else {
			m.schedule(now+m.lookup, evArrive, si, addr)
		}
	}
}

// Run simulates to the end and returns the run time in picoseconds
// (rounded) and the LLC hits.
func (m *Model) Run() (tsim.Time, int64, error) {
	for s := range m.streams {
		m.schedule(0, evIssue, s, 0)
	}
	if err := m.eng.Run(); err != nil {
		return 0, 0, err
	}
	var end sim.VTimeInSec
	for _, s := range m.streams {
		end = max(end, s.finish)
	}
	return tsim.Time(math.Round(float64(end) * 1e12)), m.llc.hits, nil
}
