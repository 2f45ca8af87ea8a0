// Package sim is the timing model's discrete-event engine: integer
// picosecond time (Time), a serial engine whose binary-heap event queue is
// keyed by (time, sequence number) so events at the same time run in the
// order they were scheduled (Engine), the small interfaces components
// implement (Handler) or ask for (Clock, Scheduler), hierarchical
// component names (MustName: Host[0].Stream[3]) and a tracer that records
// a window of a run as Chrome/Perfetto trace-event JSON (Tracer).
//
// Events are pooled, so memory is bounded by the events pending at once,
// not by the events run. A run is a pure function of its inputs: no
// goroutines, maps or clocks inside, whatever GOMAXPROCS is; independent
// simulations run on independent engines.
//
// It follows Akita's sim (Handler, hooks that observe every event,
// hierarchical names) with our determinism: integer picoseconds rather
// than float64 seconds, and a (time, seq) key rather than time alone.
package sim
