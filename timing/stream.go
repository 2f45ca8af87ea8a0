package timing

import (
	"fmt"

	"github.com/neuronfabric/nfabric/timing/sim"
)

// Request is one 64-byte cache-line access a stream wants to issue.
type Request struct {
	// Addr is a byte address; the line is Addr / 64.
	Addr uint64
	// Write marks a write (absorbed by the LLC, see the package doc);
	// otherwise it is a read.
	Write bool
	// Ready is the earliest time the request may issue.
	Ready sim.Time
}

// Source yields one stream's requests in issue order. Next must not
// allocate: the engine calls it once per simulated line.
type Source interface {
	Next() (Request, bool)
}

// Pattern is a stream's issue pattern.
type Pattern int

const (
	// PatternRead reads every line of the footprint in address order, once
	// per pass.
	PatternRead Pattern = iota
	// PatternWriteRead writes every line of the footprint, then reads every
	// line, once per pass: the runtime writing a packed payload and the
	// aggregate read that follows.
	PatternWriteRead
)

var patternNames = [...]string{"read", "write-read"}

func (p Pattern) String() string {
	if int(p) < len(patternNames) {
		return patternNames[p]
	}
	return fmt.Sprintf("Pattern(%d)", int(p))
}

// ParsePattern parses "read" or "write-read".
func ParsePattern(s string) (Pattern, error) {
	for i, n := range patternNames {
		if s == n {
			return Pattern(i), nil
		}
	}
	return 0, fmt.Errorf("unknown pattern %q (want read or write-read)", s)
}

// sweepSource walks a contiguous region of lines.
type sweepSource struct {
	base          uint64
	lines, passes int64
	pattern       Pattern
	pass, i       int64
	writing       bool
}

func newSweep(base uint64, lines, passes int64, p Pattern) *sweepSource {
	return &sweepSource{base: base, lines: lines, passes: passes, pattern: p, writing: p == PatternWriteRead}
}

func (s *sweepSource) Next() (Request, bool) {
	if s.pass >= s.passes || s.lines == 0 {
		return Request{}, false
	}
	r := Request{Addr: s.base + uint64(s.i)*LineBytes, Write: s.writing}
	s.i++
	if s.i == s.lines {
		s.i = 0
		if s.writing {
			s.writing = false
		} else {
			s.pass++
			s.writing = s.pattern == PatternWriteRead
		}
	}
	return r, true
}

// Bucket is a gradient bucket for replay: Lines cache lines of packed
// payload that become ready to be read (aggregated) at Ready.
type Bucket struct {
	Ready sim.Time `json:"ready_ps"`
	Lines int64    `json:"lines"`
}

// bucketSource gives stream s of w its share of every bucket: lines
// j = s, s+w, s+2w, ... of each bucket, read from a ring over the stream's
// footprint region.
type bucketSource struct {
	buckets []Bucket
	s, w    int64
	base    uint64
	ring    int64
	b, left int64
	cursor  int64
	started bool
}

func (bs *bucketSource) Next() (Request, bool) {
	for bs.left == 0 {
		if bs.started {
			bs.b++
		}
		bs.started = true
		if bs.b >= int64(len(bs.buckets)) {
			return Request{}, false
		}
		n := bs.buckets[bs.b].Lines
		bs.left = n / bs.w
		if bs.s < n%bs.w {
			bs.left++
		}
	}
	bs.left--
	r := Request{Addr: bs.base + uint64(bs.cursor)*LineBytes, Ready: bs.buckets[bs.b].Ready}
	bs.cursor++
	if bs.cursor == bs.ring {
		bs.cursor = 0
	}
	return r, true
}

// Stream is one worker's request stream (named like Host[0].Stream[3]): a
// closed loop that keeps at most Outstanding requests in flight, issues
// each as soon as a slot is free, the request is Ready and IssueInterval
// has passed since its previous issue.
type Stream struct {
	name        string
	sys         *System
	src         Source
	limit       int
	interval    sim.Time
	outstanding int
	lastIssue   sim.Time
	issued      bool
	pending     Request
	hasPending  bool
	exhausted   bool
	wakeup      bool
	// Issued and Completed count requests issued and finished; Finish is
	// when the last one finished. ControllerReads counts this stream's
	// reads that reached a controller stack.
	Issued          int64
	Completed       int64
	ControllerReads int64
	Finish          sim.Time
	// OnComplete, when set before Run, is called at every completion with
	// the stream's Completed count (the replay fast-forward uses it to
	// time each bucket of an event-simulated busy period).
	OnComplete func(now sim.Time, completed int64)
}

const (
	evComplete int64 = iota
	evIssue
)

// Name returns the component's hierarchical name.
func (st *Stream) Name() string { return st.name }

// Handle runs a completion or a wake-up to issue.
func (st *Stream) Handle(now sim.Time, arg int64) {
	if arg == evComplete {
		st.outstanding--
		st.Completed++
		st.Finish = now
		if st.OnComplete != nil {
			st.OnComplete(now, st.Completed)
		}
	} else {
		st.wakeup = false
	}
	st.tryIssue(now)
}

// tryIssue issues every request that may go at now and arranges a wake-up
// for the next one that may not.
func (st *Stream) tryIssue(now sim.Time) {
	for st.outstanding < st.limit {
		if !st.hasPending {
			if st.exhausted {
				return
			}
			r, ok := st.src.Next()
			if !ok {
				st.exhausted = true
				return
			}
			st.pending, st.hasPending = r, true
		}
		at := st.pending.Ready
		if st.issued && st.lastIssue+st.interval > at {
			at = st.lastIssue + st.interval
		}
		if at > now {
			if !st.wakeup {
				st.wakeup = true
				st.sys.eng.Schedule(at, st, evIssue)
			}
			return
		}
		st.hasPending = false
		st.issued, st.lastIssue = true, now
		st.outstanding++
		st.Issued++
		if t, async := st.sys.access(st, now, st.pending); !async {
			st.sys.eng.Schedule(t, st, evComplete)
		}
	}
}
