package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// TraceEvent is one slice of a Chrome/Perfetto trace: a named span on a
// thread of a process, in microseconds.
type TraceEvent struct {
	Process, Thread, Name string
	StartUS, DurUS        float64
	// Args are shown when the slice is selected.
	Args map[string]any
}

// WriteTraceEvents writes events as Chrome trace-event JSON (the object
// form, "X" complete events; https://ui.perfetto.dev and chrome://tracing
// open it): processes and threads numbered in order of first appearance
// and named by metadata events, meta under "otherData". It renders what
// it is given, in the order given, and computes nothing.
func WriteTraceEvents(w io.Writer, events []TraceEvent, meta map[string]any) error {
	bw := bufio.NewWriter(w)
	md, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,\"traceEvents\":[\n", md)
	pids := map[string]int{}
	tids := map[[2]string]int{}
	first := true
	emit := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		_, err = bw.Write(b)
		return err
	}
	type ev struct {
		Name string         `json:"name"`
		Ph   string         `json:"ph"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid,omitempty"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args,omitempty"`
	}
	for _, e := range events {
		if math.IsNaN(e.StartUS) || math.IsInf(e.StartUS, 0) || math.IsNaN(e.DurUS) || math.IsInf(e.DurUS, 0) || e.DurUS < 0 {
			return fmt.Errorf("trace event %q: start %v us, duration %v us", e.Name, e.StartUS, e.DurUS)
		}
		pid, ok := pids[e.Process]
		if !ok {
			pid = len(pids) + 1
			pids[e.Process] = pid
			if err := emit(ev{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": e.Process}}); err != nil {
				return err
			}
			if err := emit(ev{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}}); err != nil {
				return err
			}
		}
		k := [2]string{e.Process, e.Thread}
		tid, ok := tids[k]
		if !ok {
			tid = len(tids) + 1
			tids[k] = tid
			if err := emit(ev{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": e.Thread}}); err != nil {
				return err
			}
		}
		if err := emit(ev{Name: e.Name, Ph: "X", Pid: pid, Tid: tid, Ts: e.StartUS, Dur: e.DurUS, Args: e.Args}); err != nil {
			return err
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}
