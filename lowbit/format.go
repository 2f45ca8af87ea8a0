package lowbit

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LineBytes is the size of a CXL cache line: 64 bytes (512 bits).
const LineBytes = 64

// PacketElements is how many elements one element-major packet line holds.
const PacketElements = LineBytes

// PlaneElements is how many elements one worker-major bit-plane line holds.
const PlaneElements = LineBytes * 8

// MaxPacketWorkers is the most workers an element-major packet can carry.
const MaxPacketWorkers = 8

// MaxWorkers is the most workers the worker-major layout supports.
const MaxWorkers = 1024

// Format is a gradient payload format.
type Format uint8

const (
	// FP32 is the full-precision path: 32 bits per element, reduced by the
	// software collective.
	FP32 Format = iota
	// Binary is G-Binary: one sign bit per element and worker; the
	// aggregate is the majority sign.
	Binary
	// Ternary is G-Ternary: the G-Binary aggregate times a zero gate.
	Ternary
	// Int8 goes beyond the paper: 8-bit fixed point with one scale per
	// bucket that the workers agree on before encoding (as SwitchML
	// does); the controller sums the integers (SumInt8).
	Int8
	// BFP8 goes beyond the paper: block floating point, one exponent per
	// worker and 64-element block and 8-bit mantissas; the controller
	// aligns the mantissas to the largest exponent and sums (SumBFP8).
	BFP8
	numFormats
)

// formatTraits is the one registry of payload formats: each row is
// everything the rest of the system knows about a format, and every
// package reads it through the methods below (the controller mode that
// aggregates a format is cxl.Aggregate(f), its RTL datapath
// hw.DatapathOf(f), its training rule train.FormatRule(f)). Adding a
// format is one row here plus its kernels; the list of files it takes is
// in the package documentation.
var formatTraits = [numFormats]struct {
	name    string
	aliases []string
	// label is how reports and sentences name the format: the paper's
	// spelling for its three, upper case for the extensions.
	label string
	// vote: the aggregate is a sign vote over bit-planes (the paper's
	// G-Binary and G-Ternary), computed by the vote kernels under a Spec;
	// sum: an integer lane sum of fixed-point codes, computed by sum.
	vote bool
	sum  *sumKernels
	// bits per element and worker, whatever the accounting; 0 means the
	// accounting decides (G-Ternary, see BitsPerElement).
	bits float64
	// paper: the paper evaluates it.
	paper bool
}{
	FP32:    {name: "fp32", aliases: []string{"float32"}, label: "FP32", bits: 32, paper: true},
	Binary:  {name: "g-binary", aliases: []string{"gbinary", "binary", "bin"}, label: "G-Binary", vote: true, bits: 1, paper: true},
	Ternary: {name: "g-ternary", aliases: []string{"gternary", "ternary", "ter"}, label: "G-Ternary", vote: true, paper: true},
	Int8:    {name: "int8", aliases: []string{"int-8", "fixed8"}, label: "INT8", sum: &int8Kernels, bits: 8},
	BFP8:    {name: "bfp8", aliases: []string{"bfp", "block-fp8"}, label: "BFP8", sum: &bfp8Kernels, bits: 8 + 8.0/BFPBlock},
}

// NumFormats is the number of formats; Format values are 0 to NumFormats-1.
const NumFormats = int(numFormats)

func (f Format) String() string {
	if f.Valid() {
		return formatTraits[f].name
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Valid reports whether f is one of the formats in the table.
func (f Format) Valid() bool { return f < numFormats }

// Label names f as reports and sentences do: FP32, G-Binary, G-Ternary
// (the paper's spelling), INT8, BFP8.
func (f Format) Label() string {
	if f.Valid() {
		return formatTraits[f].label
	}
	return f.String()
}

// Vote reports whether f is aggregated by the sign-vote kernels (G-Binary,
// G-Ternary).
func (f Format) Vote() bool { return f.Valid() && formatTraits[f].vote }

// Sum reports whether f is aggregated by an integer lane sum (Int8, BFP8):
// its kernels are EncodeCodes, SumCodes and DecodeSums.
func (f Format) Sum() bool { return f.Valid() && formatTraits[f].sum != nil }

// Scaled reports whether f's workers agree on one scale per bucket before
// they encode (Int8), a max-reduce of each worker's largest |g| that
// AgreedScale turns into the scale.
func (f Format) Scaled() bool { return f.Sum() && formatTraits[f].sum.scale != nil }

// AgreedScale returns the scale a Scaled format's workers encode with when
// the largest |g| any of them holds is maxAbs (Int8Scale), and 0 for the
// other formats.
func (f Format) AgreedScale(maxAbs float32) float32 {
	if !f.Scaled() {
		return 0
	}
	return formatTraits[f].sum.scale(maxAbs)
}

// CheckScale returns nil for a scale a payload of f can carry: for a
// Scaled format one its agreement can produce (Int8: CheckInt8Scale), for
// every other format +0 only. It is the one rule payload headers, payloads
// and the encoders apply.
func (f Format) CheckScale(scale float32) error {
	if !f.Scaled() {
		if math.Float32bits(scale) != 0 {
			return fmt.Errorf("format %v has no scale, not %v", f, scale)
		}
		return nil
	}
	return formatTraits[f].sum.checkScale(scale)
}

// BlockExponents reports whether f's workers also write one exponent per
// BFPBlock elements, which the sum aligns to each block's largest (BFP8).
func (f Format) BlockExponents() bool { return f.Sum() && formatTraits[f].sum.blockExps }

// Paper reports whether the paper evaluates f (FP32, G-Binary, G-Ternary);
// the others are extensions and are named as such wherever they appear.
func (f Format) Paper() bool { return f.Valid() && formatTraits[f].paper }

// Formats lists every format in table order (the paper's three first).
func Formats() []Format {
	fs := make([]Format, numFormats)
	for i := range fs {
		fs[i] = Format(i)
	}
	return fs
}

// ParseFormat accepts each format's name or one of its aliases, in any
// case: fp32 (float32), g-binary (binary), g-ternary (ternary), int8 and
// bfp8.
func ParseFormat(s string) (Format, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for f, tr := range formatTraits {
		if t == tr.name || slices.Contains(tr.aliases, t) {
			return Format(f), nil
		}
	}
	names := make([]string, numFormats)
	for f := range formatTraits {
		names[f] = formatTraits[f].name
	}
	return 0, fmt.Errorf("unknown format %q (want one of %s)", s, strings.Join(names, ", "))
}

// Layout is how worker payloads are arranged in cache lines.
type Layout uint8

const (
	// ElementMajor is the paper's packet: byte i holds the signs of up to 8
	// workers for element i (bit k = worker k), 64 elements per line.
	ElementMajor Layout = iota
	// WorkerMajor gives each worker its own bit-plane lines, 512 elements
	// per line, for 1 to MaxWorkers workers.
	WorkerMajor
)

func (l Layout) String() string {
	switch l {
	case ElementMajor:
		return "element-major"
	case WorkerMajor:
		return "worker-major"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// ParseLayout accepts element-major (or packet) and worker-major (or planes).
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "element-major", "element", "packet":
		return ElementMajor, nil
	case "worker-major", "worker", "planes", "plane":
		return WorkerMajor, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want element-major or worker-major)", s)
}

// ElementsPerLine is how many elements one payload line of the layout holds.
func (l Layout) ElementsPerLine() int {
	if l == WorkerMajor {
		return PlaneElements
	}
	return PacketElements
}

// SlabBytes returns the unpadded bytes of n elements' payload in one slab
// of the layout: n (one packet byte per element) element-major,
// PlaneBytes(n) (one worker's bit-plane) worker-major.
func (l Layout) SlabBytes(n int) int {
	if l == WorkerMajor {
		return PlaneBytes(n)
	}
	return n
}

// Lines returns how many payload lines of the layout hold n elements:
// ceil(n / ElementsPerLine()), one slab's worth.
func (l Layout) Lines(n int) int { return Lines(l.SlabBytes(n)) }

// GateKind selects the G-Ternary zero gate.
type GateKind uint8

const (
	// GatePattern is the paper's fixed positional gate: element i is zeroed
	// when i mod Period == Period-1 (Period 3 is the paper's 2-of-3).
	GatePattern GateKind = iota
	// GateWorker is an extension beyond the paper: every worker writes a
	// gate bit per element, and only gated-on workers vote.
	GateWorker
	// GateMargin is an extension beyond the paper: elements whose vote
	// margin |a| is below Threshold are zeroed.
	GateMargin
)

// Gate is a G-Ternary zero gate. The zero value is the paper's 2-of-3 pattern.
type Gate struct {
	Kind GateKind
	// Period of GatePattern; 0 means 3 (the paper's). Must be 2 to 64.
	Period int
	// Threshold of GateMargin: |a| < Threshold returns zero. 1 to 2*MaxWorkers.
	Threshold int
}

// PaperGate is the evaluated gate of the paper: the fixed 2-of-3 pattern.
var PaperGate = Gate{Kind: GatePattern, Period: 3}

// period returns the effective pattern period.
func (g Gate) period() int {
	if g.Period == 0 {
		return 3
	}
	return g.Period
}

func (g Gate) String() string {
	switch g.Kind {
	case GatePattern:
		return fmt.Sprintf("pattern:%d", g.period())
	case GateWorker:
		return "worker"
	case GateMargin:
		return fmt.Sprintf("margin:%d", g.Threshold)
	}
	return fmt.Sprintf("Gate(%d)", uint8(g.Kind))
}

// Keeps reports whether the gate keeps flattened element i, whose vote
// margin is a: GatePattern zeroes i mod Period == Period-1, GateMargin
// zeroes |a| < Threshold; GateWorker gates per worker, not per element,
// and keeps every element here. The kernels apply the same rule word by
// word; RefGateKeeps is its reference twin.
func (g Gate) Keeps(i, a int) bool {
	switch g.Kind {
	case GatePattern:
		p := g.period()
		return i%p != p-1
	case GateMargin:
		return a >= g.Threshold || -a >= g.Threshold
	}
	return true
}

// Extension reports whether the gate goes beyond the paper's evaluation.
func (g Gate) Extension() bool {
	return !(g.Kind == GatePattern && g.period() == 3)
}

// Validate checks the gate's parameters.
func (g Gate) Validate() error {
	switch g.Kind {
	case GatePattern:
		if p := g.period(); p < 2 || p > 64 {
			return fmt.Errorf("gate pattern period %d out of range [2, 64]", p)
		}
	case GateWorker:
	case GateMargin:
		if g.Threshold < 1 || g.Threshold > 2*MaxWorkers {
			return fmt.Errorf("gate margin threshold %d out of range [1, %d]", g.Threshold, 2*MaxWorkers)
		}
	default:
		return fmt.Errorf("unknown gate kind %d", g.Kind)
	}
	return nil
}

// ParseGate accepts "pattern" (the paper's 2-of-3), "pattern:P", "worker"
// and "margin:T".
func ParseGate(s string) (Gate, error) {
	name, arg, hasArg := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	num := func() (int, error) {
		if !hasArg {
			return 0, fmt.Errorf("gate %q needs a number after ':'", s)
		}
		n, err := strconv.Atoi(arg)
		if err != nil {
			return 0, fmt.Errorf("gate %q: %v", s, err)
		}
		return n, nil
	}
	var g Gate
	switch name {
	case "pattern", "paper", "2of3":
		g = PaperGate
		if hasArg {
			p, err := num()
			if err != nil {
				return Gate{}, err
			}
			if p < 2 || p > 64 { // a typed 0 is not Gate's zero-value default
				return Gate{}, fmt.Errorf("gate %q: pattern period %d out of range [2, 64]", s, p)
			}
			g.Period = p
		}
	case "worker":
		if hasArg {
			return Gate{}, fmt.Errorf("gate %q takes no argument", s)
		}
		g = Gate{Kind: GateWorker}
	case "margin":
		t, err := num()
		if err != nil {
			return Gate{}, err
		}
		g = Gate{Kind: GateMargin, Threshold: t}
	default:
		return Gate{}, fmt.Errorf("unknown gate %q (want pattern, pattern:P, worker or margin:T)", s)
	}
	if err := g.Validate(); err != nil {
		return Gate{}, fmt.Errorf("gate %q: %w", s, err)
	}
	return g, nil
}

// Spec describes one low-bit aggregation: how many workers, how their
// payloads are laid out, the format and, for G-Ternary, the gate.
type Spec struct {
	Workers int
	Layout  Layout
	Format  Format
	Gate    Gate
}

// Validate checks that the spec is one the kernels support, for every
// format that aggregates: a vote format (G-Binary, G-Ternary) carries 1 to
// MaxPacketWorkers workers element-major and 1 to MaxWorkers worker-major,
// and G-Ternary a valid gate; an integer-sum format (Int8, BFP8) is
// worker-major (each worker writes its own lines) with 1 to MaxSumWorkers
// workers (CheckSumWorkers: its int16 lane sums stay exact) and no gate. It is the one check of a spec: the controller's
// regions, payloads and files all call it.
func (s Spec) Validate() error {
	if s.Format.Sum() {
		switch {
		case s.Layout != WorkerMajor:
			return fmt.Errorf("format %v is worker-major (each worker writes its own lines), not %v", s.Format, s.Layout)
		case CheckSumWorkers(s.Format, s.Workers) != nil:
			return CheckSumWorkers(s.Format, s.Workers)
		case s.Gate != (Gate{}):
			return fmt.Errorf("format %v has no gate, the spec has %v", s.Format, s.Gate)
		}
		return nil
	}
	if !s.Format.Vote() {
		return fmt.Errorf("format %v has no low-bit aggregate", s.Format)
	}
	switch s.Layout {
	case ElementMajor:
		if s.Workers < 1 || s.Workers > MaxPacketWorkers {
			return fmt.Errorf("element-major packets carry 1 to %d workers, not %d", MaxPacketWorkers, s.Workers)
		}
	case WorkerMajor:
		if s.Workers < 1 || s.Workers > MaxWorkers {
			return fmt.Errorf("worker-major planes carry 1 to %d workers, not %d", MaxWorkers, s.Workers)
		}
	default:
		return fmt.Errorf("unknown layout %d", s.Layout)
	}
	if s.Format == Ternary {
		if err := s.Gate.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// GateBits reports whether workers write gate bits beside their signs.
func (s Spec) GateBits() bool { return s.Format == Ternary && s.Gate.Kind == GateWorker }

// NonFiniteError reports a NaN or infinite gradient, which never becomes a
// sign: the bucket that holds it stays on FP32.
type NonFiniteError struct {
	Index int
	Value float32
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("element %d is %v, not a finite number", e.Index, e.Value)
}

// CheckFinite returns a *NonFiniteError for the first NaN or Inf in g.
func CheckFinite(g []float32) error {
	for i, v := range g {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return &NonFiniteError{Index: i, Value: v}
		}
	}
	return nil
}
