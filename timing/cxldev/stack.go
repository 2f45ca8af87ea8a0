package cxldev

import (
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Stack is one CXL controller stack: a request queue, the fixed-latency
// memory access (paper Sec. 4: 200 ns, unlimited concurrency), the
// aggregation pipeline on the read-response path, and the stack's link
// bandwidth gate. Identity reads bypass the pipeline; low-bit reads go
// through it; both then cross the gate in controller order.
type Stack struct {
	name       string
	memLatency sim.Time
	Pipe       *Pipeline
	Gate       *Gate
	lastArrive sim.Time
	// Reads counts lines the stack served.
	Reads int64
}

// StackBuilder builds controller stacks. Start from MakeStackBuilder.
type StackBuilder struct {
	memLatency sim.Time
	pipe       PipelineBuilder
	gate       GateBuilder
}

// MakeStackBuilder returns the paper's defaults: 200 ns memory access,
// 5-stage 2 GHz pipeline, 128 GiB/s link.
func MakeStackBuilder() StackBuilder {
	return StackBuilder{memLatency: 200 * sim.Nanosecond, pipe: MakePipelineBuilder(), gate: MakeGateBuilder()}
}

// WithMemLatency returns a copy with the given fixed access latency.
func (b StackBuilder) WithMemLatency(t sim.Time) StackBuilder { b.memLatency = t; return b }

// WithPipeline returns a copy building its datapath with p.
func (b StackBuilder) WithPipeline(p PipelineBuilder) StackBuilder { b.pipe = p; return b }

// WithGate returns a copy building its gate with g.
func (b StackBuilder) WithGate(g GateBuilder) StackBuilder { b.gate = g; return b }

// Build returns an idle stack whose parts are named name.Pipe and
// name.Link (the gate).
func (b StackBuilder) Build(name string) *Stack {
	if b.memLatency < 0 {
		panic(fmt.Sprintf("cxldev: stack %s: memory latency %v", name, b.memLatency))
	}
	return &Stack{name: sim.MustName(name), memLatency: b.memLatency,
		Pipe: b.pipe.Build(name + ".Pipe"), Gate: b.gate.Build(name + ".Link")}
}

// Name returns the component's hierarchical name.
func (s *Stack) Name() string { return s.name }

// Accept serves a read that reaches the controller at arrive in
// controller mode m and returns when its response has crossed the link;
// the read crosses the aggregation datapath when m does
// (cxl.Mode.LowBit). Arrivals must come in nondecreasing time order (the
// model guarantees it; a violation panics).
func (s *Stack) Accept(arrive sim.Time, m cxl.Mode) sim.Time {
	if arrive < s.lastArrive {
		panic("cxldev: controller arrivals out of time order")
	}
	s.lastArrive = arrive
	s.Reads++
	t := arrive + s.memLatency
	if m.LowBit() {
		t = s.Pipe.Accept(t)
	}
	return s.Gate.Accept(t)
}
