package strictjson

import "encoding/json"

// Outline is what ShapeOf sees of a document without decoding it: the
// kind of its first value ('{', '[', '"', or 0 for anything else), the
// keys of that value when it is an object with the bytes of each value,
// and how many values follow one another at the top level (a stream of
// records has more than one).
type Outline struct {
	Kind   byte
	Values int
	keys   map[string][]byte
}

// HasKey reports whether the first value is an object holding key.
func (o Outline) HasKey(key string) bool { _, ok := o.keys[key]; return ok }

// OnlyKeys reports whether the first value is an object whose keys are
// all among allowed.
func (o Outline) OnlyKeys(allowed ...string) bool {
	if o.Kind != '{' {
		return false
	}
	for k := range o.keys {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return false
		}
	}
	return true
}

// String returns the string value of key in the first object ("" when
// absent or not a string).
func (o Outline) String(key string) string {
	var s string
	if json.Unmarshal(o.keys[key], &s) != nil {
		return ""
	}
	return s
}

// Shape outlines data in one pass over its bytes, keeping only the first
// object's top-level keys (and its scalar values); it never panics on
// malformed input, which it outlines as far as it can.
func Shape(data []byte) Outline {
	var o Outline
	depth := 0
	expectKey := false
	var key string
	haveKey := false
	valueStart := -1
	skipSpace := func(i int) int {
		for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
			i++
		}
		return i
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		if depth == 0 {
			if i = skipSpace(i); i >= len(data) {
				break
			}
			c = data[i]
			o.Values++
			if o.Values == 1 {
				o.Kind = c
				if c == '{' {
					o.keys = map[string][]byte{}
				}
				if c != '{' && c != '[' && c != '"' {
					o.Kind = 0
				}
			}
		}
		switch c {
		case '{', '[':
			depth++
			expectKey = c == '{' && depth == 1
			if depth == 2 && haveKey {
				valueStart = -1 // a structured value: keep the key only
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return o
			}
			if depth == 1 {
				expectKey = false
			}
		case ',':
			if depth == 1 && o.Values == 1 && o.Kind == '{' {
				if haveKey && valueStart >= 0 {
					o.keys[key] = trimSpace(data[valueStart:i])
				}
				expectKey, haveKey = true, false
			}
		case ':':
			if depth == 1 && haveKey {
				valueStart = i + 1
			}
		case '"':
			end, _ := stringEnd(data, i)
			if end < 0 {
				return o
			}
			if depth == 1 && expectKey && o.Values == 1 && o.Kind == '{' {
				if json.Unmarshal(data[i:end+1], &key) == nil {
					o.keys[key], haveKey, valueStart = nil, true, -1
				}
				expectKey = false
			}
			i = end
		default:
			if depth == 0 {
				// A scalar at the top: skip to its end.
				for i+1 < len(data) && !isDelim(data[i+1]) {
					i++
				}
			}
		}
		if depth == 0 && c == '}' && o.Values == 1 && o.Kind == '{' && haveKey && valueStart >= 0 {
			o.keys[key] = trimSpace(data[valueStart:i])
			haveKey = false
		}
	}
	return o
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '{', '[', '"':
		return true
	}
	return false
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
