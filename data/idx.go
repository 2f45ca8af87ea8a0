package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// ReadIDX reads an IDX file of unsigned bytes (type code 0x08), gzipped or
// not (detected from the content), and returns its dimensions and data.
// The header is two zero bytes, the type code, the number of dimensions d,
// then d big-endian uint32 sizes; the data follows. Errors name the file.
func ReadIDX(path string) (dims []int, data []uint8, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("idx: %w", err)
	}
	dims, data, err = decodeIDX(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("idx %s: %w", path, err)
	}
	return dims, data, nil
}

// maxIDXBytes bounds what a header may ask for (1 GiB).
const maxIDXBytes = 1 << 30

func decodeIDX(raw []byte) ([]int, []uint8, error) {
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		raw, err = io.ReadAll(io.LimitReader(zr, maxIDXBytes+1024))
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
	}
	if len(raw) < 4 {
		return nil, nil, fmt.Errorf("truncated header (%d bytes)", len(raw))
	}
	if raw[0] != 0 || raw[1] != 0 {
		return nil, nil, fmt.Errorf("bad magic %02x%02x%02x%02x", raw[0], raw[1], raw[2], raw[3])
	}
	if raw[2] != 0x08 {
		return nil, nil, fmt.Errorf("element type 0x%02x, want 0x08 (unsigned byte)", raw[2])
	}
	nd := int(raw[3])
	if nd == 0 || len(raw) < 4+4*nd {
		return nil, nil, fmt.Errorf("truncated header: %d dimensions in %d bytes", nd, len(raw))
	}
	dims := make([]int, nd)
	n := 1
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(raw[4+4*i:]))
		if dims[i] != 0 && n > math.MaxInt32/dims[i] {
			return nil, nil, fmt.Errorf("dimensions %v too large", dims[:i+1])
		}
		n *= dims[i]
	}
	body := raw[4+4*nd:]
	if len(body) < n {
		return nil, nil, fmt.Errorf("truncated: dimensions %v need %d bytes, file has %d", dims, n, len(body))
	}
	if len(body) > n {
		return nil, nil, fmt.Errorf("%d trailing bytes after %v data", len(body)-n, dims)
	}
	return dims, body, nil
}

// loadIDXPair reads an images file (N, H, W) and a labels file (N) from
// dir, trying the given base names with and without ".gz".
func loadIDXPair(dir, name, images, labels string, classes int) (*Dataset, error) {
	ip, err := findFile(dir, images)
	if err != nil {
		return nil, err
	}
	lp, err := findFile(dir, labels)
	if err != nil {
		return nil, err
	}
	idims, pix, err := ReadIDX(ip)
	if err != nil {
		return nil, err
	}
	ldims, lab, err := ReadIDX(lp)
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 {
		return nil, fmt.Errorf("idx %s: images have dimensions %v, want (N, H, W)", ip, idims)
	}
	if len(ldims) != 1 || ldims[0] != idims[0] {
		return nil, fmt.Errorf("idx %s: labels have dimensions %v, want (%d) to match %s", lp, ldims, idims[0], filepath.Base(ip))
	}
	d := &Dataset{Name: name, C: 1, H: idims[1], W: idims[2], Classes: classes, Pixels: pix, Labels: make([]int, len(lab))}
	for i, l := range lab {
		if int(l) >= classes {
			return nil, fmt.Errorf("idx %s: label %d of image %d outside [0,%d)", lp, l, i, classes)
		}
		d.Labels[i] = int(l)
	}
	return d, nil
}

// loadIDXSets reads the four standard MNIST-format files from dir.
func loadIDXSets(dir, name, desc string) (*Sets, error) {
	tr, err := loadIDXPair(dir, name+"/train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 10)
	if err != nil {
		return nil, err
	}
	te, err := loadIDXPair(dir, name+"/test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10)
	if err != nil {
		return nil, err
	}
	if te.H != tr.H || te.W != tr.W {
		return nil, fmt.Errorf("%s: test images are %dx%d, training images %dx%d", dir, te.H, te.W, tr.H, tr.W)
	}
	tr.Description, te.Description = desc, desc
	s := &Sets{Train: tr, Test: te}
	setStats(s)
	return s, nil
}
