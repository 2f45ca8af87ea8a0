package payload

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/usage"
)

// SpecOptions name a payload's spec as the payload commands take it, by
// name. The rules that turn names into a lowbit.Spec live here, beside the
// file format they describe: the layout a format defaults to and the margin
// gate that can never pass. Every refusal is a usage error naming the
// option.
type SpecOptions struct {
	// Workers is W; 0 takes it from the input.
	Workers int
	// Format is the payload format's name (lowbit.ParseFormat); for
	// aggregate, "" means the file's.
	Format string
	// Layout is the layout's name; "" is DefaultLayout of the format (for
	// aggregate, the file's).
	Layout string
	// Gate is the G-Ternary gate (lowbit.ParseGate); "" is the paper's
	// 2-of-3 pattern, and for aggregate a G-Ternary file's own gate.
	Gate string
}

// DefaultLayout is the layout a format's payload takes when none is asked
// for: the paper's element-major packet for the vote formats, worker-major
// (their only layout) for the integer-sum formats.
func DefaultLayout(f lowbit.Format) lowbit.Layout {
	if f.Sum() {
		return lowbit.WorkerMajor
	}
	return lowbit.ElementMajor
}

// CheckWorkers refuses a worker count no payload can have before any input
// is read (0 means "from the input").
func (o SpecOptions) CheckWorkers() error {
	if o.Workers < 0 || o.Workers > lowbit.MaxWorkers {
		return usage.Errorf("--workers %d out of range [1, %d] (or leave it out to take it from the input)", o.Workers, lowbit.MaxWorkers)
	}
	return nil
}

// Spec is the spec of a payload of the given workers under o.
func (o SpecOptions) Spec(workers int) (lowbit.Spec, error) {
	var s lowbit.Spec
	var err error
	if s.Format, err = lowbit.ParseFormat(o.Format); err != nil {
		return s, usage.Errorf("--format: %v", err)
	}
	if s.Format == lowbit.FP32 {
		return s, usage.Errorf("--format: fp32 has no packed payload")
	}
	s.Layout = DefaultLayout(s.Format)
	if o.Layout != "" {
		if s.Layout, err = lowbit.ParseLayout(o.Layout); err != nil {
			return s, usage.Errorf("--layout: %v", err)
		}
	}
	if s.Format == lowbit.Ternary {
		if s.Gate, err = parseGate(o.Gate); err != nil {
			return s, err
		}
	}
	s.Workers = workers
	if err := s.Validate(); err != nil {
		return s, usage.Wrap(err)
	}
	return s, CheckMargin(s)
}

func parseGate(name string) (lowbit.Gate, error) {
	if name == "" {
		return lowbit.PaperGate, nil
	}
	g, err := lowbit.ParseGate(name)
	if err != nil {
		return g, usage.Errorf("--gate: %v", err)
	}
	return g, nil
}

// CheckMargin refuses a margin gate that can never pass: the vote margin
// |2c - W| is at most W, so a threshold above W zeroes every element.
func CheckMargin(s lowbit.Spec) error {
	if s.Format == lowbit.Ternary && s.Gate.Kind == lowbit.GateMargin && s.Gate.Threshold > s.Workers {
		return usage.Errorf("--gate margin:%d exceeds W = %d: the margin |2c - W| is at most W, so every value would be zero", s.Gate.Threshold, s.Workers)
	}
	return nil
}

// Match checks the options given against the header of the file called
// name: an option that disagrees with the file is a usage error, not
// ignored.
func (o SpecOptions) Match(name string, f *File) error {
	if o.Workers != 0 && o.Workers != f.Spec.Workers {
		return usage.Errorf("--workers %d, but %s holds %d workers", o.Workers, name, f.Spec.Workers)
	}
	if o.Format != "" {
		fm, err := lowbit.ParseFormat(o.Format)
		if err != nil {
			return usage.Errorf("--format: %v", err)
		}
		if fm != f.Spec.Format {
			return usage.Errorf("--format %v, but %s is %v (--mode chooses what to compute)", fm, name, f.Spec.Format)
		}
	}
	if o.Layout != "" {
		l, err := lowbit.ParseLayout(o.Layout)
		if err != nil {
			return usage.Errorf("--layout: %v", err)
		}
		if l != f.Spec.Layout {
			return usage.Errorf("--layout %v, but %s is %v", l, name, f.Spec.Layout)
		}
	}
	return nil
}

// EncodeOptions are encode's parameters beyond the spec.
type EncodeOptions struct {
	// Tau is the worker gate's threshold: a worker votes on an element
	// when |g| > Tau. TauSet says it was given, which only the worker gate
	// allows.
	Tau    float64
	TauSet bool
	// Base is the flattened index of element 0 (the pattern gate uses it).
	Base int64
}

// Check refuses a Tau or Base that an encode under s cannot use.
func (o EncodeOptions) Check(s lowbit.Spec) error {
	if math.IsNaN(o.Tau) || math.IsInf(o.Tau, 0) || o.Tau < 0 {
		return usage.Errorf("--tau %v must be finite and non-negative", o.Tau)
	}
	if o.TauSet && !s.GateBits() {
		return usage.Errorf("--tau applies only to --format g-ternary --gate worker")
	}
	if o.Base < 0 {
		return usage.Errorf("--base %d must be non-negative", o.Base)
	}
	return nil
}

// Aggregate modes: what Aggregate returns for each element.
const (
	ModeCounts  = "counts"  // the sign count c (vote files; their default)
	ModeBinary  = "binary"  // the G-Binary update u = sgn(2c - W)
	ModeTernary = "ternary" // the G-Ternary value m*u under the gate
	ModeSum     = "sum"     // the controller's int16 lane sum (integer-sum files; their default)
	ModeMean    = "mean"    // the workers' mean decoded from the lane sum
)

// CheckMode refuses an aggregate mode name that no file has, before any
// input is read ("" is the file's default).
func CheckMode(mode string) error {
	switch mode {
	case "", ModeCounts, ModeBinary, ModeTernary, ModeSum, ModeMean:
		return nil
	}
	return usage.Errorf("--mode %q: want counts, binary or ternary (g-binary, g-ternary files), sum or mean (int8, bfp8 files)", mode)
}

// Aggregate reduces the file called name under mode. gate is the ternary
// vote's gate; "" takes a G-Ternary file's own gate, else the paper's.
// A mode the file's format does not have is a usage error.
func (f *File) Aggregate(name, mode, gate string) (Values, error) {
	if f.Spec.Format.Sum() {
		return f.sumAggregate(name, mode)
	}
	switch mode {
	case "", ModeCounts:
		return f.CountValues(), nil
	case ModeSum, ModeMean:
		return Values{}, usage.Errorf("--mode %s, but %s is %v: want counts, binary or ternary", mode, name, f.Spec.Format)
	}
	s := lowbit.Spec{Workers: f.Spec.Workers, Layout: f.Spec.Layout, Format: lowbit.Binary}
	if mode == ModeTernary {
		s.Format = lowbit.Ternary
		if gate == "" && f.Spec.Format == lowbit.Ternary {
			gate = f.Spec.Gate.String()
		}
		var err error
		if s.Gate, err = parseGate(gate); err != nil {
			return Values{}, err
		}
		if err := CheckMargin(s); err != nil {
			return Values{}, err
		}
	}
	v, err := f.VoteValues(s)
	if err != nil {
		return Values{}, fmt.Errorf("aggregate %s: %w", name, err)
	}
	return v, nil
}

func (f *File) sumAggregate(name, mode string) (Values, error) {
	var v Values
	var err error
	switch mode {
	case "", ModeSum:
		v, err = f.SumValues()
	case ModeMean:
		v, err = f.MeanValues()
	default:
		return Values{}, usage.Errorf("--mode %s, but %s is %v: want sum or mean", mode, name, f.Spec.Format)
	}
	if err != nil {
		return Values{}, fmt.Errorf("aggregate %s: %w", name, err)
	}
	return v, nil
}

// Describe lays out the header and traffic of the file called name: what
// `nfabric payload inspect` prints.
func (f *File) Describe(name string) *report.Result {
	t := report.Table{Name: "payload", Title: "payload " + name, Columns: []string{"field", "value"}}
	t.AddRow("layout", f.Spec.Layout.String())
	t.AddRow("format", f.Spec.Format.String())
	if f.Spec.Format == lowbit.Ternary {
		t.AddRow("gate", f.Spec.Gate.String())
	}
	if f.Spec.Format.Scaled() {
		t.AddRow("scale", f.Scale)
	}
	t.AddRow("workers", f.Spec.Workers)
	t.AddRow("elements", f.Elements)
	t.AddRow("base", f.Base)
	t.AddRow("file bytes", f.FileBytes())
	for _, a := range []lowbit.Accounting{lowbit.PaperAccounting, lowbit.PlaneAccounting} {
		tr := lowbit.Account([]lowbit.Group{{Name: "all", Elements: f.Elements, Format: f.Spec.Format, Gate: f.Spec.Gate}}, a)
		t.AddRow("traffic vs FP32 ("+a.String()+" accounting)", tr.Ratio)
	}
	return &report.Result{Block: "payload", Title: "payload file", Tables: []report.Table{t}}
}
