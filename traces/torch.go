package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/strictjson"
	"github.com/neuronfabric/nfabric/workload"
)

// A torch.profiler trace is the Chrome trace-event JSON that
// torch.profiler.profile(...).export_chrome_trace writes: an object with
// "traceEvents" (the Kineto profiler's, beside "distributedInfo" and
// others) or a bare list of events (the legacy profiler's, in a torch
// built without Kineto, such as Debian's python3-torch: its events carry
// no args, so no collective sizes, and such a trace is refused with what
// to do). ReadTorchProfile reads it as a bucket trace:
//
//   - Collectives. Each "record_param_comms" CPU event (what NCCL and
//     other backends record: "Collective name", "In msg nelems", "dtype",
//     "Group size") is one collective. A trace without them (gloo on the
//     CPU) gives its c10d:: dispatcher events (c10d::allreduce_,
//     c10d::_allgather_base_, ...), whose element counts come from their
//     "Input Dims" (record_shapes=True) and whose element type, when the
//     event does not carry it, from the backend's annotation of the same
//     collective (gloo:all_reduce's "Input type"), matched in launch
//     order. A collective's bytes are S as collective.Op defines it: the
//     elements a rank hands in times the element size. An all-reduce or
//     reduce-scatter must be of float (FP32) elements, the gradients the
//     what-if prices; other collectives may be of any type.
//   - Steps. ProfilerStep#N events (a profile with a schedule and
//     prof.step()) delimit steps; without them each Optimizer.step event
//     ends one, and without those the whole trace is one step.
//   - Times. A step's backward runs from its first to the end of its last
//     autograd::engine::evaluate_function event; forward is from the step's
//     start to backward's; optimizer the Optimizer.step events' time. A
//     collective is ready when it was launched (its event's start), from
//     the start of backward; one launched before backward (a DDP buffer
//     broadcast in forward) is ready at backward's start, and counted.
//   - Workers. The collectives' "Group size", or distributedInfo's
//     world_size.
//
// Events are decoded one at a time and only the ones above are kept.

// torchEvent is one trace event, its args left raw until needed.
type torchEvent struct {
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	Cat  string          `json:"cat"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Args json.RawMessage `json:"args"`
}

type span struct{ start, end float64 }

// torchColl is one collective as the trace records it.
type torchColl struct {
	op      collective.Op
	ts, dur float64
	elems   int64
	dtype   string // "" until known
	group   int
	name    string
}

// dtypeBytes is the size of a tensor element by the names record_param_comms
// ("Float", "BFloat16") and record_shapes ("float", "c10::BFloat16") use.
var dtypeBytes = map[string]int64{
	"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "c10::half": 2,
	"bfloat16": 2, "c10::bfloat16": 2, "int": 4, "int32": 4, "long": 8, "long int": 8, "int64": 8,
	"short": 2, "short int": 2, "int16": 2, "char": 1, "signed char": 1, "int8": 1, "byte": 1,
	"unsigned char": 1, "uint8": 1, "bool": 1, "complexfloat": 8, "c10::complex<float>": 8,
	"complexdouble": 16, "c10::complex<double>": 16, "float8_e4m3fn": 1, "float8_e5m2": 1,
}

func isFloat32(dtype string) bool { d := strings.ToLower(dtype); return d == "float" || d == "float32" }

// torchOp maps a collective's name as PyTorch spells it (record_param_comms'
// "Collective name", a c10d:: operator, a gloo: annotation) to an
// operation; ok is false for what is not a collective (send, recv, ...).
func torchOp(name string) (collective.Op, bool) {
	n := strings.ToLower(name)
	n = strings.TrimPrefix(n, "c10d::")
	n = strings.TrimPrefix(n, "gloo:")
	n = strings.TrimPrefix(n, "nccl:")
	n = strings.TrimRight(n, "_")
	n = strings.TrimLeft(n, "_")
	for _, s := range []string{"_coalesced", "_into_tensor", "_tensor", "_base"} {
		n = strings.ReplaceAll(n, s, "")
	}
	switch strings.ReplaceAll(n, "_", "") {
	case "allreduce":
		return collective.AllReduce, true
	case "allgather":
		return collective.AllGather, true
	case "reducescatter":
		return collective.ReduceScatter, true
	case "broadcast":
		return collective.Broadcast, true
	case "reduce":
		return collective.Reduce, true
	case "gather":
		return collective.Gather, true
	case "scatter":
		return collective.Scatter, true
	case "alltoall", "alltoallv":
		return collective.AllToAll, true
	case "barrier", "monitoredbarrier":
		return collective.Barrier, true
	}
	return 0, false
}

// c10dInput is the argument index of a c10d operator's input tensors
// (its output comes first in the _base_ and list forms).
func c10dInput(name string) int {
	switch {
	case strings.Contains(name, "allgather"), strings.Contains(name, "reduce_scatter"), strings.Contains(name, "alltoall"), strings.Contains(name, "gather_"), strings.Contains(name, "scatter_"):
		return 1
	}
	return 0
}

// torchTrace gathers the events of a profile.
type torchTrace struct {
	name                 string
	steps                []span // ProfilerStep#N
	stepNums             []int
	autograd, optimizers []span
	colls, c10d          []torchColl
	annotations          map[collective.Op][]string // the backend's dtype per launch
	nEvents              int64
	legacy               bool    // a bare list of events: the legacy profiler's
	first                float64 // the earliest complete event
	haveFirst            bool
	worldSize            int
	p2p, other           int64
}

// ReadTorchProfile reads a torch.profiler Chrome trace (see above).
func ReadTorchProfile(data []byte, name string) (*workload.Trace, error) {
	if err := strictjson.CheckDuplicates(data); err != nil {
		return nil, strictjson.Wrap(err, data, "profile "+name)
	}
	tt := &torchTrace{name: name, annotations: map[collective.Op][]string{}}
	if err := tt.decode(data); err != nil {
		return nil, err
	}
	return tt.trace()
}

func (tt *torchTrace) decode(data []byte) error {
	where := "profile " + tt.name
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return profErr(err, data, tt.name)
	}
	if tok == json.Delim('[') {
		tt.legacy = true
		return tt.events(dec, data)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%s: not a Chrome trace (want an object with traceEvents, or a list of events)", where)
	}
	found := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return profErr(err, data, tt.name)
		}
		switch k {
		case "traceEvents":
			if t, err := dec.Token(); err != nil || t != json.Delim('[') {
				return fmt.Errorf("%s: traceEvents must be a list", where)
			}
			if err := tt.events(dec, data); err != nil {
				return err
			}
			found = true
		case "distributedInfo":
			var di struct {
				WorldSize int `json:"world_size"`
			}
			if err := dec.Decode(&di); err != nil {
				return profErr(fmt.Errorf("distributedInfo: %w", err), data, tt.name)
			}
			tt.worldSize = di.WorldSize
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return profErr(err, data, tt.name)
			}
		}
	}
	if !found {
		return fmt.Errorf("%s: no traceEvents", where)
	}
	return nil
}

// events reads the list of events after its '['.
func (tt *torchTrace) events(dec *json.Decoder, data []byte) error {
	where := "profile " + tt.name
	for i := 0; dec.More(); i++ {
		var e torchEvent
		at := dec.InputOffset()
		if err := dec.Decode(&e); err != nil {
			return profErr(fmt.Errorf("traceEvents[%d]: %w", i, err), data, tt.name)
		}
		tt.nEvents++
		if tt.nEvents > 1<<26 {
			return fmt.Errorf("%s: more than %d events", where, 1<<26)
		}
		if e.Ph != "X" {
			continue
		}
		if !(e.Ts >= 0) || !(e.Dur >= 0) || math.IsInf(e.Ts, 0) || e.Ts > 1e15 || e.Dur > 1e12 {
			return fmt.Errorf("%s:%s: traceEvents[%d] (%s): ts %v and dur %v must be finite, >= 0 and in range", where, strictjson.LineCol(data, at), i, e.Name, e.Ts, e.Dur)
		}
		if !tt.haveFirst || e.Ts < tt.first {
			tt.first, tt.haveFirst = e.Ts, true
		}
		if err := tt.keep(e); err != nil {
			return fmt.Errorf("%s:%s: traceEvents[%d] (%s at ts %v): %w", where, strictjson.LineCol(data, at), i, e.Name, e.Ts, err)
		}
	}
	if _, err := dec.Token(); err != nil { // ]
		return profErr(err, data, tt.name)
	}
	return nil
}

// profErr names the file in a decoding error (an early end of file too).
func profErr(err error, data []byte, name string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("profile %s: unexpected end of file", name)
	}
	return strictjson.Wrap(err, data, "profile "+name)
}

// torchArgs are the args the reader uses.
type torchArgs struct {
	Collective string            `json:"Collective name"`
	InNelems   json.Number       `json:"In msg nelems"`
	Dtype      string            `json:"dtype"`
	GroupSize  json.Number       `json:"Group size"`
	Dims       []json.RawMessage `json:"Input Dims"`
	Types      []string          `json:"Input type"`
}

// keep files one complete event.
func (tt *torchTrace) keep(e torchEvent) error {
	if len(e.Args) == 0 || string(e.Args) == "null" {
		e.Args = json.RawMessage("{}")
	}
	s := span{e.Ts, e.Ts + e.Dur}
	switch {
	case strings.HasPrefix(e.Name, "ProfilerStep#"):
		n, err := strconv.Atoi(strings.TrimPrefix(e.Name, "ProfilerStep#"))
		if err != nil || n < 0 {
			return fmt.Errorf("step number: %v", e.Name)
		}
		tt.steps, tt.stepNums = append(tt.steps, s), append(tt.stepNums, n)
	case strings.HasPrefix(e.Name, "autograd::engine::evaluate_function"):
		tt.autograd = append(tt.autograd, s)
	case strings.HasPrefix(e.Name, "Optimizer.step#"):
		tt.optimizers = append(tt.optimizers, s)
	case e.Name == "record_param_comms" && e.Cat == "cpu_op":
		var a torchArgs
		if err := json.Unmarshal(e.Args, &a); err != nil {
			return err
		}
		op, ok := torchOp(a.Collective)
		if !ok {
			tt.p2p++
			return nil
		}
		c := torchColl{op: op, ts: e.Ts, dur: e.Dur, dtype: a.Dtype, name: a.Collective}
		var err error
		if c.elems, err = a.InNelems.Int64(); (err != nil || c.elems < 0) && op != collective.Barrier {
			return fmt.Errorf("record_param_comms' In msg nelems %q is not a count", a.InNelems)
		}
		if g, err := a.GroupSize.Int64(); err == nil {
			c.group = int(g)
		}
		tt.colls = append(tt.colls, c)
	case strings.HasPrefix(e.Name, "c10d::"):
		op, ok := torchOp(e.Name)
		if !ok {
			tt.other++
			return nil
		}
		var a torchArgs
		if err := json.Unmarshal(e.Args, &a); err != nil {
			return err
		}
		c := torchColl{op: op, ts: e.Ts, dur: e.Dur, name: e.Name, elems: -1}
		if in := c10dInput(e.Name); in < len(a.Dims) {
			n, ok := countElems(a.Dims[in])
			if !ok {
				return fmt.Errorf("its Input Dims %s are not a tensor's or a list of tensors' dimensions", a.Dims[in])
			}
			c.elems = n
			if in < len(a.Types) {
				if _, known := dtypeBytes[strings.ToLower(a.Types[in])]; known {
					c.dtype = a.Types[in]
				}
			}
		}
		tt.c10d = append(tt.c10d, c)
	case strings.HasPrefix(e.Name, "gloo:"), strings.HasPrefix(e.Name, "nccl:"):
		op, ok := torchOp(e.Name)
		if !ok {
			return nil
		}
		var a torchArgs
		if json.Unmarshal(e.Args, &a) == nil && len(a.Types) > 0 {
			tt.annotations[op] = append(tt.annotations[op], a.Types[0])
		} else {
			tt.annotations[op] = append(tt.annotations[op], "")
		}
	}
	return nil
}

// countElems sums the elements of a tensor's dimensions ([2, 3]) or of a
// nested list of them ([[2, 3], [4]]).
func countElems(raw json.RawMessage) (int64, bool) {
	var dims []int64
	if json.Unmarshal(raw, &dims) == nil {
		n := int64(1)
		for _, d := range dims {
			if d < 0 || (d > 0 && n > (1<<50)/d) {
				return 0, false
			}
			n *= d
		}
		return n, true
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return 0, false
	}
	var sum int64
	for _, r := range list {
		n, ok := countElems(r)
		if !ok || sum+n > 1<<50 {
			return 0, false
		}
		sum += n
	}
	return sum, true
}

// trace turns the gathered events into the bucket trace.
func (tt *torchTrace) trace() (*workload.Trace, error) {
	where := "profile " + tt.name
	colls, src := tt.colls, "record_param_comms"
	prov := &workload.Provenance{Format: "torch.profiler Chrome trace", Files: []string{tt.name}}
	prov.Read = append(prov.Read, workload.Tally{What: "trace events", N: tt.nEvents})
	if len(colls) == 0 {
		if err := tt.typeC10d(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		colls, src = tt.c10d, "c10d:: dispatcher events"
	} else if len(tt.c10d) > 0 {
		prov.Ignored = append(prov.Ignored, workload.Tally{What: "c10d:: dispatcher events", N: int64(len(tt.c10d)), Why: "the record_param_comms events describe the same collectives"})
	}
	if len(colls) == 0 {
		return nil, fmt.Errorf("%s: no collective events (record_param_comms or c10d::): profile a distributed job's steps", where)
	}
	prov.Read = append(prov.Read, workload.Tally{What: "collectives (" + src + ")", N: int64(len(colls))})
	if tt.p2p > 0 {
		prov.Ignored = append(prov.Ignored, workload.Tally{What: "record_param_comms events that are not collectives (send, recv, ...)", N: tt.p2p, Why: "not priced: point-to-point messages"})
	}
	workers, err := tt.workers(colls)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	steps, nums := tt.stepSpans()
	sort.SliceStable(colls, func(a, b int) bool { return colls[a].ts < colls[b].ts })
	base := workload.Trace{Model: tt.name, BytesPerElement: 4, Workers: workers}
	var out []*workload.Trace
	var early, outside, noBwd int64
	ci := 0
	for si, st := range steps {
		for ci < len(colls) && colls[ci].ts < st.start {
			outside++
			ci++
		}
		t := base
		t.Step = nums[si]
		bwd, ok := tt.backward(st)
		if !ok {
			noBwd++
			bwd = span{st.start, st.start}
		}
		t.ForwardPS, t.OptimizerPS = usPS(bwd.start-st.start), usPS(tt.sumIn(tt.optimizers, st))
		var last float64
		for ; ci < len(colls) && colls[ci].ts < st.end; ci++ {
			c := colls[ci]
			ready := c.ts - bwd.start
			if ready < 0 {
				early++
				ready = 0
			}
			last = max(last, ready)
			bytes, err := collBytes(c)
			if err != nil {
				return nil, fmt.Errorf("%s: %s at ts %v: %w", where, c.name, c.ts, err)
			}
			if err := t.AddCollective(c.op, bytes, usPS(ready), usPS(c.dur)); err != nil {
				return nil, fmt.Errorf("%s: %s at ts %v: %w", where, c.name, c.ts, err)
			}
		}
		t.BackwardPS = usPS(max(bwd.end-bwd.start, last))
		if len(t.Buckets) == 0 {
			continue
		}
		out = append(out, &t)
	}
	outside += int64(len(colls) - ci)
	tally := func(what string, n int64, why string) {
		if n > 0 {
			prov.Ignored = append(prov.Ignored, workload.Tally{What: what, N: n, Why: why})
		}
	}
	tally("collectives launched before their step's backward", early, "ready at backward's start (the what-if communicates from there)")
	tally("collectives outside the profiled steps", outside, "not priced: no step holds them")
	tally("steps without autograd events", noBwd, "backward taken as empty, at the step's start")
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no step holds a collective", where)
	}
	prov.Read = append(prov.Read, workload.Tally{What: "steps", N: int64(len(out))})
	first := *out[0]
	if len(out) > 1 {
		first.Steps = out
	}
	first.Source = prov
	return &first, nil
}

// typeC10d gives each c10d:: collective its element type from the
// backend's annotations, matched in launch order per operation.
func (tt *torchTrace) typeC10d() error {
	sort.SliceStable(tt.c10d, func(a, b int) bool { return tt.c10d[a].ts < tt.c10d[b].ts })
	next := map[collective.Op]int{}
	for i := range tt.c10d {
		c := &tt.c10d[i]
		if c.elems < 0 && tt.legacy {
			return fmt.Errorf("%s at ts %v carries no Input Dims: the trace is a bare list of events, as the legacy profiler of a torch built without Kineto writes it (torch.autograd.kineto_available() is False, as in Debian's python3-torch), and that profiler exports no shapes: profile with a Kineto build of PyTorch (pip install torch) and record_shapes=True", c.name, c.ts)
		}
		if c.elems < 0 {
			return fmt.Errorf("%s at ts %v carries no Input Dims: profile with record_shapes=True (torch.profiler.profile(..., record_shapes=True))", c.name, c.ts)
		}
		ann := tt.annotations[c.op]
		k := next[c.op]
		next[c.op]++
		if c.dtype != "" || c.op == collective.Barrier {
			continue
		}
		if k < len(ann) && ann[k] != "" {
			c.dtype = ann[k]
			continue
		}
		return fmt.Errorf("%s at ts %v: no element type (neither the event nor a backend annotation %s #%d carries one)", c.name, c.ts, c.op, k)
	}
	return nil
}

// collBytes is S of the collective: its elements times the element size.
func collBytes(c torchColl) (int64, error) {
	if c.op == collective.Barrier {
		return 0, nil
	}
	size, ok := dtypeBytes[strings.ToLower(c.dtype)]
	if !ok {
		return 0, fmt.Errorf("unknown element type %q", c.dtype)
	}
	if c.op.Aggregates() && !isFloat32(c.dtype) {
		return 0, fmt.Errorf("a %v of %s elements: the what-if prices FP32 gradients (float)", c.op, c.dtype)
	}
	if c.elems > (1<<50)/size {
		return 0, fmt.Errorf("%d elements of %d bytes: above 2^50 bytes", c.elems, size)
	}
	return c.elems * size, nil
}

// workers is the collectives' group size (one for all), or the world size.
func (tt *torchTrace) workers(colls []torchColl) (int, error) {
	w := 0
	for _, c := range colls {
		if c.group == 0 {
			continue
		}
		if w != 0 && c.group != w {
			return 0, fmt.Errorf("collectives in groups of %d and %d ranks: the what-if prices one group of workers", w, c.group)
		}
		w = c.group
	}
	if w == 0 {
		w = tt.worldSize
	}
	if w < 0 || w > 1<<20 {
		return 0, fmt.Errorf("group of %d ranks", w)
	}
	return w, nil
}

// stepSpans returns the steps: ProfilerStep#N, else up to the end of each
// optimizer step, else the whole trace.
func (tt *torchTrace) stepSpans() ([]span, []int) {
	if len(tt.steps) > 0 {
		idx := make([]int, len(tt.steps))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return tt.steps[idx[a]].start < tt.steps[idx[b]].start })
		var ss []span
		var ns []int
		for _, i := range idx {
			ss, ns = append(ss, tt.steps[i]), append(ns, tt.stepNums[i])
		}
		return ss, ns
	}
	if len(tt.optimizers) > 0 {
		opt := append([]span(nil), tt.optimizers...)
		sort.Slice(opt, func(a, b int) bool { return opt[a].start < opt[b].start })
		var ss []span
		var ns []int
		from := tt.first
		for i, o := range opt {
			ss, ns = append(ss, span{from, o.end}), append(ns, i+1)
			from = o.end
		}
		return ss, ns
	}
	return []span{{tt.first, math.Inf(1)}}, []int{1}
}

// backward is the span of the step's autograd events.
func (tt *torchTrace) backward(st span) (span, bool) {
	b := span{math.Inf(1), math.Inf(-1)}
	for _, a := range tt.autograd {
		if a.start >= st.start && a.start < st.end {
			b.start, b.end = min(b.start, a.start), max(b.end, a.end)
		}
	}
	if math.IsInf(b.start, 1) {
		return span{}, false
	}
	return b, true
}

// sumIn sums the durations of spans starting in st.
func (tt *torchTrace) sumIn(ss []span, st span) float64 {
	var t float64
	for _, s := range ss {
		if s.start >= st.start && s.start < st.end {
			t += s.end - s.start
		}
	}
	return t
}

func usPS(us float64) int64 { return int64(math.Round(us * 1e6)) }
