package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sort"

	"github.com/neuronfabric/nfabric/report"
)

// CheckpointMagic opens every checkpoint file.
const CheckpointMagic = "NFCKPT\x1a\n"

// CheckpointVersion is the format version written by WriteCheckpoint.
const CheckpointVersion = 1

// NamedTensor is one tensor of a checkpoint.
type NamedTensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Checkpoint is the decoded content of a checkpoint file.
type Checkpoint struct {
	Meta    map[string]string // e.g. epoch, step, RNG state; may be nil
	Tensors []NamedTensor
}

// Tensor returns the named tensor, or nil.
func (c *Checkpoint) Tensor(name string) *NamedTensor {
	for i := range c.Tensors {
		if c.Tensors[i].Name == name {
			return &c.Tensors[i]
		}
	}
	return nil
}

// MaxCheckpointBytes bounds a checkpoint file (2^32 bytes, 4 GiB: a model
// of train.MaxParams parameters with its velocity and a few workers'
// residuals). ReadCheckpoint checks the magic before reading on and stops
// at the byte after the limit, so a device or pipe (--checkpoint
// /dev/zero) is refused instead of read until memory runs out.
const MaxCheckpointBytes = 1 << 32

// Limits that keep a corrupt header from asking for absurd allocations.
const (
	maxNameLen = 1 << 16
	maxDims    = 8
)

// WriteCheckpoint encodes c. The format, all integers little-endian:
//
//	magic    8 bytes  "NFCKPT\x1a\n"
//	version  uint32   1
//	nmeta    uint32   then nmeta pairs, sorted by key:
//	             klen uint32, key bytes, vlen uint32, value bytes
//	ntensor  uint32   then ntensor tensors, in c.Tensors order:
//	             nlen uint32, name bytes (UTF-8),
//	             ndim uint32 (<= 8), ndim dims as uint32,
//	             product(dims) values as float32 bit patterns
//	crc      uint32   CRC-32 (IEEE) of every byte before it
func WriteCheckpoint(w io.Writer, c *Checkpoint) error {
	var buf bytes.Buffer
	le := binary.LittleEndian
	u32 := func(v int) { buf.Write(le.AppendUint32(nil, uint32(v))) }
	str := func(s string) { u32(len(s)); buf.WriteString(s) }
	buf.WriteString(CheckpointMagic)
	u32(CheckpointVersion)
	keys := make([]string, 0, len(c.Meta))
	for k := range c.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	u32(len(keys))
	for _, k := range keys {
		str(k)
		str(c.Meta[k])
	}
	u32(len(c.Tensors))
	for _, t := range c.Tensors {
		if len(t.Name) > maxNameLen || len(t.Shape) > maxDims || numel(t.Shape) != len(t.Data) {
			return fmt.Errorf("checkpoint: tensor %q: bad name length, rank or shape %v for %d values", t.Name, t.Shape, len(t.Data))
		}
		str(t.Name)
		u32(len(t.Shape))
		for _, d := range t.Shape {
			u32(d)
		}
		b := make([]byte, 4*len(t.Data))
		for i, v := range t.Data {
			le.PutUint32(b[4*i:], math.Float32bits(v))
		}
		buf.Write(b)
	}
	u32(int(crc32.ChecksumIEEE(buf.Bytes())))
	_, err := w.Write(buf.Bytes())
	return err
}

// errTruncated is returned (wrapped) when the input ends early.
var errTruncated = errors.New("truncated")

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("%w at byte %d (need %d more bytes)", errTruncated, r.off, n)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) u32() int {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return int(binary.LittleEndian.Uint32(b))
}

func (r *reader) str(limit int) string {
	n := r.u32()
	if r.err == nil && n > limit {
		r.err = fmt.Errorf("string length %d at byte %d exceeds %d", n, r.off-4, limit)
	}
	return string(r.bytes(n))
}

// ReadCheckpoint decodes a checkpoint written by WriteCheckpoint. It checks
// the magic, the version and the CRC before decoding and returns an error,
// never panics, on malformed input.
func ReadCheckpoint(rd io.Reader) (*Checkpoint, error) {
	return readCheckpoint(rd, MaxCheckpointBytes)
}

// readCheckpoint is ReadCheckpoint with the size limit given (tests use a
// small one).
func readCheckpoint(rd io.Reader, limit int64) (*Checkpoint, error) {
	magic := make([]byte, len(CheckpointMagic))
	if n, err := io.ReadFull(rd, magic); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	} else if n < len(magic) || string(magic) != CheckpointMagic {
		return nil, errors.New("not a checkpoint (bad magic)")
	}
	var buf bytes.Buffer
	buf.Write(magic)
	if _, err := buf.ReadFrom(io.LimitReader(rd, limit-int64(len(magic))+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	b := buf.Bytes()
	if len(b) < len(CheckpointMagic)+8 {
		return nil, fmt.Errorf("%w: %d bytes", errTruncated, len(b))
	}
	if v := binary.LittleEndian.Uint32(b[len(CheckpointMagic):]); v != CheckpointVersion {
		return nil, fmt.Errorf("unsupported checkpoint version %d (want %d)", v, CheckpointVersion)
	}
	body := b[:len(b)-4]
	if got, want := crc32.ChecksumIEEE(body), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return nil, fmt.Errorf("checksum mismatch (computed %08x, stored %08x): file truncated or corrupt", got, want)
	}
	r := &reader{b: body, off: len(CheckpointMagic) + 4}
	c := &Checkpoint{Meta: map[string]string{}}
	nmeta := r.u32()
	for i := 0; i < nmeta && r.err == nil; i++ {
		k := r.str(len(body))
		c.Meta[k] = r.str(len(body))
	}
	nt := r.u32()
	for i := 0; i < nt && r.err == nil; i++ {
		t := NamedTensor{Name: r.str(maxNameLen)}
		nd := r.u32()
		if r.err == nil && nd > maxDims {
			return nil, fmt.Errorf("tensor %q: rank %d exceeds %d", t.Name, nd, maxDims)
		}
		n := 1
		for j := 0; j < nd && r.err == nil; j++ {
			d := r.u32()
			t.Shape = append(t.Shape, d)
			if d != 0 && n > (len(body)/4)/d {
				return nil, fmt.Errorf("tensor %q: shape %v larger than the file", t.Name, t.Shape)
			}
			n *= d
		}
		raw := r.bytes(4 * n)
		if r.err != nil {
			break
		}
		t.Data = make([]float32, n)
		for j := range t.Data {
			t.Data[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		c.Tensors = append(c.Tensors, t)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(body) {
		return nil, fmt.Errorf("%d trailing bytes after the last tensor", len(body)-r.off)
	}
	return c, nil
}

// SaveCheckpoint writes c to path atomically by report.WriteAtomic's rules:
// a temporary file in the same directory, synced and renamed over path, so a
// crash never leaves a half-written checkpoint under that name (and an
// interrupt removes the temporary file).
func SaveCheckpoint(path string, c *Checkpoint) error {
	if err := report.WriteAtomic(path, func(w io.Writer) error { return WriteCheckpoint(w, c) }); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint reads the checkpoint file at path; errors name the file.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxCheckpointBytes {
		return nil, fmt.Errorf("checkpoint %s: %d bytes, more than %d", path, st.Size(), int64(MaxCheckpointBytes))
	}
	c, err := ReadCheckpoint(f)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return c, nil
}

// momentumPrefix names optimizer velocities in a checkpoint.
const momentumPrefix = "optim.momentum."

// Checkpoint returns a copy of the model's parameters (by name), running
// statistics (by name) and, if opt is not nil, the optimizer velocities
// (named "optim.momentum." + parameter name), with the given metadata.
func (m *Model) Checkpoint(opt *SGD, meta map[string]string) *Checkpoint {
	c := &Checkpoint{Meta: map[string]string{"model": m.Name}}
	for k, v := range meta {
		c.Meta[k] = v
	}
	add := func(name string, shape []int, v []float32) {
		c.Tensors = append(c.Tensors, NamedTensor{Name: name, Shape: append([]int(nil), shape...), Data: append([]float32(nil), v...)})
	}
	for _, p := range m.Params {
		add(p.Name, p.Shape, p.Value)
	}
	for _, b := range m.Buffers {
		add(b.Name, []int{len(b.Value)}, b.Value)
	}
	if opt != nil {
		for i, p := range m.Params {
			add(momentumPrefix+p.Name, p.Shape, opt.Vel[i])
		}
	}
	return c
}

// Restore copies parameters, running statistics and (if opt is not nil)
// optimizer velocities from c into the model. Every one must be present
// with the right shape; on error nothing has been changed. Replicas pick up
// the restored running statistics at their next Forward.
func (m *Model) Restore(c *Checkpoint, opt *SGD) error {
	type job struct {
		dst []float32
		src *NamedTensor
	}
	var jobs []job
	need := func(name string, shape []int, dst []float32) error {
		t := c.Tensor(name)
		if t == nil {
			return fmt.Errorf("missing tensor %q", name)
		}
		if !sameShape(t.Shape, shape) {
			return fmt.Errorf("tensor %q has shape %v, model wants %v", name, t.Shape, shape)
		}
		jobs = append(jobs, job{dst, t})
		return nil
	}
	if name, ok := c.Meta["model"]; ok && name != m.Name {
		return fmt.Errorf("checkpoint is for model %q, not %q", name, m.Name)
	}
	for _, p := range m.Params {
		if err := need(p.Name, p.Shape, p.Value); err != nil {
			return err
		}
	}
	for _, b := range m.Buffers {
		if err := need(b.Name, []int{len(b.Value)}, b.Value); err != nil {
			return err
		}
	}
	if opt != nil {
		for i, p := range m.Params {
			if err := need(momentumPrefix+p.Name, p.Shape, opt.Vel[i]); err != nil {
				return err
			}
		}
	}
	for _, j := range jobs {
		copy(j.dst, j.src.Data)
	}
	m.bufGen++
	return nil
}

// SaveFile writes m's checkpoint (see Model.Checkpoint) to path atomically.
func (m *Model) SaveFile(path string, opt *SGD, meta map[string]string) error {
	return SaveCheckpoint(path, m.Checkpoint(opt, meta))
}

// LoadFile restores m (and opt, if not nil) from the checkpoint at path and
// returns its metadata. Errors name the file.
func (m *Model) LoadFile(path string, opt *SGD) (map[string]string, error) {
	c, err := LoadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	if err := m.Restore(c, opt); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return c.Meta, nil
}
