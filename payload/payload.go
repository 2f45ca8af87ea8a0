// Package payload is the file format for packed low-bit gradient payloads:
// what `nfabric payload encode` writes and `nfabric payload aggregate`
// reads. A file is one 64-byte header line followed by payload lines, laid
// out exactly as the runtime would write them into the CXL-resident
// gradient buffer (see package lowbit for the layouts).
//
// # Format (versions 1 and 2, all integers little-endian)
//
//	offset size field
//	0      4    magic "NFPL"
//	4      2    version: 1 for the paper's formats, 2 for the integer-sum ones
//	6      1    layout: 0 element-major packet, 1 worker-major planes
//	7      1    format: 1 G-Binary, 2 G-Ternary; version 2: 3 Int8, 4 BFP8
//	8      1    gate kind: 0 pattern, 1 worker (gate bits follow), 2 margin
//	9      1    reserved, 0
//	10     2    workers W (1-8 element-major, 1-1024 worker-major; Int8 and
//	            BFP8 1-258, lowbit.MaxSumWorkers)
//	12     4    gate parameter: pattern period or margin threshold, else 0
//	16     8    elements n
//	24     8    base: flattened index of element 0 (the pattern gate uses it)
//	32     4    CRC-32 (IEEE) of bytes 0-31 (version 1) or 0-31 and 36-39 (version 2)
//	36     4    version 2: Int8's agreed scale, float32 bits, +0 to
//	            lowbit.MaxInt8Scale (lowbit.CheckInt8Scale); +0 for BFP8
//	40     24   reserved, 0   (version 1: 36-63 reserved)
//	64     ...  sign data, then gate data when the gate kind is worker;
//	            version 2: code data, then BFP8 exponent data
//
// Element-major sign data is n bytes (byte i, bit k = worker k's sign of
// element i) padded with zeros to a whole line. Worker-major sign data is
// W planes, worker 0 first, each ceil(n/8) bytes padded to a whole line.
// Gate data has the same shape as sign data. Int8 and BFP8 (worker-major,
// gate kind 0 and parameter 0) have W code slabs, worker 0 first, each n
// int8 codes padded to a whole line; BFP8 follows them with W exponent
// slabs, each ceil(n/64) int8 exponents padded to a whole line (what
// host.Payload holds). Padding must be zero and the file must end exactly
// after the data: anything else is rejected. The paper's formats are
// written as version 1, byte for byte as before version 2 existed.
package payload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"

	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Magic starts every payload file.
const Magic = "NFPL"

// Version is the newest format version this package writes and reads;
// it writes the paper's formats as version 1 (VersionOf).
const Version = 2

// VersionOf returns the version a file of format f is written as: 1 for
// G-Binary and G-Ternary, 2 for Int8 and BFP8.
func VersionOf(f lowbit.Format) int {
	if f.Sum() {
		return 2
	}
	return 1
}

// formatCode returns f's header byte: its number in lowbit's registry (1
// G-Binary, 2 G-Ternary, 3 Int8, 4 BFP8), so a format added to the
// registry has its code. FP32 has none: it is no packed payload.
func formatCode(f lowbit.Format) (byte, bool) {
	return byte(f), f.Valid() && f != lowbit.FP32
}

// formatOfCode is formatCode's inverse.
func formatOfCode(c byte) (lowbit.Format, bool) {
	f := lowbit.Format(c)
	_, ok := formatCode(f)
	return f, ok
}

// formatCodeList names the codes an error lists: "1 g-binary, ... or 4 bfp8".
func formatCodeList() string {
	var s []string
	for _, f := range lowbit.Formats() {
		if c, ok := formatCode(f); ok {
			s = append(s, fmt.Sprintf("%d %v", c, f))
		}
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// HeaderBytes is the size of the header: one cache line.
const HeaderBytes = lowbit.LineBytes

// MaxElements bounds n so that sizes stay well inside int64 and a corrupt
// header cannot ask for an absurd allocation.
const MaxElements = 1 << 36

// Header describes a payload file.
type Header struct {
	Spec     lowbit.Spec
	Elements int64
	Base     int64
	// Scale is Int8's agreed scale (version 2); 0 for the other formats.
	Scale float32
}

// Validate checks the header's fields.
func (h Header) Validate() error {
	if _, ok := formatCode(h.Spec.Format); !ok {
		return fmt.Errorf("format %v has no packed payload file", h.Spec.Format)
	}
	if err := h.Spec.Validate(); err != nil {
		return err
	}
	if err := h.Spec.Format.CheckScale(h.Scale); err != nil {
		return fmt.Errorf("scale (header bytes 36-39): %w", err)
	}
	if h.Elements < 0 || h.Elements > MaxElements {
		return fmt.Errorf("element count %d out of range [0, %d]", h.Elements, int64(MaxElements))
	}
	if h.Base < 0 || h.Base > 1<<62 {
		return fmt.Errorf("base index %d out of range", h.Base)
	}
	return nil
}

// dataBytes is the size of everything after the header: the region data
// window the payload fills (host.DataBytes).
func (h Header) dataBytes() int64 { return host.DataBytes(h.Spec, int(h.Elements)) }

// SectionBytes is the size of the sign data (and of the gate data, when
// present), or of the code data of Int8 and BFP8.
func (h Header) SectionBytes() int64 {
	if h.Spec.GateBits() {
		return h.dataBytes() / 2
	}
	return h.dataBytes() - h.ExpBytes()
}

// ExpBytes is the size of the exponent data of a format with block
// exponents (BFP8), 0 for the other formats.
func (h Header) ExpBytes() int64 {
	if !h.Spec.Format.BlockExponents() {
		return 0
	}
	return int64(h.Spec.Workers) * int64(lowbit.Lines(lowbit.BFPBlocks(int(h.Elements)))) * lowbit.LineBytes
}

// FileBytes is the exact size of a file with this header.
func (h Header) FileBytes() int64 { return HeaderBytes + h.dataBytes() }

// MarshalBinary encodes the header line.
func (h Header) MarshalBinary() ([]byte, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, HeaderBytes)
	copy(b, Magic)
	v := VersionOf(h.Spec.Format)
	binary.LittleEndian.PutUint16(b[4:], uint16(v))
	b[6] = byte(h.Spec.Layout)
	b[7], _ = formatCode(h.Spec.Format)
	var param uint32
	if h.Spec.Format == lowbit.Ternary {
		b[8] = byte(h.Spec.Gate.Kind)
		switch h.Spec.Gate.Kind {
		case lowbit.GatePattern:
			param = uint32(h.Spec.Gate.Period)
			if param == 0 {
				param = 3
			}
		case lowbit.GateMargin:
			param = uint32(h.Spec.Gate.Threshold)
		}
	}
	binary.LittleEndian.PutUint16(b[10:], uint16(h.Spec.Workers))
	binary.LittleEndian.PutUint32(b[12:], param)
	binary.LittleEndian.PutUint64(b[16:], uint64(h.Elements))
	binary.LittleEndian.PutUint64(b[24:], uint64(h.Base))
	if v >= 2 {
		binary.LittleEndian.PutUint32(b[36:], math.Float32bits(h.Scale))
	}
	binary.LittleEndian.PutUint32(b[32:], headerCRC(b, v))
	return b, nil
}

// headerCRC is the header checksum of version v: CRC-32 (IEEE) of bytes
// 0-31, and from version 2 on of bytes 36-39 too.
func headerCRC(b []byte, v int) uint32 {
	c := crc32.ChecksumIEEE(b[:32])
	if v >= 2 {
		c = crc32.Update(c, crc32.IEEETable, b[36:40])
	}
	return c
}

// UnmarshalBinary decodes and validates a header line.
func (h *Header) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderBytes {
		return fmt.Errorf("header is %d bytes, want %d", len(b), HeaderBytes)
	}
	if string(b[:4]) != Magic {
		return fmt.Errorf("bad magic %q, want %q (not a payload file?)", b[:4], Magic)
	}
	v := int(binary.LittleEndian.Uint16(b[4:]))
	if v < 1 || v > Version {
		return fmt.Errorf("unsupported version %d, want 1 to %d", v, Version)
	}
	if got, want := binary.LittleEndian.Uint32(b[32:]), headerCRC(b, v); got != want {
		return fmt.Errorf("header checksum %08x, computed %08x (corrupt header)", got, want)
	}
	reserved := 36
	if v >= 2 {
		reserved = 40
	}
	if b[9] != 0 || !bytes.Equal(b[reserved:HeaderBytes], make([]byte, HeaderBytes-reserved)) {
		return errors.New("reserved header bytes are not zero")
	}
	var s lowbit.Spec
	s.Layout = lowbit.Layout(b[6])
	f, ok := formatOfCode(b[7])
	if !ok {
		return fmt.Errorf("unknown format %d (want %s)", b[7], formatCodeList())
	}
	if want := VersionOf(f); v != want {
		return fmt.Errorf("format %v is written as version %d, the header says %d", f, want, v)
	}
	s.Format = f
	var scale float32
	if v >= 2 {
		scale = math.Float32frombits(binary.LittleEndian.Uint32(b[36:]))
	}
	s.Workers = int(binary.LittleEndian.Uint16(b[10:]))
	param := binary.LittleEndian.Uint32(b[12:])
	kind := lowbit.GateKind(b[8])
	if s.Format == lowbit.Ternary {
		s.Gate.Kind = kind
		if param > 1<<16 {
			return fmt.Errorf("gate parameter %d out of range", param)
		}
		switch kind {
		case lowbit.GatePattern:
			s.Gate.Period = int(param)
		case lowbit.GateMargin:
			s.Gate.Threshold = int(param)
		default:
			if param != 0 {
				return fmt.Errorf("gate %v takes no parameter, header has %d", kind, param)
			}
		}
	} else if kind != 0 || param != 0 {
		return fmt.Errorf("format %v has no gate, header has kind %d parameter %d", s.Format, kind, param)
	}
	n := binary.LittleEndian.Uint64(b[16:])
	base := binary.LittleEndian.Uint64(b[24:])
	if n > MaxElements {
		return fmt.Errorf("element count %d out of range [0, %d]", n, int64(MaxElements))
	}
	if base > 1<<62 {
		return fmt.Errorf("base index %d out of range", base)
	}
	hh := Header{Spec: s, Elements: int64(n), Base: int64(base), Scale: scale}
	if err := hh.Validate(); err != nil {
		return err
	}
	*h = hh
	return nil
}

// File is a payload held in memory.
type File struct {
	Header
	// Signs is the sign data, SectionBytes long (nil for Int8 and BFP8).
	Signs []byte
	// Gates is the gate data for the worker gate, else nil.
	Gates []byte
	// Codes is Int8's or BFP8's code data, SectionBytes long, and Exps
	// BFP8's exponent data, ExpBytes long (else nil).
	Codes, Exps []byte
}

// Payload returns the file's data as the host runtime's payload (sharing
// the bytes): the layout, the software reduction and the slabs live there.
func (f *File) Payload() *host.Payload {
	return &host.Payload{Spec: f.Spec, Elements: int(f.Elements), Base: int(f.Base), Signs: f.Signs, Gates: f.Gates,
		Codes: f.Codes, Exps: f.Exps, Scale: f.Scale}
}

// Encode packs W workers' FP32 gradients (g[k] is worker k's, all the same
// length) into a payload under h.Spec, through host.Encode. For the worker
// gate, tau is the magnitude threshold each worker's gate bits use
// (|g| > tau). h.Elements is set from g. A NaN or Inf is an error naming
// the worker and element.
func Encode(h Header, g [][]float32, tau float32) (*File, error) {
	if len(g) > 0 {
		h.Elements = int64(len(g[0]))
	}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	p, err := host.Encode(h.Spec, int(h.Base), g, tau)
	if err != nil {
		return nil, err
	}
	h.Scale = p.Scale
	return &File{Header: h, Signs: p.Signs, Gates: p.Gates, Codes: p.Codes, Exps: p.Exps}, nil
}

// WriteTo writes the file.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	hb, err := f.Header.MarshalBinary()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, part := range [][]byte{hb, f.Signs, f.Gates, f.Codes, f.Exps} {
		n, err := w.Write(part)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Read reads and validates a whole payload file of the given size (as
// reported by Stat; it must match the header exactly).
func Read(r io.Reader, size int64) (*File, error) {
	hb := make([]byte, HeaderBytes)
	if _, err := io.ReadFull(r, hb); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("file is %d bytes, shorter than the %d-byte header", size, HeaderBytes)
		}
		return nil, err
	}
	var h Header
	if err := h.UnmarshalBinary(hb); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if want := h.FileBytes(); size != want {
		return nil, fmt.Errorf("file is %d bytes, header describes %d (%d workers, %d elements, %v)", size, want, h.Spec.Workers, h.Elements, h.Spec.Layout)
	}
	f := &File{Header: h}
	if h.Spec.Format.Sum() {
		f.Codes = make([]byte, h.SectionBytes())
		if _, err := io.ReadFull(r, f.Codes); err != nil {
			return nil, fmt.Errorf("code data: %w", err)
		}
		if n := h.ExpBytes(); n > 0 {
			f.Exps = make([]byte, n)
			if _, err := io.ReadFull(r, f.Exps); err != nil {
				return nil, fmt.Errorf("exponent data: %w", err)
			}
		}
		if err := f.Check(); err != nil {
			return nil, err
		}
		return f, nil
	}
	f.Signs = make([]byte, h.SectionBytes())
	if _, err := io.ReadFull(r, f.Signs); err != nil {
		return nil, fmt.Errorf("sign data: %w", err)
	}
	if h.Spec.GateBits() {
		f.Gates = make([]byte, h.SectionBytes())
		if _, err := io.ReadFull(r, f.Gates); err != nil {
			return nil, fmt.Errorf("gate data: %w", err)
		}
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	return f, nil
}

// Check rejects non-zero bits outside the payload: past element n, and in
// packet bits at or above W. A writer that sets them is broken, and
// silently ignoring them would hide it. Read calls it; callers that build
// a File from other sources (headerless packets) call it themselves.
func (f *File) Check() error { return f.Payload().Check() }

// Counts returns the sign count c of every element (for the worker gate,
// the count of gated-on positive votes is not what this returns: it counts
// sign bits only, as the controller's count view does).
func (f *File) Counts() []uint16 { return f.Payload().Counts() }

// Vote returns the aggregate u (G-Binary) or m*u (G-Ternary) of every
// element under spec s, which must match the file's layout and workers;
// its format and gate may differ from the header's (a G-Binary payload can
// be read as G-Ternary under a positional or margin gate), but the worker
// gate needs gate bits in the file.
func (f *File) Vote(s lowbit.Spec) ([]int8, error) {
	u, err := f.Payload().Vote(s)
	if errors.Is(err, host.ErrNoGateBits) {
		return nil, errors.New("the worker gate needs gate bits, and this file has none (encode it with --gate worker)")
	}
	return u, err
}
