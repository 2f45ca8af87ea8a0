package sim

// Clock tells the current simulated time.
type Clock interface {
	Now() Time
}

// Scheduler is a Clock that also accepts future events.
type Scheduler interface {
	Clock
	// Schedule asks for h.Handle(t, arg) to run at time t >= Now().
	Schedule(t Time, h Handler, arg int64)
}

// Handler receives events. Components implement it; arg distinguishes the
// kinds of event one component schedules for itself.
type Handler interface {
	Handle(now Time, arg int64)
}

// Hook observes every event just before it runs (tracing, invariant
// checks). Hooks must not schedule events.
type Hook func(now Time, h Handler, arg int64)

// event is pooled: the engine reuses released events, so a long run
// allocates only as many events as are ever pending at once.
type event struct {
	t   Time
	seq uint64
	h   Handler
	arg int64
}

// eventHeap is a binary min-heap ordered by (t, seq): the invariant is
// !before(q[i], q[parent(i)]) for every i > 0. It is written out for
// *event (no interface calls) because the heap is the engine's hot path.
type eventHeap []*event

func before(a, b *event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

func (q eventHeap) up(i int) {
	e := q[i]
	for i > 0 {
		p := (i - 1) / 2
		if !before(e, q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = e
}

func (q eventHeap) down(i int) {
	n := len(q)
	e := q[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && before(q[r], q[c]) {
			c = r
		}
		if !before(q[c], e) {
			break
		}
		q[i] = q[c]
		i = c
	}
	q[i] = e
}

func (q *eventHeap) push(e *event) {
	*q = append(*q, e)
	q.up(len(*q) - 1)
}

func (q *eventHeap) pop() *event {
	old := *q
	n := len(old) - 1
	e := old[0]
	old[0] = old[n]
	old[n] = nil
	*q = old[:n]
	if n > 0 {
		q.down(0)
	}
	return e
}

// Engine is a serial discrete-event engine. Events run in (time, sequence)
// order, where the sequence number counts Schedule calls, so events at the
// same time run in the order they were scheduled: a run is a pure function
// of its inputs, whatever GOMAXPROCS is. Engine is not safe for concurrent
// use; run independent simulations on independent engines.
type Engine struct {
	now   Time
	seq   uint64
	q     eventHeap
	free  []*event
	hooks []Hook
	// running is the event being handled while it still sits at the top of
	// the heap; the first Schedule from its handler reuses it in place
	// (one sift-down instead of a pop and a push).
	running *event
	// Events counts the events run so far.
	Events int64
}

// NewEngine returns an engine at time 0 with no pending events.
func NewEngine() *Engine { return &Engine{} }

// Now returns the time of the event being run (or of the last one).
func (e *Engine) Now() Time { return e.now }

// AddHook registers h to observe every later event.
func (e *Engine) AddHook(h Hook) { e.hooks = append(e.hooks, h) }

// Schedule queues h.Handle(t, arg). Scheduling in the past is a broken
// internal contract and panics. Cost: O(log n) for n pending events; it
// allocates only when more events are pending than ever before.
func (e *Engine) Schedule(t Time, h Handler, arg int64) {
	if t < e.now {
		panic("sim: event scheduled in the past")
	}
	if ev := e.running; ev != nil {
		e.running = nil
		*ev = event{t: t, seq: e.seq, h: h, arg: arg}
		e.seq++
		e.q.down(0) // the new time is >= now, so it can only sink
		return
	}
	var ev *event
	if n := len(e.free); n > 0 {
		ev = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		ev = new(event)
	}
	*ev = event{t: t, seq: e.seq, h: h, arg: arg}
	e.seq++
	e.q.push(ev)
}

// Pending returns the number of queued events (not counting the one
// being handled).
func (e *Engine) Pending() int {
	if e.running != nil {
		return len(e.q) - 1
	}
	return len(e.q)
}

// Run runs events until none is left and returns the final time. Because
// (time, seq) is a total order, the events run in the same order however
// the heap is maintained.
func (e *Engine) Run() Time {
	for len(e.q) > 0 {
		ev := e.q[0]
		if ev.t < e.now {
			panic("sim: time went backwards")
		}
		e.now = ev.t
		h, arg := ev.h, ev.arg
		e.running = ev
		e.Events++
		for _, hk := range e.hooks {
			hk(e.now, h, arg)
		}
		h.Handle(e.now, arg)
		if e.running == ev { // the handler scheduled nothing: retire it
			e.running = nil
			e.q.pop()
			ev.h = nil
			e.free = append(e.free, ev)
		}
	}
	return e.now
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(now Time, arg int64)

// Handle calls f(now, arg).
func (f HandlerFunc) Handle(now Time, arg int64) { f(now, arg) }
