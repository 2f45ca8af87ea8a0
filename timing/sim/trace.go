package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Tracer records a window of a run as slices, one per cache line per
// stage (LLC lookup, request link, channel queue, DRAM access, pipeline,
// response link, ideal stack), for WriteJSON. Only slices that start in
// [From, Until) are kept, and at most Max of them (the rest are counted
// in Dropped), so a trace's memory is bounded whatever the run's length.
type Tracer struct {
	From, Until Time
	Max         int
	Dropped     int64
	// Run says which run the slices came from (the driver that ran it
	// sets it); WriteJSON puts it in the document's otherData.
	Run    string
	slices []traceSlice
}

type traceSlice struct {
	track      string
	start, end Time
}

// MaxTraceSlices bounds Tracer.Max: 2^20 slices (1,048,576), about 100 MB
// of memory while the trace is written and at most TraceEventBytes each in
// the JSON file (about 75 MB in practice). Slices past Max are counted in
// Dropped, never stored, so the window's length does not matter.
const MaxTraceSlices = 1 << 20

// TraceEventBytes bounds one slice's event in WriteJSON's output (a
// stage name of at most 16 bytes, two 20-digit timestamps, pid and lane);
// each track adds at most 2*TraceEventBytes plus twice its name's length
// of metadata, and the document's header and end are under 256 bytes.
const TraceEventBytes = 160

// NewTracer returns a tracer of the window [from, until) keeping at most
// max slices, or an error naming the bad argument: the window must be
// non-empty and start at or after 0, and max must be in 1..MaxTraceSlices.
func NewTracer(from, until Time, max int) (*Tracer, error) {
	switch {
	case from < 0 || until <= from:
		return nil, fmt.Errorf("trace window [%v, %v): want 0 <= from < until", from, until)
	case max < 1 || max > MaxTraceSlices:
		return nil, fmt.Errorf("trace of at most %d slices: want 1 to %d", max, MaxTraceSlices)
	}
	return &Tracer{From: from, Until: until, Max: max}, nil
}

// TimeOfNS converts a nanosecond count typed by a user (a flag, a
// configuration field) to Time, rounding to the nearest picosecond, or
// returns an error for NaN, a negative value, or one at or past Never
// (about 106 days): 1e300 ns must not wrap around to a negative time.
func TimeOfNS(ns float64) (Time, error) {
	ps := math.Round(ns * float64(Nanosecond))
	if !(ps >= 0) || ps >= float64(Never) {
		return 0, fmt.Errorf("%v ns: want a finite time from 0 to %v ns", ns, Never.NS())
	}
	return Time(ps), nil
}

// Len returns the number of slices kept.
func (t *Tracer) Len() int { return len(t.slices) }

// Slice records that track was busy over [start, end). A nil tracer
// records nothing, so components call it unconditionally (it inlines to
// that nil check).
func (t *Tracer) Slice(track string, start, end Time) {
	if t != nil {
		t.add(track, start, end)
	}
}

func (t *Tracer) add(track string, start, end Time) {
	if end <= start || start < t.From || start >= t.Until {
		return
	}
	if len(t.slices) >= t.Max {
		t.Dropped++
		return
	}
	t.slices = append(t.slices, traceSlice{track, start, end})
}

// WriteJSON writes the slices in the Chrome trace-event format (JSON
// object form, "X" complete events, timestamps in microseconds), which
// Perfetto (https://ui.perfetto.dev, "Open trace file") and
// chrome://tracing open directly. Each component is one process track
// named after it (Host[0].LLC, Device[0].Ctrl.DRAM.Ch[3], ...); slices
// that overlap in time go on separate thread lanes within it, assigned
// greedily, so every lane is properly nested. The output is a pure
// function of the slices.
func (t *Tracer) WriteJSON(w io.Writer) error {
	byTrack := map[string][]traceSlice{}
	for _, s := range t.slices {
		byTrack[s.track] = append(byTrack[s.track], s)
	}
	names := make([]string, 0, len(byTrack))
	for n := range byTrack {
		names = append(names, n)
	}
	sort.Strings(names)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"run\":%q,\"window_from_ps\":%d,\"window_until_ps\":%d,\"dropped\":%d},\"traceEvents\":[\n",
		t.Run, int64(t.From), int64(t.Until), t.Dropped)
	first := true
	emit := func(format string, args ...any) {
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		fmt.Fprintf(bw, format, args...)
	}
	for pid, n := range names {
		emit(`{"name":"process_name","ph":"M","pid":%d,"args":{"name":%q}}`, pid+1, n)
		emit(`{"name":"process_sort_index","ph":"M","pid":%d,"args":{"sort_index":%d}}`, pid+1, pid+1)
		ss := byTrack[n]
		sort.SliceStable(ss, func(i, j int) bool {
			if ss[i].start != ss[j].start {
				return ss[i].start < ss[j].start
			}
			return ss[i].end < ss[j].end
		})
		stage := n[strings.LastIndex(n, ".")+1:]
		var lanes []Time
		for _, s := range ss {
			lane := -1
			for i, e := range lanes {
				if e <= s.start {
					lane = i
					break
				}
			}
			if lane < 0 {
				lane = len(lanes)
				lanes = append(lanes, 0)
			}
			lanes[lane] = s.end
			emit(`{"name":%q,"ph":"X","pid":%d,"tid":%d,"ts":%s,"dur":%s}`, stage, pid+1, lane, us(s.start), us(s.end-s.start))
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// us formats picoseconds as microseconds with every digit kept.
func us(t Time) string {
	return fmt.Sprintf("%d.%06d", int64(t)/1e6, int64(t)%1e6)
}
