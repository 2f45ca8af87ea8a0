package cxldev

import (
	"fmt"

	"github.com/neuronfabric/nfabric/timing/sim"
)

// Pipeline is the controller's k-stage low-bit aggregation datapath (paper
// Sec. 3: five stages at 2 GHz, 512 bits = one line per cycle). A line
// entering at t leaves at t + stages*cycle; a new line may enter every
// initiation interval (one cycle by default), so the datapath sustains one
// 64-byte line per cycle: 128 GB/s at 2 GHz, slightly below the link's
// 128 GiB/s (137.4 GB/s). Lines may enter between clock edges (no
// clock-edge alignment); see the package doc.
type Pipeline struct {
	name     string
	latency  sim.Time
	interval sim.Time
	free     sim.Time
	// Lines counts lines through the datapath; Wait sums their queueing in
	// front of it.
	Lines int64
	Wait  sim.Time
}

// PipelineBuilder builds aggregation pipelines. Start from
// MakePipelineBuilder.
type PipelineBuilder struct {
	stages, initCycles int
	cycle              sim.Time
}

// MakePipelineBuilder returns the paper's 5 stages at 2 GHz (500 ps cycle),
// one line per cycle.
func MakePipelineBuilder() PipelineBuilder {
	return PipelineBuilder{stages: 5, initCycles: 1, cycle: 500 * sim.Picosecond}
}

// WithStages returns a copy with k >= 0 stages (0 is a wire).
func (b PipelineBuilder) WithStages(k int) PipelineBuilder { b.stages = k; return b }

// WithCycle returns a copy with the given clock period.
func (b PipelineBuilder) WithCycle(c sim.Time) PipelineBuilder { b.cycle = c; return b }

// WithInitiationCycles returns a copy accepting a new line every n cycles
// (capped at the number of stages).
func (b PipelineBuilder) WithInitiationCycles(n int) PipelineBuilder { b.initCycles = n; return b }

// Build returns an empty pipeline.
func (b PipelineBuilder) Build(name string) *Pipeline {
	if b.stages < 0 || b.initCycles < 0 || b.cycle <= 0 {
		panic(fmt.Sprintf("cxldev: pipeline %s: stages %d, initiation %d, cycle %v", name, b.stages, b.initCycles, b.cycle))
	}
	// A line never blocks the entry for longer than it takes to cross the
	// whole pipeline, so the initiation interval is capped at the depth
	// (0 stages is a plain wire).
	return &Pipeline{name: sim.MustName(name), latency: sim.Time(b.stages) * b.cycle, interval: sim.Time(min(b.initCycles, b.stages)) * b.cycle}
}

// Name returns the component's hierarchical name.
func (p *Pipeline) Name() string { return p.name }

// Latency returns stages*cycle, the pipeline's own time per line.
func (p *Pipeline) Latency() sim.Time { return p.latency }

// Accept enters a line that reaches the datapath at arrive and returns when
// it leaves the last stage. Lines enter in the order Accept is called.
func (p *Pipeline) Accept(arrive sim.Time) sim.Time {
	start := arrive
	if p.free > start {
		p.Wait += p.free - start
		start = p.free
	}
	p.free = start + p.interval
	p.Lines++
	return start + p.latency
}
