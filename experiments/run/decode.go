package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// DecodeExact decodes raw into v and checks that v encodes back to the same
// values, so a result read from a shard is the result the unit returned.
// Values, not bytes, are compared: a shard re-encoded by another JSON tool
// (keys reordered, other spacing, 1e-05 written 0.00001, 3 written 3.0,
// characters escaped differently) still merges; a value the result type
// cannot hold (a fraction in an integer field, a number past float64's
// precision) is named with its path.
func DecodeExact(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	got, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("re-encode result: %w", err)
	}
	var want, back any
	if err := decodeNumbers(raw, &want); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if err := decodeNumbers(got, &back); err != nil {
		return fmt.Errorf("re-encode result: %w", err)
	}
	if path, ok := sameJSON("result", want, back); !ok {
		return fmt.Errorf("%s: the shard's value does not survive decoding into the result type (it holds data the type cannot represent exactly)", path)
	}
	return nil
}

func decodeNumbers(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// sameJSON compares two decoded JSON values (numbers as json.Number):
// objects key by key in any order, arrays element by element, numbers by
// value (exactly as integers when both are, else as float64). It returns
// the path of the first difference.
func sameJSON(path string, a, b any) (string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, false
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, in := x[k]; !in {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			xv, inX := x[k]
			yv, inY := y[k]
			if inX != inY {
				return path + "." + k, false
			}
			if p, ok := sameJSON(path+"."+k, xv, yv); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path, false
		}
		for i := range x {
			if p, ok := sameJSON(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		y, ok := b.(json.Number)
		return path, ok && sameNumber(x, y)
	}
	return path, a == b
}

func sameNumber(a, b json.Number) bool {
	if x, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return x == y
		}
	}
	if x, err := strconv.ParseUint(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseUint(string(b), 10, 64); err == nil {
			return x == y
		}
	}
	x, err1 := strconv.ParseFloat(string(a), 64)
	y, err2 := strconv.ParseFloat(string(b), 64)
	return err1 == nil && err2 == nil && x == y
}
