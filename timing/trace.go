package timing

import (
	"bufio"
	"fmt"
	"io"
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
	slices      []traceSlice
}

type traceSlice struct {
	track      string
	start, end Time
}

// NewTracer returns a tracer of the window [from, until) keeping at most
// max slices.
func NewTracer(from, until Time, max int) *Tracer {
	return &Tracer{From: from, Until: until, Max: max}
}

// Len returns the number of slices kept.
func (t *Tracer) Len() int { return len(t.slices) }

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
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"window_from_ps\":%d,\"window_until_ps\":%d,\"dropped\":%d},\"traceEvents\":[\n",
		int64(t.From), int64(t.Until), t.Dropped)
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
