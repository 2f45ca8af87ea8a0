package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// nfabric runs the command line in-process and returns its exit status,
// stdout and stderr.
func nfabric(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"version"}, 0},
		{[]string{"--help"}, 0},
		{[]string{"no-such-command"}, 2},
		{[]string{"version", "--no-such-flag"}, 2},
		{[]string{"reproduce", "--only", "no-such-block"}, 2},
		{[]string{"reproduce", "--quick", "--full"}, 2},
		{[]string{"reproduce", "--tier", "medium"}, 2},
		{[]string{"reproduce", "--tier", "standard", "--full"}, 2},
		{[]string{"reproduce", "--tier", "standard", "--quick"}, 2},
		{[]string{"reproduce", "--list", "--tier", "full", "--full"}, 0},
		{[]string{"train", "validated", "--tier", "medium"}, 2},
		{[]string{"payload", "aggregate", "-o", "x", "/no/such/file"}, 1},
		{[]string{"payload", "aggregate", "--mode", "bogus", "-o", "x", "y"}, 2},
		{[]string{"pilot", "--fault-epochs", "5"}, 2},
		{[]string{"pilot", "--ladder-binary", "3"}, 2},
		{[]string{"pilot", "--ladder-rungs", "int8:0.9,fp32:0.5"}, 2},
		{[]string{"pilot", "--ladder-rungs", "int8"}, 2},
		{[]string{"pilot", "--ladder-rungs", "int8:0.9", "--ladder-ternary", "NaN"}, 2},
		{[]string{"pilot", "--fault-rate", "2"}, 2},
	}
	for _, c := range cases {
		code, _, stderr := nfabric(t, c.args...)
		if code != c.code {
			t.Errorf("nfabric %s: exit %d, want %d (stderr %q)", strings.Join(c.args, " "), code, c.code, stderr)
		}
		if code != 0 && !strings.HasPrefix(stderr, "nfabric: ") {
			t.Errorf("nfabric %s: stderr %q lacks the nfabric: prefix", strings.Join(c.args, " "), stderr)
		}
	}
}

// TestPayloadCountsByHand: aggregating a file of random 8-worker packets
// gives, byte for byte, the counts of a by-hand popcount.
func TestPayloadCountsByHand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "packets.bin")
	data := make([]byte, 10_007)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	os.WriteFile(in, data, 0o644)
	out := filepath.Join(dir, "counts.bin")
	if code, _, stderr := nfabric(t, "payload", "aggregate", "--raw", "--workers", "8", "--mode", "counts", "-o", out, in); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(out)
	if len(got) != len(data) {
		t.Fatalf("%d counts for %d packets", len(got), len(data))
	}
	for i, b := range data {
		if int(got[i]) != bits.OnesCount8(b) {
			t.Fatalf("packet %d = %08b: count %d", i, b, got[i])
		}
	}
}

// TestPayloadPipeline runs random -> encode -> aggregate for both layouts
// and checks that the two layouts agree on every mode.
func TestPayloadPipeline(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	if code, _, e := nfabric(t, "payload", "random", "--workers", "8", "--elements", "3000", "-o", g); code != 0 {
		t.Fatal(e)
	}
	results := map[string]string{}
	for _, layout := range []string{"element-major", "worker-major"} {
		p := filepath.Join(dir, layout+".nfp")
		if code, _, e := nfabric(t, "payload", "encode", "--workers", "8", "--layout", layout, "-o", p, g); code != 0 {
			t.Fatal(e)
		}
		for _, mode := range []string{"counts", "binary", "ternary"} {
			o := filepath.Join(dir, layout+mode+".csv")
			if code, _, e := nfabric(t, "payload", "aggregate", "--mode", mode, "--out-format", "csv", "-o", o, p); code != 0 {
				t.Fatal(e)
			}
			b, _ := os.ReadFile(o)
			if prev, ok := results[mode]; ok && prev != string(b) {
				t.Errorf("%s: layouts disagree", mode)
			}
			results[mode] = string(b)
		}
	}
}

// TestPayloadSumPipeline runs random -> encode -> aggregate for the
// integer-sum formats and checks the raw mean against the lowbit Ref
// chain on the raw gradients, and the usage errors around them.
func TestPayloadSumPipeline(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	const w, n = 3, 1000
	if code, _, e := nfabric(t, "payload", "random", "--workers", "3", "--elements", "1000", "-o", g); code != 0 {
		t.Fatal(e)
	}
	raw, _ := os.ReadFile(g)
	grads := make([][]float32, w)
	var m float32
	for k := range grads {
		grads[k] = make([]float32, n)
		for i := range grads[k] {
			grads[k][i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(k*n+i):]))
			m = max(m, float32(math.Abs(float64(grads[k][i]))))
		}
	}
	for _, f := range []lowbit.Format{lowbit.Int8, lowbit.BFP8} {
		p := filepath.Join(dir, f.String()+".nfp")
		if code, _, e := nfabric(t, "payload", "encode", "--workers", "3", "--format", f.String(), "-o", p, g); code != 0 {
			t.Fatal(e)
		}
		o := filepath.Join(dir, f.String()+".mean")
		if code, _, e := nfabric(t, "payload", "aggregate", "--mode", "mean", "-o", o, p); code != 0 {
			t.Fatal(e)
		}
		codes, exps := make([][]int8, w), make([][]int8, w)
		for k := range grads {
			if f == lowbit.Int8 {
				codes[k] = lowbit.RefEncodeInt8(grads[k], m/127)
			} else {
				codes[k], exps[k] = lowbit.RefEncodeBFP8(grads[k])
			}
		}
		var want []float32
		if f == lowbit.Int8 {
			want = lowbit.RefDecodeInt8(lowbit.RefSumInt8(codes), m/127, w)
		} else {
			s, e := lowbit.RefSumBFP8(codes, exps, n)
			want = lowbit.RefDecodeBFP8(s, e, w)
		}
		b, _ := os.ReadFile(o)
		if len(b) != 4*n {
			t.Fatalf("%v: %d bytes of means, want %d", f, len(b), 4*n)
		}
		for i := range want {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); got != want[i] {
				t.Fatalf("%v element %d: mean %v, want %v", f, i, got, want[i])
			}
		}
		if code, _, _ := nfabric(t, "payload", "aggregate", "--mode", "binary", "-o", o, p); code != 2 {
			t.Errorf("%v: --mode binary exit %d, want 2", f, code)
		}
	}
	if code, _, e := nfabric(t, "payload", "encode", "--workers", "3", "--format", "int8", "--layout", "element-major", "-o", filepath.Join(dir, "x"), g); code != 2 || !strings.Contains(e, "worker-major") {
		t.Errorf("element-major int8: exit %d, %q", code, e)
	}
}

func TestBadInputWritesNoOutput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nfp")
	os.WriteFile(bad, []byte("NFPL this is not a payload"), 0o644)
	out := filepath.Join(dir, "out.bin")
	code, _, stderr := nfabric(t, "payload", "aggregate", "-o", out, bad)
	if code != 1 || !strings.Contains(stderr, bad) {
		t.Errorf("exit %d, stderr %q: want 1 and the file named", code, stderr)
	}
	nan := filepath.Join(dir, "nan.f32")
	os.WriteFile(nan, []byte{0, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f}, 0o644) // 1.0, NaN
	code, _, stderr = nfabric(t, "payload", "encode", "--workers", "1", "-o", out, nan)
	if code != 1 || !strings.Contains(stderr, "element 1") || !strings.Contains(stderr, nan) {
		t.Errorf("NaN input: exit %d, stderr %q", code, stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("directory holds %d entries after failures; want the 2 inputs only", len(ents))
	}
}

func TestReproduceWritesReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick evidence blocks")
	}
	dir := t.TempDir()
	code, _, stderr := nfabric(t, "reproduce", "--only", "payload", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"REPORT.md", "index.html", "payload.md", "payload.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestRawPacketsBeyondW(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "packets.bin")
	os.WriteFile(in, []byte{0x07, 0x09}, 0o644) // byte 1 sets worker 3's bit
	code, _, stderr := nfabric(t, "payload", "aggregate", "--raw", "--workers", "3", "-o", filepath.Join(dir, "c"), in)
	if code != 1 || !strings.Contains(stderr, "byte 1") || !strings.Contains(stderr, in) {
		t.Errorf("exit %d, stderr %q: want 1, naming the file and byte 1", code, stderr)
	}
}
