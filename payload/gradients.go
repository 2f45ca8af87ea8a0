package payload

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/usage"
)

// Gradients is W workers' raw little-endian float32 gradients, the input
// of `nfabric payload encode`, read from files on demand: one file split
// into W equal parts (worker after worker), or one file per worker. Its
// Read method is a Source, so EncodeStream never holds a whole input.
type Gradients struct {
	paths   []string
	files   []*os.File
	readers []io.ReaderAt // the files, or what was read from a pipe
	workers int
	n       int64 // elements per worker
	buf     []byte
}

// MaxStreamGradientBytes bounds gradients read from a pipe or FIFO, which
// are held in memory (1 GiB: 2^28 float32 values); a regular file is read
// in chunks whatever its size.
const MaxStreamGradientBytes = 1 << 30

// OpenGradients opens and sizes the inputs without reading them: with one
// path, workers (at least 1) equal parts; with several, one worker a file
// (workers is then 0 or len(paths)). A size that is not whole float32
// values or does not split evenly is an error naming the file.
func OpenGradients(paths []string, workers int) (*Gradients, error) {
	if len(paths) == 0 {
		return nil, errors.New("read gradients: no input files")
	}
	if len(paths) > 1 && workers != 0 && workers != len(paths) {
		return nil, usage.Errorf("read gradients: %d workers but %d input files (one file per worker)", workers, len(paths))
	}
	if len(paths) == 1 && workers < 1 {
		return nil, usage.Errorf("read gradients: the number of workers (--workers) is required with a single input file")
	}
	gr := &Gradients{paths: paths, workers: max(workers, len(paths))}
	for i, p := range paths {
		v, err := gr.open(p)
		if err != nil {
			gr.Close()
			return nil, err
		}
		switch {
		case len(paths) == 1:
			if v%int64(workers) != 0 {
				gr.Close()
				return nil, fmt.Errorf("read gradients %s: %d values do not split into %d equal workers", p, v, workers)
			}
			gr.n = v / int64(workers)
		case i == 0:
			gr.n = v
		case v != gr.n:
			gr.Close()
			return nil, fmt.Errorf("read gradients %s: %d values, %s has %d", p, v, paths[0], gr.n)
		}
	}
	return gr, nil
}

// open opens path and returns how many float32 values it holds.
func (gr *Gradients) open(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, fmt.Errorf("read gradients: %w", err)
	}
	gr.files = append(gr.files, f)
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("read gradients: %w", err)
	}
	size := st.Size()
	var ra io.ReaderAt = f
	if !st.Mode().IsRegular() {
		// A pipe or FIFO (/dev/stdin, <(cat f)) has no size and no random
		// access: read it whole, up to the limit.
		data, err := io.ReadAll(io.LimitReader(f, MaxStreamGradientBytes+1))
		if err != nil {
			return 0, fmt.Errorf("read gradients %s: %w", p, err)
		}
		if len(data) > MaxStreamGradientBytes {
			return 0, fmt.Errorf("read gradients %s: more than %d bytes from a pipe (write them to a file)", p, MaxStreamGradientBytes)
		}
		ra, size = bytes.NewReader(data), int64(len(data))
	}
	gr.readers = append(gr.readers, ra)
	if size%4 != 0 {
		return 0, fmt.Errorf("read gradients %s: %d bytes is not a whole number of float32 values", p, size)
	}
	return size / 4, nil
}

// Workers is W.
func (gr *Gradients) Workers() int { return gr.workers }

// Elements is the number of gradients per worker.
func (gr *Gradients) Elements() int64 { return gr.n }

// Close closes the input files.
func (gr *Gradients) Close() {
	for _, f := range gr.files {
		f.Close()
	}
}

// Read is a Source: it fills dst with worker k's elements from off, and
// names the file and the element (in the worker's whole input) of a NaN
// or Inf.
func (gr *Gradients) Read(k int, off int64, dst []float32) error {
	f, path, at := gr.readers[0], gr.paths[0], (int64(k)*gr.n+off)*4
	if len(gr.readers) > 1 {
		f, path, at = gr.readers[k], gr.paths[k], off*4
	}
	if cap(gr.buf) < 4*len(dst) {
		gr.buf = make([]byte, 4*len(dst))
	}
	b := gr.buf[:4*len(dst)]
	if _, err := f.ReadAt(b, at); err != nil {
		return fmt.Errorf("read gradients %s: %w", path, err)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if err := lowbit.CheckFinite(dst); err != nil {
		var nf *lowbit.NonFiniteError
		if errors.As(err, &nf) {
			err = &lowbit.NonFiniteError{Index: nf.Index + int(off), Value: nf.Value}
		}
		return fmt.Errorf("read gradients %s: %w", path, err)
	}
	return nil
}

// WriteRandomGradients writes workers x elements N(0,1) float32 values,
// little-endian, worker after worker: the raw input `payload encode`
// reads. The same seed gives the same bytes.
func WriteRandomGradients(w io.Writer, workers, elements int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x6e666162))
	bw := bufio.NewWriter(w)
	var b [4]byte
	for range workers * elements {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(r.NormFloat64())))
		bw.Write(b[:])
	}
	return bw.Flush()
}
