package data

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeIDX: any bytes either decode to dimensions whose product is
// the data length, or give an error; never a panic.
func FuzzDecodeIDX(f *testing.F) {
	f.Add([]byte{0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9})
	f.Add([]byte{0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte{0, 0, 8, 1, 0, 0, 0, 1, 42})
	zw.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, raw []byte) {
		dims, data, err := decodeIDX(raw)
		if err != nil {
			return
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		if n != len(data) {
			t.Fatalf("dims %v but %d bytes", dims, len(data))
		}
	})
}

// FuzzReadCIFAR: a file is either read as whole records with labels in
// range, or rejected with an error naming it.
func FuzzReadCIFAR(f *testing.F) {
	rec := make([]byte, cifar10Record)
	rec[0] = 3
	f.Add(rec, false)
	f.Add(append(rec, rec[:10]...), false)
	f.Add(make([]byte, cifar100Record), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte, hundred bool) {
		p := filepath.Join(dir, "batch.bin")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		r, off, classes := cifar10Record, 0, 10
		if hundred {
			r, off, classes = cifar100Record, 1, 100
		}
		var d Dataset
		err := readCIFAR(p, r, off, classes, &d)
		if err != nil {
			if !bytes.Contains([]byte(err.Error()), []byte(p)) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(d.Labels)*cifarPixels != len(d.Pixels) || len(raw) != len(d.Labels)*r {
			t.Fatalf("%d labels, %d pixels from %d bytes", len(d.Labels), len(d.Pixels), len(raw))
		}
		for _, l := range d.Labels {
			if l < 0 || l >= classes {
				t.Fatalf("label %d", l)
			}
		}
	})
}
