package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// gzBomb is a gzipped IDX file whose header promises dims but whose
// stream decompresses to extra zero bytes beyond them.
func gzBomb(t *testing.T, dims []uint32, extra int) string {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte{0, 0, 8, byte(len(dims))})
	n := 1
	for _, d := range dims {
		binary.Write(zw, binary.BigEndian, d)
		n *= int(d)
	}
	zero := make([]byte, 1<<20)
	for left := n + extra; left > 0; left -= len(zero) {
		zw.Write(zero[:min(left, len(zero))])
	}
	zw.Close()
	p := filepath.Join(t.TempDir(), "bomb.gz")
	os.WriteFile(p, buf.Bytes(), 0o644)
	return p
}

// TestReadIDXGzipBombBounded: a small gzip file that decompresses far past
// what its header promises is rejected while streaming, in memory bounded
// by the header's dimensions.
func TestReadIDXGzipBombBounded(t *testing.T) {
	p := gzBomb(t, []uint32{10, 28, 28}, 128<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := ReadIDX(p)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "trailing") || !strings.Contains(err.Error(), p) {
		t.Errorf("err %v; want a trailing-bytes error naming the file", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("allocated %d MiB reading a header of 7840 bytes", got>>20)
	}
}

// TestReadIDXMessages: size errors print every dimension, and a gzip
// stream's byte counts are those of the decompressed data, the numbers
// the header is compared with.
func TestReadIDXMessages(t *testing.T) {
	raw := []byte{0, 0, 8, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0}
	_, _, err := decodeIDX(raw)
	if err == nil || !strings.Contains(err.Error(), "[65536 65536 65536]") {
		t.Errorf("too large: %v; want all three dimensions", err)
	}
	p := gzBomb(t, []uint32{2, 4, 4}, -5)
	_, _, err = ReadIDX(p)
	if err == nil || !strings.Contains(err.Error(), "need 32 bytes") || !strings.Contains(err.Error(), "has 27") {
		t.Errorf("truncated gzip: %v; want 32 needed, 27 decompressed", err)
	}
}
