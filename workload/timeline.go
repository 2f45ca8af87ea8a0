package workload

import (
	"fmt"
	"math"
)

// Picosecond is the time unit of timelines and traces.
const (
	Picosecond  int64 = 1
	Nanosecond        = 1000 * Picosecond
	Microsecond       = 1000 * Nanosecond
	Millisecond       = 1000 * Microsecond
	Second            = 1000 * Millisecond
)

// Accelerator is the compute device that runs forward and backward.
type Accelerator struct {
	Name string `json:"name"`
	// PeakFLOPS is the dense peak in FLOP/s.
	PeakFLOPS float64 `json:"peak_flops"`
	// Efficiency is the achieved fraction of the peak, in (0, 1].
	Efficiency float64 `json:"efficiency"`
}

// A100 is the default accelerator: 312 TFLOP/s dense BF16 peak (NVIDIA A100
// data sheet) at 45% achieved, the middle of the 40-50% model-FLOP
// utilisation reported for large transformer training.
var A100 = Accelerator{Name: "A100-bf16", PeakFLOPS: 312e12, Efficiency: 0.45}

// Rate returns the achieved FLOP/s.
func (a Accelerator) Rate() float64 { return a.PeakFLOPS * a.Efficiency }

// Validate checks the peak and the fraction.
func (a Accelerator) Validate() error {
	if !(a.PeakFLOPS > 0) || math.IsInf(a.PeakFLOPS, 0) {
		return fmt.Errorf("accelerator %s: peak %v FLOP/s must be finite and > 0", a.Name, a.PeakFLOPS)
	}
	if !(a.Efficiency > 0 && a.Efficiency <= 1) {
		return fmt.Errorf("accelerator %s: efficiency %v must be in (0, 1]", a.Name, a.Efficiency)
	}
	return nil
}

// Schedule is how one training step runs on one worker.
type Schedule struct {
	Accel Accelerator
	// Batch is samples per worker; 0 takes the profile's default.
	Batch int
	// BackwardFactor is backward FLOPs / forward FLOPs; 0 means 2.
	BackwardFactor float64
}

// LayerSpan is one layer's backward interval and the gradient bytes it
// produces uniformly over it.
type LayerSpan struct {
	Layer string `json:"layer"`
	// Group is the layer's group (backbone, head, ...).
	Group   string `json:"group,omitempty"`
	StartPS int64  `json:"start_ps"`
	EndPS   int64  `json:"end_ps"`
	// Elements is the number of gradient elements produced.
	Elements int64 `json:"elements"`
	// Tensors are the layer's tensors in backward (reverse) order.
	Tensors []Tensor `json:"-"`
}

// Timeline is one step of one worker: forward, then backward layer by layer
// in reverse order. Backward times count from the start of backward.
type Timeline struct {
	Model      string      `json:"model"`
	Batch      int         `json:"batch"`
	ForwardPS  int64       `json:"forward_ps"`
	BackwardPS int64       `json:"backward_ps"`
	Spans      []LayerSpan `json:"spans"`
}

// MaxStepSeconds bounds one step's compute time: timelines count
// picoseconds in int64 (about 106 days), and the replay adds communication
// on top, so a step is kept well inside that range.
const MaxStepSeconds = 1e6

// Timeline computes the step timeline of p under s.
func (p *Profile) Timeline(s Schedule) (*Timeline, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.Accel.Validate(); err != nil {
		return nil, err
	}
	batch := s.Batch
	if batch == 0 {
		batch = p.Batch
	}
	if batch < 1 {
		return nil, fmt.Errorf("%s: batch %d must be >= 1", p.Name, batch)
	}
	bf := s.BackwardFactor
	if bf == 0 {
		bf = 2
	}
	if !(bf > 0) || math.IsInf(bf, 0) {
		return nil, fmt.Errorf("%s: backward factor %v must be finite and > 0", p.Name, bf)
	}
	rate := s.Accel.Rate()
	var total float64 // the step's compute seconds, forward and backward
	for _, l := range p.Layers {
		total += l.FwdFLOPs * (1 + bf) * float64(batch) / rate
	}
	if !(total <= MaxStepSeconds) {
		return nil, fmt.Errorf("%s: a step of %.3g s at batch %d is too long for the picosecond timeline (at most %g s)", p.Name, total, batch, float64(MaxStepSeconds))
	}
	toPS := func(flops float64) int64 { return int64(math.Round(flops * float64(batch) / rate * 1e12)) }
	tl := &Timeline{Model: p.Name, Batch: batch, ForwardPS: toPS(p.FwdFLOPs())}
	var t int64
	for i := len(p.Layers) - 1; i >= 0; i-- {
		l := p.Layers[i]
		d := toPS(l.FwdFLOPs * bf)
		ts := make([]Tensor, len(l.Tensors))
		for j := range l.Tensors {
			ts[j] = l.Tensors[len(l.Tensors)-1-j]
			ts[j].Name = join(l.Name, ts[j].Name)
		}
		tl.Spans = append(tl.Spans, LayerSpan{Layer: l.Name, Group: l.Group, StartPS: t, EndPS: t + d, Elements: l.Params(), Tensors: ts})
		t += d
	}
	tl.BackwardPS = t
	return tl, nil
}
