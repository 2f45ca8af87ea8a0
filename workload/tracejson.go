package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/strictjson"
)

// The JSON trace is read token by token: the top level and each step
// field by field, and buckets one at a time into the trace's own compact
// form, so its memory is the file's bytes plus about 120 bytes a bucket
// (Bucket), whatever the number of buckets, and a key given twice is an
// error (strictjson).

// jsonHeader holds the top-level fields other than the step's.
type jsonHeader struct {
	Version         *int
	Model           string
	BytesPerElement *int
	Workers         *int
	Policy          string
}

// decoder walks one trace document.
type jsonDecoder struct {
	data []byte
	dec  *json.Decoder
	name string
	// arena holds every step's buckets, sized once from the count of
	// "bytes" keys, so growing a list of millions of buckets does not
	// allocate it several times over.
	arena []Bucket
	given []bool
}

func (d *jsonDecoder) wrap(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("trace %s:%s: unexpected end of file", d.name, d.at())
	}
	return strictjson.Wrap(err, d.data, "trace "+d.name)
}

func (d *jsonDecoder) at() string { return strictjson.LineCol(d.data, d.dec.InputOffset()) }

// delim reads the token c.
func (d *jsonDecoder) delim(c json.Delim, what string) error {
	tok, err := d.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) && len(bytes.TrimSpace(d.data)) == 0 {
			return fmt.Errorf("trace %s: empty file", d.name)
		}
		return d.wrap(err)
	}
	if tok != c {
		return fmt.Errorf("trace %s:%s: %s must be a JSON %s", d.name, d.at(), what, map[json.Delim]string{'{': "object", '[': "list"}[c])
	}
	return nil
}

// key reads the next object key.
func (d *jsonDecoder) key() (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.wrap(err)
	}
	k, _ := tok.(string)
	return k, nil
}

// value decodes the next value into v, naming field in errors.
func (d *jsonDecoder) value(field string, v any) error {
	if err := d.dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && field != "" {
			te.Field = strings.TrimSuffix(field+"."+te.Field, ".")
		}
		return d.wrap(err)
	}
	return nil
}

// rawStep is one step as read: its fields, and its buckets checked as far
// as they can be before the element size is known.
type rawStep struct {
	js      jsonStep
	buckets []Bucket
	given   []bool // the bucket gave "elements" (kept in Bucket.Elements until checked)
}

// ParseTraceJSON decodes nfabric's JSON bucket trace (what nfabric.torch
// records; every other kind of trace is listed in go doc ./traces); name
// (usually the path) is used in errors, which also carry the line:column
// or the bucket index.
//
// The format (one object; unknown fields and keys given twice are errors):
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
//	    {"bytes": 8388608, "ready_us": 12, "collective": "reduce-scatter", "duration_us": 310},
//	    {"bytes": 1048576, "ready_us": 30, "elements": 262144,
//	     "groups": [{"name": "backbone", "elements": 262000, "mode": "g-binary"},
//	                {"name": "head", "elements": 144, "mode": "fp32"}],
//	     "encode_us": 41.5, "vote_us": 20.1}
//	  ]
//	}
//
// A bucket is one collective: "collective" names its operation
// (all-reduce when absent; reduce-scatter, all-gather, all-to-all,
// broadcast, reduce, gather, scatter, barrier, as collective.ParseOp reads
// them), "bytes" its S as collective.Op defines it (a barrier's is 0), and
// "duration_us" how long it took when recorded. Only an all-reduce or a
// reduce-scatter carries gradients: its bytes are a multiple of the
// element size, and it alone may have groups. A bucket's optional
// "groups" split its elements among layer groups (their
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
// bytes / 4), collective and duration_us (optional, as in JSON). CSV carries one step and no groups, costs or diagnostics. Times
// are microseconds from the start of backward, stored as integer
// picoseconds. bytes must be a positive multiple of the element size and at
// most 2^50.
func ParseTraceJSON(data []byte, name string) (*Trace, error) {
	if err := strictjson.CheckDuplicates(data); err != nil {
		return nil, strictjson.Wrap(err, data, "trace "+name)
	}
	d := &jsonDecoder{data: data, dec: json.NewDecoder(bytes.NewReader(data)), name: name}
	d.dec.DisallowUnknownFields()
	if err := d.delim('{', "the trace"); err != nil {
		return nil, err
	}
	var hdr jsonHeader
	var top rawStep
	var steps []rawStep
	stepsGiven := false
	for d.dec.More() {
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		switch k {
		case "version":
			err = d.value(k, &hdr.Version)
		case "model":
			err = d.value(k, &hdr.Model)
		case "bytes_per_element":
			err = d.value(k, &hdr.BytesPerElement)
		case "workers":
			err = d.value(k, &hdr.Workers)
		case "policy":
			err = d.value(k, &hdr.Policy)
		case "steps":
			stepsGiven = true
			steps, err = d.steps()
		default:
			err = d.stepField(k, &top, "")
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := d.dec.Token(); err != nil { // }
		return nil, d.wrap(err)
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trace %s:%s: unexpected data after the trace object", name, d.at())
	}
	return assemble(name, hdr, top, steps, stepsGiven)
}

// steps reads the "steps" list.
func (d *jsonDecoder) steps() ([]rawStep, error) {
	if err := d.delim('[', "steps"); err != nil {
		return nil, err
	}
	var out []rawStep
	for i := 0; d.dec.More(); i++ {
		if len(out) >= maxTraceSteps {
			return nil, fmt.Errorf("trace %s: more than %d steps", d.name, maxTraceSteps)
		}
		prefix := fmt.Sprintf("steps[%d]: ", i)
		if err := d.delim('{', "steps["+fmt.Sprint(i)+"]"); err != nil {
			return nil, err
		}
		var s rawStep
		for d.dec.More() {
			k, err := d.key()
			if err != nil {
				return nil, err
			}
			if err := d.stepField(k, &s, prefix); err != nil {
				return nil, err
			}
		}
		if _, err := d.dec.Token(); err != nil {
			return nil, d.wrap(err)
		}
		out = append(out, s)
	}
	if _, err := d.dec.Token(); err != nil {
		return nil, d.wrap(err)
	}
	return out, nil
}

// stepField reads one field of a step (or of the one-step top level).
func (d *jsonDecoder) stepField(k string, s *rawStep, prefix string) error {
	switch k {
	case "step":
		return d.value(k, &s.js.Step)
	case "forward_us":
		return d.value(k, &s.js.ForwardUS)
	case "backward_us":
		return d.value(k, &s.js.BackwardUS)
	case "optimizer_us":
		return d.value(k, &s.js.OptimizerUS)
	case "diagnostics":
		return d.value(k, &s.js.Diagnostics)
	case "buckets":
		return d.buckets(s, prefix)
	}
	return fmt.Errorf("trace %s:%s: %sunknown field %q", d.name, d.at(), prefix, k)
}

// buckets reads a step's bucket list, one bucket at a time.
func (d *jsonDecoder) buckets(s *rawStep, prefix string) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.wrap(err)
	}
	if tok == nil { // "buckets": null reads as absent, as it always did
		return nil
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("trace %s:%s: %sbuckets must be a list", d.name, d.at(), prefix)
	}
	if d.arena == nil {
		n := min(bytes.Count(d.data, []byte(`"bytes"`)), MaxTraceBuckets)
		d.arena, d.given = make([]Bucket, 0, n), make([]bool, 0, n)
	}
	start := len(d.arena)
	for i := 0; d.dec.More(); i++ {
		if i >= MaxTraceBuckets {
			return fmt.Errorf("trace %s: %smore than %d buckets", d.name, prefix, MaxTraceBuckets)
		}
		where := func() string { return fmt.Sprintf("trace %s: %sbuckets[%d]", d.name, prefix, i) }
		var jb jsonBucket
		if err := d.value("", &jb); err != nil {
			return fmt.Errorf("%s: %w", where(), err)
		}
		b, given, err := decodeBucket(jb)
		if err != nil {
			return fmt.Errorf("%s: %w", where(), err)
		}
		d.arena = append(d.arena, b)
		d.given = append(d.given, given)
	}
	s.buckets, s.given = d.arena[start:len(d.arena):len(d.arena)], d.given[start:len(d.given):len(d.given)]
	if _, err = d.dec.Token(); err != nil {
		return d.wrap(err)
	}
	return nil
}

// decodeBucket checks what a bucket says on its own: present fields,
// times, the operation and the groups' names and modes. The element size
// comes later (finish).
func decodeBucket(jb jsonBucket) (Bucket, bool, error) {
	var b Bucket
	if jb.Bytes == nil {
		return b, false, fmt.Errorf("missing bytes")
	}
	if jb.ReadyUS == nil {
		return b, false, fmt.Errorf("missing ready_us")
	}
	b.Bytes = *jb.Bytes
	var err error
	if b.ReadyPS, err = usToPS(*jb.ReadyUS); err != nil {
		return b, false, fmt.Errorf("ready_us: %w", err)
	}
	if jb.Collective != nil {
		if b.Op, err = collective.ParseOp(*jb.Collective); err != nil {
			return b, false, fmt.Errorf("collective: %w", err)
		}
	}
	if jb.DurationUS != nil {
		if b.RecordedPS, err = usToPS(*jb.DurationUS); err != nil {
			return b, false, fmt.Errorf("duration_us: %w", err)
		}
	}
	if err := b.decodeExtras(jb); err != nil {
		return b, false, err
	}
	if jb.Elements != nil {
		b.Elements = *jb.Elements
	}
	return b, jb.Elements != nil, nil
}

// assemble checks the header and every step now that the element size is
// known, and builds the trace.
func assemble(name string, hdr jsonHeader, top rawStep, steps []rawStep, stepsGiven bool) (*Trace, error) {
	version := 1
	if hdr.Version != nil {
		if *hdr.Version < 1 || *hdr.Version > TraceVersion {
			return nil, fmt.Errorf("trace %s: version %d: want 1 or %d (this nfabric reads up to version %d)", name, *hdr.Version, TraceVersion, TraceVersion)
		}
		version = *hdr.Version
	}
	base := Trace{Model: hdr.Model, BytesPerElement: 4, Policy: hdr.Policy}
	if hdr.BytesPerElement != nil {
		base.BytesPerElement = *hdr.BytesPerElement
		if base.BytesPerElement < 1 || base.BytesPerElement > 64 {
			return nil, fmt.Errorf("trace %s: bytes_per_element %d outside 1..64", name, base.BytesPerElement)
		}
	}
	if hdr.Workers != nil {
		if *hdr.Workers < 1 || *hdr.Workers > 1<<20 {
			return nil, fmt.Errorf("trace %s: workers %d outside 1..%d", name, *hdr.Workers, 1<<20)
		}
		base.Workers = *hdr.Workers
	}
	if !stepsGiven {
		t := base
		if err := t.decodeStep(top, name, version); err != nil {
			return nil, err
		}
		t.Source = jsonSource(name, version, 1, len(t.Buckets))
		return &t, nil
	}
	if top.js.Step != nil || top.js.ForwardUS != nil || top.js.BackwardUS != nil || top.js.OptimizerUS != nil || top.js.Diagnostics != nil || top.buckets != nil {
		return nil, fmt.Errorf("trace %s: a trace with \"steps\" keeps step, forward_us, backward_us, optimizer_us, diagnostics and buckets inside each step", name)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("trace %s: steps is empty", name)
	}
	out := make([]*Trace, len(steps))
	var nb int
	for i, rs := range steps {
		t := base
		if err := t.decodeStep(rs, fmt.Sprintf("%s: steps[%d]", name, i), version); err != nil {
			return nil, err
		}
		if nb += len(t.Buckets); nb > MaxTraceBuckets {
			return nil, fmt.Errorf("trace %s: more than %d buckets in all steps", name, MaxTraceBuckets)
		}
		if i > 0 && t.Step <= out[i-1].Step {
			return nil, fmt.Errorf("trace %s: steps[%d]: step %d does not follow step %d: list steps in increasing order", name, i, t.Step, out[i-1].Step)
		}
		out[i] = &t
	}
	first := *out[0]
	first.Steps = out
	first.Source = jsonSource(name, version, len(out), nb)
	return &first, nil
}

func jsonSource(name string, version, steps, buckets int) *Provenance {
	return &Provenance{Format: fmt.Sprintf("nfabric bucket trace (JSON, version %d)", version), Files: []string{name},
		Read: []Tally{{What: "steps", N: int64(steps)}, {What: "buckets", N: int64(buckets)}}}
}

// decodeStep fills t's step fields from s, a step of a trace of the given
// format version; name names the file (and the step) in errors.
func (t *Trace) decodeStep(s rawStep, name string, version int) error {
	js := s.js
	var err error
	if js.Step != nil {
		if *js.Step < 0 {
			return fmt.Errorf("trace %s: step %d must be >= 0", name, *js.Step)
		}
		t.Step = *js.Step
	}
	for _, f := range []struct {
		field string
		us    *float64
		ps    *int64
	}{{"forward_us", js.ForwardUS, &t.ForwardPS}, {"backward_us", js.BackwardUS, &t.BackwardPS}, {"optimizer_us", js.OptimizerUS, &t.OptimizerPS}} {
		if f.us != nil {
			if *f.ps, err = usToPS(*f.us); err != nil {
				return fmt.Errorf("trace %s: %s: %w", name, f.field, err)
			}
		}
	}
	if err := t.decodeDiagnostics(js.Diagnostics, name, version); err != nil {
		return err
	}
	if s.buckets == nil {
		return fmt.Errorf("trace %s: missing buckets", name)
	}
	// Check the buckets in place: AddCollective writes bucket i where it
	// was read from, so the trace keeps one copy of them.
	t.Buckets = s.buckets[:0:len(s.buckets)]
	for i := range s.buckets {
		b := s.buckets[i]
		where := func() string { return fmt.Sprintf("trace %s: buckets[%d]", name, i) }
		if err := t.AddCollective(b.Op, b.Bytes, b.ReadyPS, b.RecordedPS); err != nil {
			return fmt.Errorf("%s: %w", where(), err)
		}
		nb := &t.Buckets[i]
		if s.given[i] && b.Elements != nb.Elements {
			return fmt.Errorf("%s: elements %d disagrees with bytes %d / %d", where(), b.Elements, b.Bytes, t.BytesPerElement)
		}
		nb.EncodePS, nb.VotePS, nb.Groups = b.EncodePS, b.VotePS, b.Groups
		if err := nb.checkGroups(); err != nil {
			return fmt.Errorf("%s: %w", where(), err)
		}
	}
	return t.finish(name)
}

// decodeDiagnostics checks and sets a step's cosine diagnostics.
func (t *Trace) decodeDiagnostics(m map[string]jsonDiag, name string, version int) error {
	if m == nil {
		return nil
	}
	t.Diagnostics = map[string]Diagnostics{}
	for g, d := range m {
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
	return nil
}

// decodeExtras checks and sets a bucket's groups (names, elements in
// range, modes) and measured costs; checkGroups checks their sum once the
// bucket's element count is known.
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
	seen := map[string]bool{}
	for k, g := range jb.Groups {
		if strings.TrimSpace(g.Name) == "" {
			return fmt.Errorf("groups[%d]: empty name", k)
		}
		if seen[g.Name] {
			return fmt.Errorf("groups[%d]: group %q twice", k, g.Name)
		}
		seen[g.Name] = true
		if g.Elements == nil || *g.Elements < 1 {
			return fmt.Errorf("groups[%d] (%s): elements must be given and >= 1", k, g.Name)
		}
		f, err := lowbit.ParseFormat(g.Mode)
		if err != nil {
			return fmt.Errorf("groups[%d] (%s): mode: %w", k, g.Name, err)
		}
		b.Groups = append(b.Groups, GroupShare{Name: g.Name, Elements: *g.Elements, Mode: f})
	}
	return nil
}

// checkGroups checks that the groups split the bucket's elements exactly
// (each in 1..Elements, the running sum never past Elements, so no sum
// wraps) and that only an aggregating collective has groups.
func (b *Bucket) checkGroups() error {
	if b.Groups == nil {
		return nil
	}
	if !b.Op.Aggregates() {
		return fmt.Errorf("groups: a %v moves data without reducing it; only all-reduce and reduce-scatter buckets hold gradient groups", b.Op)
	}
	var sum int64
	for k, g := range b.Groups {
		if g.Elements > b.Elements {
			return fmt.Errorf("groups[%d] (%s): elements must be in 1..%d", k, g.Name, b.Elements)
		}
		if sum += g.Elements; sum > b.Elements {
			return fmt.Errorf("groups' elements pass the bucket's %d at groups[%d]", b.Elements, k)
		}
	}
	if sum != b.Elements {
		return fmt.Errorf("groups' elements sum to %d, the bucket holds %d", sum, b.Elements)
	}
	return nil
}
