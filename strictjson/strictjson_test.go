package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckDuplicates(t *testing.T) {
	for _, tt := range []struct {
		in  string
		key string // "" when no duplicate
		at  string // the line:col of the second occurrence
	}{
		{`{"a":1,"b":2}`, "", ""},
		{`{"a":1,"a":2}`, "a", "1:8"},
		{`{"a":{"b":1},"c":[{"b":1},{"b":2}]}`, "", ""},      // the same key in sibling objects
		{`{"a":{"b":1,"b":1}}`, "b", "1:13"},                 // nested
		{"{\n \"x\": [1, {\"y\":0, \"y\":1}]}", "y", "2:19"}, // inside an array
		{`{"a":"{\"a\":1}","a":2}`, "a", "1:18"},             // braces inside a string are not structure
		{`{"\u0061":1,"a":2}`, "a", "1:13"},                  // the same key after unescaping
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":0,"k12":0,"k13":0,"k14":0,"k15":0,"k16":0,"k17":0,"k3":9}`, "k3", ""}, // past the small-set size
		{`[{"a":1},{"a":1}]`, "", ""},
		{`{"a":1,`, "", ""}, // malformed: left to the decoder
		{`"unterminated`, "", ""},
		{`}}]]`, "", ""},
	} {
		err := CheckDuplicates([]byte(tt.in))
		var de *DuplicateKeyError
		switch {
		case tt.key == "" && err != nil:
			t.Errorf("CheckDuplicates(%s) = %v; want nil", tt.in, err)
		case tt.key != "" && !errors.As(err, &de):
			t.Errorf("CheckDuplicates(%s) = %v; want key %q twice", tt.in, err, tt.key)
		case tt.key != "" && de.Key != tt.key:
			t.Errorf("CheckDuplicates(%s) names %q; want %q", tt.in, de.Key, tt.key)
		case tt.at != "" && LineCol([]byte(tt.in), de.Offset) != tt.at:
			t.Errorf("CheckDuplicates(%s) at %s; want %s", tt.in, LineCol([]byte(tt.in), de.Offset), tt.at)
		}
	}
}

func TestDecode(t *testing.T) {
	type T struct {
		A int `json:"a"`
	}
	for _, tt := range []struct{ in, want string }{
		{`{"a":1}`, ""},
		{`{"a":1,"a":2}`, `f.json:1:8: key "a" given twice`},
		{`{"a":1,"b":2}`, `f.json: json: unknown field "b"`},
		{`{"a":"x"}`, `f.json:1:9: field a`},
		{`{"a":1} {}`, `f.json:1:9: unexpected data after`},
		{``, `f.json: empty file`},
		{"{\n\"a\":}", `f.json:2:5: invalid character`},
	} {
		var v T
		err := Decode([]byte(tt.in), "f.json", &v)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Decode(%q) = %v; want %q", tt.in, err, tt.want)
		}
	}
}

// FuzzCheckDuplicates checks the scanner against a second oracle: decoding
// into nested maps with a key-counting json.Decoder walk. Both must agree
// on valid JSON; the scanner must never panic on any input.
func FuzzCheckDuplicates(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":2,"c":3}]}}`, `[1,"x",{"\u0062":1,"b":2}]`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckDuplicates(data)
		if !json.Valid(data) {
			return
		}
		want := dupByTokens(data)
		if (err != nil) != want {
			t.Fatalf("CheckDuplicates(%q) = %v; the token walk says duplicate=%v", data, err, want)
		}
	})
}

// dupByTokens walks data with encoding/json's tokenizer (an independent
// parser) and reports whether an object holds a key twice.
func dupByTokens(data []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string is a key
	}
	var st []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := func() *frame {
			if len(st) == 0 {
				return nil
			}
			return st[len(st)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				if f := top(); f != nil && f.object {
					f.key = true
				}
				st = append(st, &frame{object: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				if f := top(); f != nil && f.object {
					f.key = true
				}
				st = append(st, &frame{})
				continue
			default:
				st = st[:len(st)-1]
				continue
			}
		case string:
			if f := top(); f != nil && f.object && f.key {
				if f.keys[v] {
					return true
				}
				f.keys[v] = true
				f.key = false
				continue
			}
		}
		if f := top(); f != nil && f.object {
			f.key = true
		}
	}
}
