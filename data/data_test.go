package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes encodes an unsigned-byte IDX file.
func idxBytes(dims []int, body []byte) []byte {
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, body...)
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFakeMNIST writes n training and m test 4×3 images with labels i%10.
func writeFakeMNIST(t *testing.T, dir string, n, m int, zip bool) {
	t.Helper()
	for _, f := range []struct {
		prefix string
		n      int
	}{{"train", n}, {"t10k", m}} {
		pix := make([]byte, f.n*12)
		lab := make([]byte, f.n)
		for i := range pix {
			pix[i] = byte(i * 7)
		}
		for i := range lab {
			lab[i] = byte(i % 10)
		}
		img, lb := idxBytes([]int{f.n, 4, 3}, pix), idxBytes([]int{f.n}, lab)
		suffix := ""
		if zip {
			img, lb, suffix = gz(img), gz(lb), ".gz"
		}
		write(t, dir, f.prefix+"-images-idx3-ubyte"+suffix, img)
		write(t, dir, f.prefix+"-labels-idx1-ubyte"+suffix, lb)
	}
}

func TestReadIDX(t *testing.T) {
	dir := t.TempDir()
	good := idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	tests := []struct {
		name    string
		data    []byte
		wantErr string // "" for success
	}{
		{"plain", good, ""},
		{"gzip", gz(good), ""},
		{"empty", nil, "truncated header"},
		{"short-header", good[:6], "truncated header"},
		{"truncated-body", good[:len(good)-1], "truncated"},
		{"trailing", append(append([]byte(nil), good...), 9), "trailing"},
		{"bad-magic", append([]byte{1}, good[1:]...), "bad magic"},
		{"float-type", append([]byte{0, 0, 0x0d}, good[3:]...), "element type"},
		{"truncated-gzip", gz(good)[:10], "gzip"},
		{"huge-dims", idxBytes([]int{1 << 20, 1 << 20, 1 << 20}, nil), "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, dir, tt.name, tt.data)
			dims, body, err := ReadIDX(p)
			if tt.wantErr == "" {
				if err != nil || len(dims) != 2 || dims[0] != 2 || dims[1] != 3 || !bytes.Equal(body, good[12:]) {
					t.Fatalf("ReadIDX = %v, %v, %v", dims, body, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), p) {
				t.Errorf("ReadIDX error %v; want one naming %s and containing %q", err, p, tt.wantErr)
			}
		})
	}
}

func TestLoadIDXSets(t *testing.T) {
	for _, zip := range []bool{false, true} {
		dir := t.TempDir()
		writeFakeMNIST(t, dir, 20, 10, zip)
		s, err := Load("fashion-mnist", dir)
		if err != nil {
			t.Fatal(err)
		}
		if s.Train.Len() != 20 || s.Test.Len() != 10 || s.Train.H != 4 || s.Train.W != 3 || s.Train.Labels[13] != 3 {
			t.Errorf("zip=%v: got %d/%d images %dx%d", zip, s.Train.Len(), s.Test.Len(), s.Train.H, s.Train.W)
		}
		if s.Test.Mean[0] != s.Train.Mean[0] || s.Train.Std[0] <= 0 {
			t.Errorf("normalisation not taken from the training split")
		}
	}
	// Corrupt: a label of 10 in a 10-class set; mismatched counts; missing file.
	dir := t.TempDir()
	writeFakeMNIST(t, dir, 20, 10, false)
	write(t, dir, "t10k-labels-idx1-ubyte", idxBytes([]int{10}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 10}))
	if _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), "t10k-labels") || !strings.Contains(err.Error(), "label 10") {
		t.Errorf("bad label: %v", err)
	}
	write(t, dir, "t10k-labels-idx1-ubyte", idxBytes([]int{9}, make([]byte, 9)))
	if _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), "match") {
		t.Errorf("count mismatch: %v", err)
	}
	os.Remove(filepath.Join(dir, "t10k-labels-idx1-ubyte"))
	_, err := LoadMNIST(dir)
	if err == nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load("imagenet", ""); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("unknown set: %v", err)
	}
}

// cifarRecords returns n CIFAR records; label bytes first.
func cifarRecords(n int, labels func(i int) []byte) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, labels(i)...)
		for j := 0; j < cifarPixels; j++ {
			b = append(b, byte(i+j))
		}
	}
	return b
}

func TestLoadCIFAR(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, cifar10Dirname)
	os.Mkdir(sub, 0o755)
	for i := 1; i <= 5; i++ {
		write(t, sub, "data_batch_"+string(rune('0'+i))+".bin", cifarRecords(3, func(k int) []byte { return []byte{byte(k + i)} }))
	}
	write(t, sub, "test_batch.bin", cifarRecords(2, func(k int) []byte { return []byte{9} }))
	s, err := Load("cifar10", dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 15 || s.Test.Len() != 2 || s.Train.C != 3 || s.Train.Labels[3] != 2 || s.Train.Image(1)[5] != 6 {
		t.Errorf("cifar10: %d/%d images, labels %v", s.Train.Len(), s.Test.Len(), s.Train.Labels)
	}
	// Truncated record, bad label, missing file: errors name the file.
	write(t, sub, "test_batch.bin", cifarRecords(2, func(int) []byte { return []byte{1} })[:cifar10Record+5])
	if _, err := LoadCIFAR10(dir); err == nil || !strings.Contains(err.Error(), "test_batch.bin") || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated: %v", err)
	}
	write(t, sub, "test_batch.bin", cifarRecords(1, func(int) []byte { return []byte{10} }))
	if _, err := LoadCIFAR10(dir); err == nil || !strings.Contains(err.Error(), "label 10") {
		t.Errorf("bad label: %v", err)
	}
	if _, err := LoadCIFAR10(t.TempDir()); err == nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "data_batch_1.bin") {
		t.Errorf("missing: %v", err)
	}
	if _, err := Load("cifar10", ""); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("no dir: %v", err)
	}

	d100 := t.TempDir()
	write(t, d100, "train.bin", cifarRecords(4, func(k int) []byte { return []byte{byte(k), byte(90 + k)} }))
	write(t, d100, "test.bin", cifarRecords(1, func(k int) []byte { return []byte{0, 99} }))
	s, err = Load("cifar100", d100)
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Classes != 100 || s.Train.Labels[2] != 92 || s.Test.Labels[0] != 99 {
		t.Errorf("cifar100 fine labels: %v %v", s.Train.Labels, s.Test.Labels)
	}
	write(t, d100, "test.bin", cifarRecords(1, func(k int) []byte { return []byte{0, 100} }))
	if _, err := LoadCIFAR100(d100); err == nil || !strings.Contains(err.Error(), "test.bin") {
		t.Errorf("cifar100 bad label: %v", err)
	}
}

func fakeSets(n int) *Sets {
	mk := func(n int) *Dataset {
		d := &Dataset{Name: "fake", C: 1, H: 4, W: 3, Classes: 10, Pixels: make([]uint8, n*12), Labels: make([]int, n)}
		for i := range d.Pixels {
			d.Pixels[i] = uint8(i)
		}
		for i := range d.Labels {
			d.Labels[i] = i % 10
			d.Pixels[i*12] = uint8(i % 10) // first pixel encodes the label
		}
		return d
	}
	s := &Sets{Train: mk(n), Test: mk(n / 2)}
	setStats(s)
	return s
}

func TestPairs100(t *testing.T) {
	src := fakeSets(50)
	a, err := Pairs100(src, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Pairs100(src, 3)
	c, _ := Pairs100(src, 4)
	if !bytes.Equal(a.Train.Pixels, b.Train.Pixels) || !equalInts(a.Train.Labels, b.Train.Labels) {
		t.Errorf("same seed gives different sets")
	}
	if equalInts(a.Train.Labels, c.Train.Labels) {
		t.Errorf("different seeds give the same labels")
	}
	d := a.Train
	if d.W != 6 || d.H != 4 || d.Classes != 100 || d.Len() != 50 || a.Test.Len() != 25 || !strings.Contains(d.Description, "stand-in") {
		t.Fatalf("pairs: %dx%d, %d classes, %d images, %q", d.H, d.W, d.Classes, d.Len(), d.Description)
	}
	for k := 0; k < d.Len(); k++ {
		img := d.Image(k)
		if got := 10*int(img[0]) + int(img[3]); got != d.Labels[k] {
			t.Errorf("pair %d: digits in image give %d, label %d", k, got, d.Labels[k])
		}
	}
}

func TestStack100(t *testing.T) {
	src := fakeSets(50)
	a, err := Stack100(src, 3, "fake-stack100", "a stand-in")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Pairs100(src, 3)
	// Same draws as Pairs100 for a seed: same labels.
	if !equalInts(a.Train.Labels, p.Train.Labels) || !equalInts(a.Test.Labels, p.Test.Labels) {
		t.Errorf("Stack100 and Pairs100 draw different pairs for one seed")
	}
	d := a.Train
	if d.C != 2 || d.W != 3 || d.H != 4 || d.Classes != 100 || d.Len() != 50 || a.Test.Len() != 25 || len(d.Mean) != 2 {
		t.Fatalf("stack: %dx%dx%d, %d classes, %d images", d.C, d.H, d.W, d.Classes, d.Len())
	}
	for k := 0; k < d.Len(); k++ {
		img := d.Image(k)
		// Channel planes are 12 bytes; each source image's first byte is its class.
		if got := 10*int(img[0]) + int(img[12]); got != d.Labels[k] {
			t.Errorf("stack %d: channels give %d, label %d", k, got, d.Labels[k])
		}
		// The rest of each plane is the source image's bytes.
		pair := p.Train.Image(k)
		for r := 0; r < 4; r++ {
			if !bytes.Equal(img[r*3:r*3+3], pair[r*6:r*6+3]) || !bytes.Equal(img[12+r*3:12+r*3+3], pair[r*6+3:r*6+6]) {
				t.Fatalf("stack %d row %d differs from the side-by-side pair", k, r)
			}
		}
	}
	bad := fakeSets(10)
	bad.Train.C = 3
	if _, err := Stack100(bad, 1, "x", "y"); err == nil || !strings.Contains(err.Error(), "want 1 channel") {
		t.Errorf("3-channel source: err = %v", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBatcher(t *testing.T) {
	s := fakeSets(10)
	d := s.Train
	x := make([]float32, 4*d.ImageSize())
	y := make([]int, 4)

	// No shuffle: order 0..9, batches of 4, 4, 2; values normalised.
	b, err := NewBatcher(d, 4, nil, false, Augment{})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for n := b.Next(x, y); n > 0; n = b.Next(x, y) {
		sizes = append(sizes, n)
	}
	if !equalInts(sizes, []int{4, 4, 2}) || b.Batches() != 3 {
		t.Errorf("batch sizes %v, Batches %d", sizes, b.Batches())
	}
	b.Reset()
	b.Next(x, y)
	want := (float32(d.Pixels[5])/255 - d.Mean[0]) / d.Std[0]
	if math.Abs(float64(x[5]-want)) > 1e-6 || y[1] != 1 {
		t.Errorf("x[5] = %v; want %v", x[5], want)
	}
	b.DropLast = true
	if b.Batches() != 2 {
		t.Errorf("DropLast Batches = %d", b.Batches())
	}

	// Shuffle: a permutation, deterministic in the seed.
	epoch := func(seed uint64, aug Augment) ([]int, []float32) {
		b, _ := NewBatcher(d, 4, rand.New(rand.NewPCG(seed, 0)), true, aug)
		var ys []int
		var xs []float32
		for n := b.Next(x, y); n > 0; n = b.Next(x, y) {
			ys = append(ys, y[:n]...)
			xs = append(xs, x[:n*d.ImageSize()]...)
		}
		return ys, xs
	}
	y1, x1 := epoch(1, Augment{Pad: 1, Flip: true})
	y2, x2 := epoch(1, Augment{Pad: 1, Flip: true})
	y3, _ := epoch(2, Augment{})
	if !equalInts(y1, y2) || !equalFloats(x1, x2) {
		t.Errorf("same seed, different epochs")
	}
	if equalInts(y1, y3) {
		t.Errorf("seeds 1 and 2 give the same order")
	}
	seen := map[int]int{}
	for _, l := range y1 {
		seen[l]++
	}
	if len(seen) != 10 {
		t.Errorf("shuffled epoch is not a permutation: %v", y1)
	}
	if _, err := NewBatcher(d, 0, nil, false, Augment{}); err == nil {
		t.Errorf("batch size 0 accepted")
	}
	if _, err := NewBatcher(d, 2, nil, true, Augment{}); err == nil {
		t.Errorf("shuffle without rng accepted")
	}
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestAugment(t *testing.T) {
	// One 1×2×3 image with pixels 1..6, identity normalisation.
	d := &Dataset{C: 1, H: 2, W: 3, Classes: 1, Pixels: []uint8{1, 2, 3, 4, 5, 6}, Labels: []int{0}, Mean: []float32{0}, Std: []float32{1.0 / 255}}
	b, _ := NewBatcher(d, 1, rand.New(rand.NewPCG(0, 0)), false, Augment{})
	x := make([]float32, 6)
	tests := []struct {
		name   string
		dy, dx int
		flip   bool
		want   []float32
	}{
		{"identity", 0, 0, false, []float32{1, 2, 3, 4, 5, 6}},
		{"flip", 0, 0, true, []float32{3, 2, 1, 6, 5, 4}},
		{"shift-right-down", -1, -1, false, []float32{0, 0, 0, 0, 1, 2}},
		{"shift-left", 0, 1, false, []float32{2, 3, 0, 5, 6, 0}},
		{"shift-left-flip", 0, 1, true, []float32{0, 3, 2, 0, 6, 5}},
	}
	for _, tt := range tests {
		// Drive fill directly with fixed offsets.
		b.place(x, d.Image(0), tt.dy, tt.dx, tt.flip)
		for i := range x {
			if math.Abs(float64(x[i]-tt.want[i])) > 1e-4 {
				t.Errorf("%s: got %v; want %v", tt.name, x, tt.want)
				break
			}
		}
	}
}

// TestLoadStackSets loads both two-channel 100-class sets through Load
// from small IDX files and checks every stacked image against the source
// files directly: each channel plane is byte for byte one source image
// whose label is the stacked label's digit (10a+b: a in channel 0, b in
// channel 1), and the training split uses only training images.
func TestLoadStackSets(t *testing.T) {
	dir := t.TempDir()
	writeFakeMNIST(t, dir, 40, 20, true)
	src, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, desc string }{
		{"mnist-stack100", "MNIST digit pairs"},
		{"fashion-stack100", "Fashion-MNIST item pairs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(tt.name, dir)
			if err != nil {
				t.Fatal(err)
			}
			for split, pair := range [][2]*Dataset{{s.Train, src.Train}, {s.Test, src.Test}} {
				d, from := pair[0], pair[1]
				if d.C != 2 || d.H != 4 || d.W != 3 || d.Classes != 100 || d.Len() != from.Len() || !strings.HasPrefix(d.Description, tt.desc) {
					t.Fatalf("split %d: %dx%dx%d, %d classes, %d images, %q", split, d.C, d.H, d.W, d.Classes, d.Len(), d.Description)
				}
				classes := map[int]bool{}
				for k := 0; k < d.Len(); k++ {
					img, l := d.Image(k), d.Labels[k]
					classes[l] = true
					for ch, digit := range []int{l / 10, l % 10} {
						plane, found := img[ch*12:(ch+1)*12], false
						for i := 0; i < from.Len() && !found; i++ {
							found = from.Labels[i] == digit && bytes.Equal(plane, from.Image(i))
						}
						if !found {
							t.Fatalf("split %d image %d (label %d): channel %d is no source image of class %d", split, k, l, ch, digit)
						}
					}
				}
				if len(classes) < 10 {
					t.Errorf("split %d: only %d distinct labels in %d images", split, len(classes), d.Len())
				}
			}
			if s.Test.Mean[1] != s.Train.Mean[1] || len(s.Train.Mean) != 2 {
				t.Errorf("statistics: train %v test %v", s.Train.Mean, s.Test.Mean)
			}
		})
	}
}
