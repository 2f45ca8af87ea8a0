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
)

// Trace files.
//
// JSON (one object; unknown fields are errors):
//
//	{
//	  "model": "my-model",          optional
//	  "forward_us": 1200.5,         optional, step forward time
//	  "backward_us": 2401.0,        optional, step backward time (default: last ready_us)
//	  "bytes_per_element": 4,       optional, gradient element size (default 4, FP32)
//	  "buckets": [                  required, in launch order (ready_us non-decreasing)
//	    {"bytes": 33554432, "ready_us": 10.25},
//	    {"bytes": 1048576, "ready_us": 30, "elements": 262144}
//	  ]
//	}
//
// CSV: a header row naming the columns, in any order, then one bucket per
// row; lines starting with # are comments:
//
//	bytes,ready_us
//	33554432,10.25
//	1048576,30
//
// Columns: bytes (required), ready_us (required), elements (optional, default
// bytes / 4). Times are microseconds from the start of backward, stored as
// integer picoseconds. bytes must be a positive multiple of the element
// size and at most 2^50.

// MaxTraceBuckets bounds a trace file.
const MaxTraceBuckets = 1 << 24

// maxTraceUS bounds a time in a trace: 10^12 us (11.6 days), so that
// picoseconds stay inside int64.
const maxTraceUS = 1e12

type jsonTrace struct {
	Model           string       `json:"model"`
	ForwardUS       *float64     `json:"forward_us"`
	BackwardUS      *float64     `json:"backward_us"`
	BytesPerElement *int         `json:"bytes_per_element"`
	Buckets         []jsonBucket `json:"buckets"`
}

type jsonBucket struct {
	Bytes    *int64   `json:"bytes"`
	ReadyUS  *float64 `json:"ready_us"`
	Elements *int64   `json:"elements,omitempty"`
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
	t := &Trace{Model: jt.Model, BytesPerElement: 4}
	if jt.BytesPerElement != nil {
		t.BytesPerElement = *jt.BytesPerElement
		if t.BytesPerElement < 1 || t.BytesPerElement > 64 {
			return nil, fmt.Errorf("trace %s: bytes_per_element %d outside 1..64", name, t.BytesPerElement)
		}
	}
	var err error
	if jt.ForwardUS != nil {
		if t.ForwardPS, err = usToPS(*jt.ForwardUS); err != nil {
			return nil, fmt.Errorf("trace %s: forward_us: %w", name, err)
		}
	}
	if jt.BackwardUS != nil {
		if t.BackwardPS, err = usToPS(*jt.BackwardUS); err != nil {
			return nil, fmt.Errorf("trace %s: backward_us: %w", name, err)
		}
	}
	if jt.Buckets == nil {
		return nil, fmt.Errorf("trace %s: missing buckets", name)
	}
	for i, jb := range jt.Buckets {
		where := fmt.Sprintf("trace %s: buckets[%d]", name, i)
		if jb.Bytes == nil {
			return nil, fmt.Errorf("%s: missing bytes", where)
		}
		if jb.ReadyUS == nil {
			return nil, fmt.Errorf("%s: missing ready_us", where)
		}
		if err := t.add(*jb.Bytes, *jb.ReadyUS, jb.Elements); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return t, t.finish(name)
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

// WriteJSON writes t in the documented JSON trace format.
func (t *Trace) WriteJSON(w io.Writer) error {
	jt := jsonTrace{Model: t.Model}
	f, b := psToUS(t.ForwardPS), psToUS(t.BackwardPS)
	jt.ForwardUS, jt.BackwardUS = &f, &b
	bpe := t.BytesPerElement
	jt.BytesPerElement = &bpe
	jt.Buckets = make([]jsonBucket, len(t.Buckets))
	for i := range t.Buckets {
		nb, us := t.Buckets[i].Bytes, psToUS(t.Buckets[i].ReadyPS)
		jt.Buckets[i] = jsonBucket{Bytes: &nb, ReadyUS: &us}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jt)
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
