package workload

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Trace files.
//
// JSON (one object; unknown fields are errors):
//
//	{
//	  "version": 2,                 optional, the trace format: 1 (the default) or 2
//	  "model": "my-model",          optional
//	  "forward_us": 1200.5,         optional, step forward time
//	  "backward_us": 2401.0,        optional, step backward time (default: last ready_us)
//	  "optimizer_us": 310.2,        optional, step optimizer time
//	  "bytes_per_element": 4,       optional, gradient element size (default 4, FP32)
//	  "workers": 2,                 optional, data-parallel workers of the recorded job
//	  "policy": "backbone=g-binary,head=fp32",   optional, the recorded job's policy
//	  "step": 3,                    optional, the training step recorded
//	  "diagnostics": {              optional, per group: the step's cosine diagnostics
//	    "backbone": {"cos_binary": 0.7, "cos_ternary": 0.6},
//	    "head": {"cos_binary": 0.4, "cos_ternary": 0.3,
//	             "cosines": {"int8": 0.99, "bfp8": 0.995}}    version 2 only
//	  },
//	  "buckets": [                  required, in launch order (ready_us non-decreasing)
//	    {"bytes": 33554432, "ready_us": 10.25},
//	    {"bytes": 1048576, "ready_us": 30, "elements": 262144,
//	     "groups": [{"name": "backbone", "elements": 262000, "mode": "g-binary"},
//	                {"name": "head", "elements": 144, "mode": "fp32"}],
//	     "encode_us": 41.5, "vote_us": 20.1}
//	  ]
//	}
//
// A bucket's optional "groups" split its elements among layer groups (their
// elements must sum to the bucket's) with the mode each went through (fp32,
// g-binary, g-ternary); "encode_us" and "vote_us" are the measured cost of
// packing this worker's payload and of the vote, 0 for FP32 buckets.
//
// Version 2 adds a group's optional "cosines": the cosine diagnostics of the
// formats beyond the paper's two (int8, bfp8; format name -> cosine in
// [-1, 1]), which the admission ladder's other rungs read. A version 1
// trace (no "version") reads as it always did; "cosines" in it is an error
// that asks for version 2. WriteJSON writes version 2 only when some step
// carries "cosines", so a paper-only trace is written as before.
//
// Several steps (what nfabric.torch records): the step fields (step,
// forward_us, backward_us, optimizer_us, diagnostics, buckets) move into a
// "steps" list and the top-level "buckets" is absent; model, workers,
// policy and bytes_per_element stay at the top and apply to every step.
// Steps must be listed in increasing step order. ReadTrace returns the
// first step, with Steps holding every step (so tools that read one step,
// such as timing replay, see the first one).
//
// CSV: a header row naming the columns, in any order, then one bucket per
// row; lines starting with # are comments:
//
//	bytes,ready_us
//	33554432,10.25
//	1048576,30
//
// Columns: bytes (required), ready_us (required), elements (optional, default
// bytes / 4). CSV carries one step and no groups, costs or diagnostics. Times
// are microseconds from the start of backward, stored as integer
// picoseconds. bytes must be a positive multiple of the element size and at
// most 2^50.

// MaxTraceBuckets bounds a trace file.
const MaxTraceBuckets = 1 << 24

// maxTraceUS bounds a time in a trace: 10^12 us (11.6 days), so that
// picoseconds stay inside int64.
const maxTraceUS = 1e12

type jsonTrace struct {
	Version         *int       `json:"version,omitempty"`
	Model           string     `json:"model"`
	BytesPerElement *int       `json:"bytes_per_element"`
	Workers         *int       `json:"workers,omitempty"`
	Policy          string     `json:"policy,omitempty"`
	Steps           []jsonStep `json:"steps,omitempty"`
	jsonStep
}

type jsonStep struct {
	Step        *int                `json:"step,omitempty"`
	ForwardUS   *float64            `json:"forward_us"`
	BackwardUS  *float64            `json:"backward_us"`
	OptimizerUS *float64            `json:"optimizer_us,omitempty"`
	Diagnostics map[string]jsonDiag `json:"diagnostics,omitempty"`
	Buckets     []jsonBucket        `json:"buckets,omitempty"`
}

type jsonDiag struct {
	CosBinary  *float64           `json:"cos_binary"`
	CosTernary *float64           `json:"cos_ternary"`
	Cosines    map[string]float64 `json:"cosines,omitempty"`
}

// TraceVersion is the newest trace format ReadTrace reads (and WriteJSON
// writes when a step carries per-format cosines).
const TraceVersion = 2

type jsonBucket struct {
	Bytes    *int64      `json:"bytes"`
	ReadyUS  *float64    `json:"ready_us"`
	Elements *int64      `json:"elements,omitempty"`
	Groups   []jsonShare `json:"groups,omitempty"`
	EncodeUS *float64    `json:"encode_us,omitempty"`
	VoteUS   *float64    `json:"vote_us,omitempty"`
}

type jsonShare struct {
	Name     string `json:"name"`
	Elements *int64 `json:"elements"`
	Mode     string `json:"mode"`
}

func usToPS(us float64) (int64, error) {
	if math.IsNaN(us) || math.IsInf(us, 0) || us < 0 || us > maxTraceUS {
		return 0, fmt.Errorf("time %v us must be finite, >= 0 and <= %g", us, maxTraceUS)
	}
	return int64(math.Round(us * 1e6)), nil
}

func psToUS(ps int64) float64 { return float64(ps) / 1e6 }

// lineCol converts a byte offset into "line:col" (1-based).
func lineCol(data []byte, off int64) string {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("%d:%d", line, col)
}

// ParseTraceJSON decodes a JSON bucket trace; name (usually the path) is
// used in errors, which also carry the line:column or the bucket index.
func ParseTraceJSON(data []byte, name string) (*Trace, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var jt jsonTrace
	if err := dec.Decode(&jt); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("trace %s:%s: %v", name, lineCol(data, se.Offset), err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("trace %s:%s: field %s: %v", name, lineCol(data, te.Offset), te.Field, err)
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("trace %s: empty file", name)
		}
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trace %s:%s: unexpected data after the trace object", name, lineCol(data, dec.InputOffset()))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trace %s:%s: unexpected data after the trace object", name, lineCol(data, dec.InputOffset()))
	}
	version := 1
	if jt.Version != nil {
		if *jt.Version < 1 || *jt.Version > TraceVersion {
			return nil, fmt.Errorf("trace %s: version %d: want 1 or %d (this nfabric reads up to version %d)", name, *jt.Version, TraceVersion, TraceVersion)
		}
		version = *jt.Version
	}
	base := Trace{Model: jt.Model, BytesPerElement: 4, Policy: jt.Policy}
	if jt.BytesPerElement != nil {
		base.BytesPerElement = *jt.BytesPerElement
		if base.BytesPerElement < 1 || base.BytesPerElement > 64 {
			return nil, fmt.Errorf("trace %s: bytes_per_element %d outside 1..64", name, base.BytesPerElement)
		}
	}
	if jt.Workers != nil {
		if *jt.Workers < 1 || *jt.Workers > 1<<20 {
			return nil, fmt.Errorf("trace %s: workers %d outside 1..%d", name, *jt.Workers, 1<<20)
		}
		base.Workers = *jt.Workers
	}
	if jt.Steps == nil {
		t := base
		if err := t.decodeStep(jt.jsonStep, name, version); err != nil {
			return nil, err
		}
		return &t, nil
	}
	if jt.Step != nil || jt.ForwardUS != nil || jt.BackwardUS != nil || jt.OptimizerUS != nil || jt.Diagnostics != nil || jt.Buckets != nil {
		return nil, fmt.Errorf("trace %s: a trace with \"steps\" keeps step, forward_us, backward_us, optimizer_us, diagnostics and buckets inside each step", name)
	}
	if len(jt.Steps) == 0 {
		return nil, fmt.Errorf("trace %s: steps is empty", name)
	}
	if len(jt.Steps) > maxTraceSteps {
		return nil, fmt.Errorf("trace %s: more than %d steps", name, maxTraceSteps)
	}
	steps := make([]*Trace, len(jt.Steps))
	var nb int
	for i, js := range jt.Steps {
		t := base
		if err := t.decodeStep(js, fmt.Sprintf("%s: steps[%d]", name, i), version); err != nil {
			return nil, err
		}
		if nb += len(t.Buckets); nb > MaxTraceBuckets {
			return nil, fmt.Errorf("trace %s: more than %d buckets in all steps", name, MaxTraceBuckets)
		}
		if i > 0 && t.Step <= steps[i-1].Step {
			return nil, fmt.Errorf("trace %s: steps[%d]: step %d does not follow step %d: list steps in increasing order", name, i, t.Step, steps[i-1].Step)
		}
		steps[i] = &t
	}
	first := *steps[0]
	first.Steps = steps
	return &first, nil
}

// decodeCosines checks a group's per-format cosines (version 2): each key a
// format's canonical name other than fp32, g-binary and g-ternary (those
// have their own fields), each value in [-1, 1]. The error starts with the
// field, "cosines[...]: ...". An empty object reads as none.
func decodeCosines(m map[string]float64, version int) (map[lowbit.Format]float64, error) {
	if m == nil {
		return nil, nil
	}
	if version < 2 {
		return nil, fmt.Errorf("cosines: per-format cosines need \"version\": %d at the top of the trace", TraceVersion)
	}
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[lowbit.Format]float64, len(m))
	for k, c := range m {
		f, err := lowbit.ParseFormat(k)
		switch {
		case err != nil || f.String() != k:
			return nil, fmt.Errorf("cosines[%q]: unknown format (want a format's name: %s)", k, extraFormats())
		case f == lowbit.FP32 || f == lowbit.Binary || f == lowbit.Ternary:
			return nil, fmt.Errorf("cosines[%q]: %v is not a format beyond the paper's two (want %s; G-Binary and G-Ternary go in cos_binary and cos_ternary)", k, f, extraFormats())
		case !(c >= -1 && c <= 1):
			return nil, fmt.Errorf("cosines[%q]: cosine %v outside [-1, 1]", k, c)
		}
		out[f] = c
	}
	return out, nil
}

// extraFormats names the formats a trace's "cosines" may hold.
func extraFormats() string {
	var names []string
	for f := range lowbit.Format(lowbit.NumFormats) {
		if f != lowbit.FP32 && f != lowbit.Binary && f != lowbit.Ternary {
			names = append(names, f.String())
		}
	}
	return strings.Join(names, ", ")
}

// maxTraceSteps bounds the steps of one trace file.
const maxTraceSteps = 1 << 16

// decodeStep fills t's step fields from js, a step of a trace of the given
// format version; name names the file (and the step) in errors.
func (t *Trace) decodeStep(js jsonStep, name string, version int) error {
	var err error
	if js.Step != nil {
		if *js.Step < 0 {
			return fmt.Errorf("trace %s: step %d must be >= 0", name, *js.Step)
		}
		t.Step = *js.Step
	}
	if js.ForwardUS != nil {
		if t.ForwardPS, err = usToPS(*js.ForwardUS); err != nil {
			return fmt.Errorf("trace %s: forward_us: %w", name, err)
		}
	}
	if js.BackwardUS != nil {
		if t.BackwardPS, err = usToPS(*js.BackwardUS); err != nil {
			return fmt.Errorf("trace %s: backward_us: %w", name, err)
		}
	}
	if js.OptimizerUS != nil {
		if t.OptimizerPS, err = usToPS(*js.OptimizerUS); err != nil {
			return fmt.Errorf("trace %s: optimizer_us: %w", name, err)
		}
	}
	if js.Diagnostics != nil {
		t.Diagnostics = map[string]Diagnostics{}
		for g, d := range js.Diagnostics {
			if strings.TrimSpace(g) == "" {
				return fmt.Errorf("trace %s: diagnostics: empty group name", name)
			}
			if d.CosBinary == nil || d.CosTernary == nil {
				return fmt.Errorf("trace %s: diagnostics[%q]: want cos_binary and cos_ternary", name, g)
			}
			for _, c := range []float64{*d.CosBinary, *d.CosTernary} {
				if !(c >= -1 && c <= 1) {
					return fmt.Errorf("trace %s: diagnostics[%q]: cosine %v outside [-1, 1]", name, g, c)
				}
			}
			cos, err := decodeCosines(d.Cosines, version)
			if err != nil {
				return fmt.Errorf("trace %s: diagnostics[%q].%w", name, g, err)
			}
			t.Diagnostics[g] = Diagnostics{CosBinary: *d.CosBinary, CosTernary: *d.CosTernary, Cosines: cos}
		}
	}
	if js.Buckets == nil {
		return fmt.Errorf("trace %s: missing buckets", name)
	}
	for i, jb := range js.Buckets {
		where := fmt.Sprintf("trace %s: buckets[%d]", name, i)
		if jb.Bytes == nil {
			return fmt.Errorf("%s: missing bytes", where)
		}
		if jb.ReadyUS == nil {
			return fmt.Errorf("%s: missing ready_us", where)
		}
		if err := t.add(*jb.Bytes, *jb.ReadyUS, jb.Elements); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := t.Buckets[i].decodeExtras(jb); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return t.finish(name)
}

// decodeExtras checks and sets a bucket's groups and measured costs.
func (b *Bucket) decodeExtras(jb jsonBucket) error {
	var err error
	if jb.EncodeUS != nil {
		if b.EncodePS, err = usToPS(*jb.EncodeUS); err != nil {
			return fmt.Errorf("encode_us: %w", err)
		}
	}
	if jb.VoteUS != nil {
		if b.VotePS, err = usToPS(*jb.VoteUS); err != nil {
			return fmt.Errorf("vote_us: %w", err)
		}
	}
	if jb.Groups == nil {
		return nil
	}
	if len(jb.Groups) == 0 {
		return fmt.Errorf("groups is empty (omit it, or name the groups)")
	}
	var sum int64
	seen := map[string]bool{}
	for k, g := range jb.Groups {
		if strings.TrimSpace(g.Name) == "" {
			return fmt.Errorf("groups[%d]: empty name", k)
		}
		if seen[g.Name] {
			return fmt.Errorf("groups[%d]: group %q twice", k, g.Name)
		}
		seen[g.Name] = true
		if g.Elements == nil || *g.Elements < 1 || *g.Elements > b.Elements {
			return fmt.Errorf("groups[%d] (%s): elements must be in 1..%d", k, g.Name, b.Elements)
		}
		f, err := lowbit.ParseFormat(g.Mode)
		if err != nil {
			return fmt.Errorf("groups[%d] (%s): mode: %w", k, g.Name, err)
		}
		sum += *g.Elements
		b.Groups = append(b.Groups, GroupShare{Name: g.Name, Elements: *g.Elements, Mode: f})
	}
	if sum != b.Elements {
		return fmt.Errorf("groups' elements sum to %d, the bucket holds %d", sum, b.Elements)
	}
	return nil
}

// add appends one bucket after checking it.
func (t *Trace) add(nbytes int64, readyUS float64, elements *int64) error {
	if len(t.Buckets) >= MaxTraceBuckets {
		return fmt.Errorf("more than %d buckets", MaxTraceBuckets)
	}
	bpe := int64(t.BytesPerElement)
	if nbytes < 1 || nbytes > maxElements {
		return fmt.Errorf("bytes %d must be in 1..%d", nbytes, maxElements)
	}
	if nbytes%bpe != 0 {
		return fmt.Errorf("bytes %d is not a multiple of the element size %d", nbytes, bpe)
	}
	e := nbytes / bpe
	if elements != nil && *elements != e {
		return fmt.Errorf("elements %d disagrees with bytes %d / %d", *elements, nbytes, bpe)
	}
	ps, err := usToPS(readyUS)
	if err != nil {
		return fmt.Errorf("ready_us: %w", err)
	}
	if n := len(t.Buckets); n > 0 && ps < t.Buckets[n-1].ReadyPS {
		return fmt.Errorf("ready_us %v is before the previous bucket's %v: list buckets in launch order", readyUS, psToUS(t.Buckets[n-1].ReadyPS))
	}
	if t.total+nbytes > maxElements {
		return fmt.Errorf("total bytes exceed %d", maxElements)
	}
	t.total += nbytes
	t.Buckets = append(t.Buckets, Bucket{Index: len(t.Buckets), Elements: e, Bytes: nbytes, ReadyPS: ps})
	return nil
}

func (t *Trace) finish(name string) error {
	if len(t.Buckets) == 0 {
		return fmt.Errorf("trace %s: no buckets", name)
	}
	last := t.Buckets[len(t.Buckets)-1].ReadyPS
	if t.BackwardPS == 0 {
		t.BackwardPS = last
	}
	if t.BackwardPS < last {
		return fmt.Errorf("trace %s: backward_us %v ends before the last bucket is ready (%v)", name, psToUS(t.BackwardPS), psToUS(last))
	}
	return nil
}

// ParseTraceCSV decodes a CSV bucket trace; errors name the file and line.
func ParseTraceCSV(r io.Reader, name string) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trace %s: empty file (want a header row such as bytes,ready_us)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	line, _ := cr.FieldPos(0)
	col := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		switch h {
		case "bytes", "ready_us", "elements":
		default:
			return nil, fmt.Errorf("trace %s:%d: unknown column %q (want bytes, ready_us, elements)", name, line, h)
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("trace %s:%d: duplicate column %q", name, line, h)
		}
		col[h] = i
	}
	for _, need := range []string{"bytes", "ready_us"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("trace %s:%d: missing column %q", name, line, need)
		}
	}
	t := &Trace{BytesPerElement: 4}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("trace %s:%d: %d fields, want %d", name, line, len(rec), len(header))
		}
		nb, err := strconv.ParseInt(strings.TrimSpace(rec[col["bytes"]]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("trace %s:%d: bytes: %v", name, line, err)
		}
		us, err := strconv.ParseFloat(strings.TrimSpace(rec[col["ready_us"]]), 64)
		if err != nil {
			return nil, fmt.Errorf("trace %s:%d: ready_us: %v", name, line, err)
		}
		var el *int64
		if c, ok := col["elements"]; ok {
			v, err := strconv.ParseInt(strings.TrimSpace(rec[c]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("trace %s:%d: elements: %v", name, line, err)
			}
			el = &v
		}
		if err := t.add(nb, us, el); err != nil {
			return nil, fmt.Errorf("trace %s:%d: %w", name, line, err)
		}
	}
	return t, t.finish(name)
}

// ReadTrace reads a bucket trace file: JSON when the name ends in .json,
// CSV when it ends in .csv.
func ReadTrace(path string) (*Trace, error) {
	low := strings.ToLower(path)
	switch {
	case strings.HasSuffix(low, ".json"):
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
		return ParseTraceJSON(data, path)
	case strings.HasSuffix(low, ".csv"):
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
		defer f.Close()
		return ParseTraceCSV(f, path)
	}
	return nil, fmt.Errorf("trace %s: unknown file type (want .json or .csv)", path)
}

// WriteJSON writes t in the documented JSON trace format: the one-step
// form, or the "steps" form when t came from one (t.Steps is set).
func (t *Trace) WriteJSON(w io.Writer) error {
	bpe := t.BytesPerElement
	jt := jsonTrace{Model: t.Model, BytesPerElement: &bpe, Policy: t.Policy}
	if t.carriesCosines() {
		v := TraceVersion
		jt.Version = &v
	}
	if t.Workers > 0 {
		wk := t.Workers
		jt.Workers = &wk
	}
	if len(t.Steps) > 0 {
		for _, s := range t.Steps {
			jt.Steps = append(jt.Steps, s.jsonStep())
		}
	} else {
		jt.jsonStep = t.jsonStep()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jt)
}

func optUS(ps int64) *float64 {
	if ps == 0 {
		return nil
	}
	v := psToUS(ps)
	return &v
}

func (t *Trace) jsonStep() jsonStep {
	f, b := psToUS(t.ForwardPS), psToUS(t.BackwardPS)
	js := jsonStep{ForwardUS: &f, BackwardUS: &b, OptimizerUS: optUS(t.OptimizerPS)}
	if t.Step != 0 {
		st := t.Step
		js.Step = &st
	}
	if t.Diagnostics != nil {
		js.Diagnostics = map[string]jsonDiag{}
		for g, d := range t.Diagnostics {
			cb, ct := d.CosBinary, d.CosTernary
			jd := jsonDiag{CosBinary: &cb, CosTernary: &ct}
			if len(d.Cosines) > 0 {
				jd.Cosines = map[string]float64{}
				for f, c := range d.Cosines {
					jd.Cosines[f.String()] = c
				}
			}
			js.Diagnostics[g] = jd
		}
	}
	js.Buckets = make([]jsonBucket, len(t.Buckets))
	for i := range t.Buckets {
		bk := &t.Buckets[i]
		nb, us := bk.Bytes, psToUS(bk.ReadyPS)
		jb := jsonBucket{Bytes: &nb, ReadyUS: &us, EncodeUS: optUS(bk.EncodePS), VoteUS: optUS(bk.VotePS)}
		for _, g := range bk.Groups {
			e := g.Elements
			jb.Groups = append(jb.Groups, jsonShare{Name: g.Name, Elements: &e, Mode: g.Mode.String()})
		}
		js.Buckets[i] = jb
	}
	return js
}

// carriesCosines reports whether t (or one of its steps) has per-format
// cosines, which only trace version 2 holds.
func (t *Trace) carriesCosines() bool {
	steps := t.Steps
	if len(steps) == 0 {
		steps = []*Trace{t}
	}
	for _, s := range steps {
		for _, d := range s.Diagnostics {
			if len(d.Cosines) > 0 {
				return true
			}
		}
	}
	return false
}

// WriteCSV writes t's buckets in the documented CSV trace format.
func (t *Trace) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"bytes", "ready_us", "elements"}); err != nil {
		return err
	}
	for _, b := range t.Buckets {
		if err := cw.Write([]string{strconv.FormatInt(b.Bytes, 10), strconv.FormatFloat(psToUS(b.ReadyPS), 'g', -1, 64), strconv.FormatInt(b.Elements, 10)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
