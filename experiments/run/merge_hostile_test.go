package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// reencode writes a decoded JSON value the way another tool might: keys in
// reverse order, two-space indent, every float with 17 significant digits
// and every non-alphanumeric ASCII character of a string as \u escape.
func reencode(b *bytes.Buffer, v any, indent string) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(keys)))
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + indent + "  ")
			reencode(b, k, "")
			b.WriteString(": ")
			reencode(b, x[k], indent+"  ")
		}
		b.WriteString("\n" + indent + "}")
	case []any:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			reencode(b, e, indent)
		}
		b.WriteString("]")
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			b.WriteString(string(x))
			return
		}
		f, _ := x.Float64()
		b.WriteString(strconv.FormatFloat(f, 'e', 16, 64))
	case string:
		b.WriteString(`"`)
		for _, r := range x {
			if r < 128 && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
		b.WriteString(`"`)
	default:
		j, _ := json.Marshal(x)
		b.Write(j)
	}
}

// TestMergeReencodedShards: shards re-encoded by another JSON tool with the
// same values merge into the same bytes as a single run (a byte
// comparison would refuse them with a misleading message); a FIFO
// named like a shard is refused at once instead of blocking the merge.
func TestMergeReencodedShards(t *testing.T) {
	bs := []Block{synthBlock("alpha", 5, -1)}
	lookup := func([]string) ([]Block, error) { return bs, nil }
	ctx := context.Background()
	cfg := Config{Seed: 4}
	single := t.TempDir()
	if _, err := Run(ctx, bs, cfg, single, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 2 {
		p, err := RunShard(ctx, bs, cfg, Shard{i, 2}, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(p)
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		reencode(&b, v, "")
		if bytes.Equal(b.Bytes(), raw) {
			t.Fatal("the re-encoding left the bytes unchanged")
		}
		os.WriteFile(p, b.Bytes(), 0o644)
	}
	out := t.TempDir()
	if _, err := merge([]string{dir}, out, nil, lookup); err != nil {
		t.Fatalf("merge of re-encoded shards: %v", err)
	}
	want, got := readDir(t, single), readDir(t, out)
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Errorf("%s differs from the single run", name)
		}
	}

	// A FIFO named like a shard: refused, naming it, without blocking.
	fifo := t.TempDir()
	src, _ := os.ReadFile(filepath.Join(dir, "shard-0-of-2.json"))
	os.WriteFile(filepath.Join(fifo, "shard-0-of-2.json"), src, 0o644)
	if err := syscall.Mkfifo(filepath.Join(fifo, "shard-1-of-2.json"), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := merge([]string{fifo}, t.TempDir(), nil, lookup); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "shard-1-of-2.json is not a regular file") {
			t.Errorf("merge with a FIFO shard: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("merge blocked on a FIFO named like a shard")
	}
}

// TestSameJSON: the value comparison behind DecodeExact, on hand cases.
func TestSameJSON(t *testing.T) {
	dec := func(s string) any {
		var v any
		if err := decodeNumbers([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		a, b, path string
	}{
		{`{"a":1,"b":[1e-05,3]}`, `{"b":[0.00001,3.0],"a":1}`, ""},
		{`{"a":0.1}`, `{"a":0.10000000000000001}`, ""}, // the same float64
		{`{"a":18446744073709551615}`, `{"a":18446744073709551615}`, ""},
		{`{"a":[1,2.5]}`, `{"a":[1,2.25]}`, "result.a[1]"},
		{`{"a":9007199254740993}`, `{"a":9007199254740992}`, "result.a"},
		{`{"a":1}`, `{"a":1,"b":null}`, "result.b"},
		{`{"a":"x"}`, `{"a":["x"]}`, "result.a"},
	} {
		path, ok := sameJSON("result", dec(c.a), dec(c.b))
		if ok != (c.path == "") || path != c.path {
			t.Errorf("sameJSON(%s, %s) = %q, %v; want %q", c.a, c.b, path, ok, c.path)
		}
	}
}

// TestIndexEscapesMarkdown: a block title or a failure message carrying
// markup reaches REPORT.md escaped.
func TestIndexEscapesMarkdown(t *testing.T) {
	o := Outcome{Block: Block{Name: "x", Title: "<script>t</script>"}, Err: fmt.Errorf("<img src=x onerror=alert(1)>"),
		Result: &report.Result{Title: "r"}}
	md := Index([]Outcome{o}, Config{})
	if strings.Contains(md, "<script") || strings.Contains(md, "<img") {
		t.Errorf("REPORT.md holds raw markup:\n%s", md)
	}
}
