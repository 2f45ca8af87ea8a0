package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ReadIDX reads an IDX file of unsigned bytes (type code 0x08), gzipped or
// not (detected from the content), and returns its dimensions and data.
// The header is two zero bytes, the type code, the number of dimensions d,
// then d big-endian uint32 sizes; the data follows. The file is streamed:
// memory is what the header's dimensions ask for (at most 1 GiB), so a
// small gzip file that decompresses past them is rejected without
// inflating it. Errors name the file.
func ReadIDX(path string) (dims []int, data []uint8, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("idx: %w", err)
	}
	defer f.Close()
	dims, data, err = decodeIDXFrom(bufio.NewReader(f))
	if err != nil {
		return nil, nil, fmt.Errorf("idx %s: %w", path, err)
	}
	return dims, data, nil
}

// maxIDXBytes bounds what a header may ask for (1 GiB).
const maxIDXBytes = 1 << 30

// maxTrailingCount bounds how far past the data trailing bytes are
// counted for the error message.
const maxTrailingCount = 1 << 20

func decodeIDX(raw []byte) ([]int, []uint8, error) {
	return decodeIDXFrom(bufio.NewReader(bytes.NewReader(raw)))
}

func decodeIDXFrom(br *bufio.Reader) ([]int, []uint8, error) {
	var r io.Reader = br
	what := "file"
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		r, what = zr, "decompressed data"
	}
	var head [4]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, readErr(err, fmt.Sprintf("truncated header (%d bytes)", n))
	}
	if head[0] != 0 || head[1] != 0 {
		return nil, nil, fmt.Errorf("bad magic %02x%02x%02x%02x", head[0], head[1], head[2], head[3])
	}
	if head[2] != 0x08 {
		return nil, nil, fmt.Errorf("element type 0x%02x, want 0x08 (unsigned byte)", head[2])
	}
	nd := int(head[3])
	sizes := make([]byte, 4*nd)
	if k, err := io.ReadFull(r, sizes); nd == 0 || err != nil {
		return nil, nil, readErr(err, fmt.Sprintf("truncated header: %d dimensions in %d bytes", nd, 4+k))
	}
	dims := make([]int, nd)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(sizes[4*i:]))
	}
	n := int64(1)
	for _, d := range dims {
		if n *= int64(d); n > maxIDXBytes {
			return nil, nil, fmt.Errorf("dimensions %v too large (more than %d bytes)", dims, maxIDXBytes)
		}
	}
	body := make([]byte, n)
	if k, err := io.ReadFull(r, body); err != nil {
		return nil, nil, readErr(err, fmt.Sprintf("truncated: dimensions %v need %d bytes, the %s has %d", dims, n, what, k))
	}
	extra, err := io.Copy(io.Discard, io.LimitReader(r, maxTrailingCount+1))
	if err != nil {
		return nil, nil, readErr(err, "")
	}
	if extra > maxTrailingCount {
		return nil, nil, fmt.Errorf("more than %d trailing bytes after %v data", maxTrailingCount, dims)
	}
	if extra > 0 {
		return nil, nil, fmt.Errorf("%d trailing bytes after %v data", extra, dims)
	}
	return dims, body, nil
}

// readErr turns a short read into msg and keeps other read errors (a
// corrupt gzip stream) as they are.
func readErr(err error, msg string) error {
	if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && msg != "" {
		return errors.New(msg)
	}
	return fmt.Errorf("read: %w", err)
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
