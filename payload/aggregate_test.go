package payload

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// TestRawPacketValues reads a hand-made raw packet file (W = 3) and checks
// counts, G-Binary votes and the CSV and raw encodings against values
// worked out by hand.
func TestRawPacketValues(t *testing.T) {
	// bit k of byte i is worker k's sign of element i.
	packets := []byte{0b000, 0b001, 0b011, 0b111, 0b101}
	path := filepath.Join(t.TempDir(), "p.bin")
	if err := os.WriteFile(path, packets, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadRawPackets(path, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		values  func() (Values, error)
		raw     []byte
		csvHead string
		csv     []string
	}{
		{"counts", func() (Values, error) { return f.CountValues(), nil },
			[]byte{0, 1, 2, 3, 2}, "count", []string{"10,0", "11,1", "12,2", "13,3", "14,2"}},
		{"binary", func() (Values, error) { return f.VoteValues(lowbit.Spec{Format: lowbit.Binary}) },
			// u = sgn(2c - 3): c 0,1 -> -1; c 2,3 -> +1.
			[]byte{0xff, 0xff, 1, 1, 1}, "u", []string{"10,-1", "11,-1", "12,1", "13,1", "14,1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.values()
			if err != nil {
				t.Fatal(err)
			}
			var raw, csv bytes.Buffer
			if err := v.WriteRaw(&raw, nil); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw.Bytes(), tc.raw) {
				t.Errorf("raw %v, want %v", raw.Bytes(), tc.raw)
			}
			if err := v.WriteCSV(&csv, nil); err != nil {
				t.Fatal(err)
			}
			want := "element," + tc.csvHead + "\n" + strings.Join(tc.csv, "\n") + "\n"
			if csv.String() != want {
				t.Errorf("csv %q, want %q", csv.String(), want)
			}
		})
	}
}

// TestCountValuesWidth: above 255 workers a count takes two bytes.
func TestCountValuesWidth(t *testing.T) {
	for _, tc := range []struct{ workers, width int }{{8, 1}, {255, 1}, {256, 2}, {1024, 2}} {
		f := &File{Header: Header{Spec: lowbit.Spec{Workers: tc.workers, Layout: lowbit.WorkerMajor, Format: lowbit.Binary}}}
		if w := f.CountValues().Width; w != tc.width {
			t.Errorf("W = %d: width %d, want %d", tc.workers, w, tc.width)
		}
	}
}

func TestReadRawPacketsErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.bin")
	if err := os.WriteFile(path, []byte{0b1000}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		workers int
		base    int64
		want    string
	}{
		{"bit above W", path, 3, 0, "p.bin"},
		{"no workers", path, 0, 0, "workers"},
		{"nine workers", path, 9, 0, "workers"},
		{"negative base", path, 4, -1, "base"},
		{"missing", filepath.Join(dir, "nope"), 4, 0, "nope"},
	} {
		if _, err := ReadRawPackets(tc.path, tc.workers, tc.base); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func TestOpenGradients(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, odd, short := write("a", 32), write("b", 32), write("odd", 30), write("short", 16)
	gr, err := OpenGradients([]string{a}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if gr.Workers() != 4 || gr.Elements() != 2 {
		t.Errorf("one file, 4 workers: %d x %d, want 4 x 2", gr.Workers(), gr.Elements())
	}
	gr.Close()
	gr, err = OpenGradients([]string{a, b}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if gr.Workers() != 2 || gr.Elements() != 8 {
		t.Errorf("two files: %d x %d, want 2 x 8", gr.Workers(), gr.Elements())
	}
	gr.Close()
	for _, tc := range []struct {
		name    string
		paths   []string
		workers int
		want    string
	}{
		{"not float32", []string{odd}, 1, "odd"},
		{"uneven split", []string{a}, 3, "3 equal workers"},
		{"unequal files", []string{a, short}, 0, "short"},
		{"count mismatch", []string{a, b}, 3, "2 input files"},
		{"no workers", []string{a}, 0, "workers"},
		{"none", nil, 1, "no input"},
	} {
		if _, err := OpenGradients(tc.paths, tc.workers); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// FuzzRawPackets: any bytes either decode with no bit at or above W, or
// fail; never a panic.
func FuzzRawPackets(f *testing.F) {
	f.Add([]byte{0, 1, 0xff}, uint8(8))
	f.Add([]byte{4}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, w uint8) {
		workers := int(w%8) + 1
		pf, err := rawFile("fuzz", data, int64(len(data)), workers, 0)
		if err != nil {
			return
		}
		for i, b := range data {
			if int(b)>>workers != 0 {
				t.Fatalf("byte %d = %#x accepted with W = %d", i, b, workers)
			}
		}
		if c := pf.CountValues(); c.Len != len(data) {
			t.Fatalf("%d counts for %d packets", c.Len, len(data))
		}
	})
}
