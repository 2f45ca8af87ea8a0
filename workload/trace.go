package workload

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/lowbit"
)

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
	Bytes      *int64      `json:"bytes"`
	ReadyUS    *float64    `json:"ready_us"`
	Elements   *int64      `json:"elements,omitempty"`
	Collective *string     `json:"collective,omitempty"`
	DurationUS *float64    `json:"duration_us,omitempty"`
	Groups     []jsonShare `json:"groups,omitempty"`
	EncodeUS   *float64    `json:"encode_us,omitempty"`
	VoteUS     *float64    `json:"vote_us,omitempty"`
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

// AddCollective appends one collective of the step: op of nbytes bytes
// (S as collective.Op defines it), ready readyPS after the start of
// backward, recorded as taking recordedPS (0 when unknown). An all-reduce
// or reduce-scatter carries gradients: a positive multiple of the element
// size, Elements = nbytes / BytesPerElement; the other operations move
// nbytes (a barrier none) and have no elements. Buckets must come in
// launch order (ready times non-decreasing); the trace's bytes are bounded
// by 2^50 in all.
func (t *Trace) AddCollective(op collective.Op, nbytes, readyPS, recordedPS int64) error {
	if len(t.Buckets) >= MaxTraceBuckets {
		return fmt.Errorf("more than %d buckets", MaxTraceBuckets)
	}
	if !op.Valid() {
		return fmt.Errorf("unknown collective %d", uint8(op))
	}
	bpe := int64(t.BytesPerElement)
	if bpe < 1 {
		return fmt.Errorf("element size %d bytes", bpe)
	}
	switch {
	case op == collective.Barrier && nbytes != 0:
		return fmt.Errorf("a barrier moves no bytes, not %d", nbytes)
	case op != collective.Barrier && (nbytes < 1 || nbytes > maxElements):
		return fmt.Errorf("bytes %d must be in 1..%d", nbytes, maxElements)
	case op.Aggregates() && nbytes%bpe != 0:
		return fmt.Errorf("bytes %d is not a multiple of the element size %d", nbytes, bpe)
	}
	maxPS := int64(maxTraceUS * 1e6)
	if readyPS < 0 || readyPS > maxPS {
		return fmt.Errorf("ready_us %v must be in [0, %g]", psToUS(readyPS), maxTraceUS)
	}
	if recordedPS < 0 || recordedPS > maxPS {
		return fmt.Errorf("duration_us %v must be in [0, %g]", psToUS(recordedPS), maxTraceUS)
	}
	if n := len(t.Buckets); n > 0 && readyPS < t.Buckets[n-1].ReadyPS {
		return fmt.Errorf("ready_us %v is before the previous bucket's %v: list buckets in launch order", psToUS(readyPS), psToUS(t.Buckets[n-1].ReadyPS))
	}
	if t.total+nbytes > maxElements {
		return fmt.Errorf("total bytes exceed %d", maxElements)
	}
	t.total += nbytes
	var e int64
	if op.Aggregates() {
		e = nbytes / bpe
	}
	t.Buckets = append(t.Buckets, Bucket{Index: len(t.Buckets), Elements: e, Bytes: nbytes, ReadyPS: readyPS, Op: op, RecordedPS: recordedPS})
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
	cr.ReuseRecord = true
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
		case "bytes", "ready_us", "elements", "collective", "duration_us":
		default:
			return nil, fmt.Errorf("trace %s:%d: unknown column %q (want bytes, ready_us, elements, collective, duration_us)", name, line, h)
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
	ncol := len(header)
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
		if len(rec) != ncol {
			return nil, fmt.Errorf("trace %s:%d: %d fields, want %d", name, line, len(rec), ncol)
		}
		if err := t.csvRow(rec, col); err != nil {
			return nil, fmt.Errorf("trace %s:%d: %w", name, line, err)
		}
	}
	if err := t.finish(name); err != nil {
		return nil, err
	}
	t.Source = &Provenance{Format: "nfabric bucket trace (CSV)", Files: []string{name}, Read: []Tally{{What: "buckets", N: int64(len(t.Buckets))}}}
	return t, nil
}

// csvRow adds one CSV row's collective.
func (t *Trace) csvRow(rec []string, col map[string]int) error {
	field := func(k string) string { return strings.TrimSpace(rec[col[k]]) }
	nb, err := strconv.ParseInt(field("bytes"), 10, 64)
	if err != nil {
		return fmt.Errorf("bytes: %v", err)
	}
	us, err := strconv.ParseFloat(field("ready_us"), 64)
	if err != nil {
		return fmt.Errorf("ready_us: %v", err)
	}
	ps, err := usToPS(us)
	if err != nil {
		return fmt.Errorf("ready_us: %w", err)
	}
	op := collective.AllReduce
	if _, ok := col["collective"]; ok {
		if op, err = collective.ParseOp(field("collective")); err != nil {
			return fmt.Errorf("collective: %w", err)
		}
	}
	var rec64 int64
	if _, ok := col["duration_us"]; ok && field("duration_us") != "" {
		d, err := strconv.ParseFloat(field("duration_us"), 64)
		if err != nil {
			return fmt.Errorf("duration_us: %v", err)
		}
		if rec64, err = usToPS(d); err != nil {
			return fmt.Errorf("duration_us: %w", err)
		}
	}
	if err := t.AddCollective(op, nb, ps, rec64); err != nil {
		return err
	}
	if _, ok := col["elements"]; ok {
		v, err := strconv.ParseInt(field("elements"), 10, 64)
		if err != nil {
			return fmt.Errorf("elements: %v", err)
		}
		if e := t.Buckets[len(t.Buckets)-1].Elements; v != e {
			return fmt.Errorf("elements %d disagrees with bytes %d / %d", v, nb, t.BytesPerElement)
		}
	}
	return nil
}

// ReadTrace reads one of nfabric's own bucket trace files: JSON when the
// name ends in .json, CSV when it ends in .csv. The other kinds of trace
// (Chakra ETs, torch.profiler traces) are read by package traces, whose
// Load reads these too. Both formats are documented at ParseTraceJSON.
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
		jb := jsonBucket{Bytes: &nb, ReadyUS: &us, EncodeUS: optUS(bk.EncodePS), VoteUS: optUS(bk.VotePS), DurationUS: optUS(bk.RecordedPS)}
		if bk.Op != collective.AllReduce {
			op := bk.Op.String()
			jb.Collective = &op
		}
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

// WriteCSV writes t's buckets in the documented CSV trace format (with
// the collective and duration_us columns only when a bucket needs them).
func (t *Trace) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	extended := false
	for _, b := range t.Buckets {
		extended = extended || b.Op != collective.AllReduce || b.RecordedPS != 0
	}
	head := []string{"bytes", "ready_us", "elements"}
	if extended {
		head = append(head, "collective", "duration_us")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, b := range t.Buckets {
		row := []string{strconv.FormatInt(b.Bytes, 10), strconv.FormatFloat(psToUS(b.ReadyPS), 'g', -1, 64), strconv.FormatInt(b.Elements, 10)}
		if extended {
			row = append(row, b.Op.String(), strconv.FormatFloat(psToUS(b.RecordedPS), 'g', -1, 64))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
