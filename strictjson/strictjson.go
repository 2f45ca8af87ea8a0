// Package strictjson holds the checks that encoding/json lacks for this
// project's JSON inputs (traces, ASTRA-sim system files, Chakra and
// profiler traces): a key given twice in one object is an error, not "the
// last one wins", and every error names the input with the line and column
// it concerns.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode decodes data, one JSON value, into v: a key twice in one object,
// a field v does not declare, a value of the wrong type and data after the
// value are errors. Errors start with name and the line:column.
func Decode(data []byte, name string, v any) error {
	if err := CheckDuplicates(data); err != nil {
		return Wrap(err, data, name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: empty file", name)
		}
		return Wrap(err, data, name)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := int(end)
		for off < len(data) && (data[off] == ' ' || data[off] == '\t' || data[off] == '\n' || data[off] == '\r') {
			off++
		}
		return fmt.Errorf("%s:%s: unexpected data after the JSON value", name, LineCol(data, int64(off)))
	}
	return nil
}

// DuplicateKeyError is a key given twice in one object.
type DuplicateKeyError struct {
	Key string
	// Offset is the byte offset of the second occurrence's opening quote.
	Offset int64
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("key %q given twice in one object", e.Key)
}

// Wrap prefixes err with name and, for a syntax, type or duplicate-key
// error, the line:column in data it points at.
func Wrap(err error, data []byte, name string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var de *DuplicateKeyError
	switch {
	case errors.As(err, &se):
		// The offending byte is the last one read.
		return fmt.Errorf("%s:%s: %w", name, LineCol(data, se.Offset-1), err)
	case errors.As(err, &te):
		return fmt.Errorf("%s:%s: field %s: %w", name, LineCol(data, te.Offset), te.Field, err)
	case errors.As(err, &de):
		return fmt.Errorf("%s:%s: %w", name, LineCol(data, de.Offset), err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// LineCol converts a byte offset into "line:col" (1-based); offsets
// outside data are clamped.
func LineCol(data []byte, off int64) string {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("%d:%d", line, col)
}

// CheckDuplicates scans data for an object that holds a key twice and
// returns a *DuplicateKeyError for the first; keys compare after JSON
// unescaping ("a" and "\u0061" are the same key). It does not validate
// the rest of the syntax (the decoder does) and never panics on malformed
// input: it stops at the first byte it cannot place. Its memory is the
// keys of the objects open at one time.
func CheckDuplicates(data []byte) error {
	type frame struct {
		object bool
		few    [][]byte // the keys while there are few of them (unescaped, as in data)
		keys   map[string]struct{}
	}
	var stack []frame
	expectKey := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{':
			stack = append(stack, frame{object: true})
			expectKey = true
		case '[':
			stack = append(stack, frame{})
			expectKey = false
		case '}', ']':
			if len(stack) == 0 {
				return nil
			}
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			end, escaped := stringEnd(data, i)
			if end < 0 {
				return nil
			}
			if expectKey && len(stack) > 0 && stack[len(stack)-1].object {
				key := data[i+1 : end]
				if escaped {
					var s string
					if json.Unmarshal(data[i:end+1], &s) != nil {
						return nil
					}
					key = []byte(s)
				}
				top := &stack[len(stack)-1]
				dup := false
				if top.keys != nil {
					_, dup = top.keys[string(key)]
					top.keys[string(key)] = struct{}{}
				} else {
					for _, k := range top.few {
						dup = dup || bytes.Equal(k, key)
					}
					if top.few = append(top.few, key); len(top.few) > 16 {
						top.keys = map[string]struct{}{}
						for _, k := range top.few {
							top.keys[string(k)] = struct{}{}
						}
						top.few = nil
					}
				}
				if dup {
					return &DuplicateKeyError{Key: string(key), Offset: int64(i)}
				}
				expectKey = false
			}
			i = end
		}
	}
	return nil
}

// stringEnd returns the index of the quote closing the string opened at
// data[start], and whether it holds an escape; -1 if it never closes.
func stringEnd(data []byte, start int) (int, bool) {
	escaped := false
	for j := start + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}
