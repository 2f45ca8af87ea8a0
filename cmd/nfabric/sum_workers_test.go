package main

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// writeConstGradients writes w workers of n float32 gradients, all v.
func writeConstGradients(t *testing.T, path string, w, n int, v float32) {
	t.Helper()
	b := make([]byte, 4*w*n)
	for i := 0; i < w*n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSumFormatsRefuseInexactWorkers: INT8 and BFP8 sum W codes of at most
// 127 into int16 lanes, exact up to W = 258. With 300 workers of all-ones
// (0.99 for BFP8) the aggregate used to read 0.860 (0.853) silently; now
// encode refuses W > 258 with exit 2, a payload file whose header claims
// more workers is refused with exit 1 naming the file, and at W = 258 the
// mean is the workers' value (the closed form: every worker holds v).
func TestSumFormatsRefuseInexactWorkers(t *testing.T) {
	dir := t.TempDir()
	const n = 64
	for _, tc := range []struct {
		format string
		v      float32
	}{{"int8", 1}, {"bfp8", 0.99}} {
		over := filepath.Join(dir, tc.format+"-300.f32")
		writeConstGradients(t, over, 300, n, tc.v)
		out := filepath.Join(dir, tc.format+"-300.nfp")
		code, _, stderr := nfabric(t, "payload", "encode", "--workers", "300", "--format", tc.format, "-o", out, over)
		if code != 2 || !strings.Contains(stderr, "1 to 258 workers") {
			t.Errorf("%s, 300 workers: exit %d, %q; want 2 naming the bound 258", tc.format, code, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s, 300 workers: %s written", tc.format, out)
		}

		at := filepath.Join(dir, tc.format+"-258.f32")
		writeConstGradients(t, at, lowbit.MaxSumWorkers, n, tc.v)
		p := filepath.Join(dir, tc.format+"-258.nfp")
		if code, _, e := nfabric(t, "payload", "encode", "--workers", "258", "--format", tc.format, "-o", p, at); code != 0 {
			t.Fatalf("%s, 258 workers: exit %d, %s", tc.format, code, e)
		}
		mean := filepath.Join(dir, tc.format+".mean")
		if code, _, e := nfabric(t, "payload", "aggregate", "--mode", "mean", "-o", mean, p); code != 0 {
			t.Fatalf("%s, 258 workers: aggregate exit %d, %s", tc.format, code, e)
		}
		b, _ := os.ReadFile(mean)
		for i := 0; i < n; i++ {
			// Quantisation alone: within one code step of v (1/127 of the
			// block's largest |g|), nowhere near a saturated lane.
			if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])); math.Abs(float64(got-tc.v)) > float64(tc.v)/127 {
				t.Fatalf("%s, 258 workers, element %d: mean %v, want %v", tc.format, i, got, tc.v)
			}
		}

		// The same file with its header claiming 300 workers (checksum
		// fixed): refused on read, naming the file.
		raw, _ := os.ReadFile(p)
		binary.LittleEndian.PutUint16(raw[10:], 300)
		c := crc32.ChecksumIEEE(raw[:32])
		c = crc32.Update(c, crc32.IEEETable, raw[36:40])
		binary.LittleEndian.PutUint32(raw[32:], c)
		forged := filepath.Join(dir, tc.format+"-forged.nfp")
		os.WriteFile(forged, raw, 0o644)
		code, _, stderr = nfabric(t, "payload", "aggregate", "--mode", "mean", "-o", filepath.Join(dir, "x"), forged)
		if code != 1 || !strings.Contains(stderr, forged) || !strings.Contains(stderr, "1 to 258 workers") {
			t.Errorf("%s header with 300 workers: exit %d, %q", tc.format, code, stderr)
		}
	}
}

// TestPayloadScaleRefused: a payload header whose INT8 scale no agreement
// produces (3e38 decodes a full code to Inf; -0, negative) is refused on
// read with exit 1, naming the file and the field, and nothing is written;
// before, 3e38 decoded to ±Inf with exit 0 and -0 was accepted.
func TestPayloadScaleRefused(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.f32")
	writeConstGradients(t, g, 4, 64, 0.5)
	p := filepath.Join(dir, "g.nfp")
	if code, _, e := nfabric(t, "payload", "encode", "--workers", "4", "--format", "int8", "-o", p, g); code != 0 {
		t.Fatal(e)
	}
	good, _ := os.ReadFile(p)
	for _, tc := range []struct {
		name  string
		scale uint32
		want  string
	}{
		{"3e38", math.Float32bits(3e38), "exceeds"},
		{"-0", 1 << 31, "is not a number >= +0"},
		{"-1", math.Float32bits(-1), "is not a number >= +0"},
	} {
		raw := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(raw[36:], tc.scale)
		c := crc32.ChecksumIEEE(raw[:32])
		c = crc32.Update(c, crc32.IEEETable, raw[36:40])
		binary.LittleEndian.PutUint32(raw[32:], c)
		bad := filepath.Join(dir, "scale-"+tc.name+".nfp")
		os.WriteFile(bad, raw, 0o644)
		out := filepath.Join(dir, "mean-"+tc.name)
		code, _, stderr := nfabric(t, "payload", "aggregate", "--mode", "mean", "-o", out, bad)
		if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "scale (header bytes 36-39)") || !strings.Contains(stderr, tc.want) {
			t.Errorf("scale %s: exit %d, %q", tc.name, code, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("scale %s: %s written", tc.name, out)
		}
	}
}
