package payload

import (
	"errors"
	"fmt"
	"io"

	"github.com/neuronfabric/nfabric/host"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Source fills dst with worker k's gradients of elements [off, off+len(dst)).
type Source func(k int, off int64, dst []float32) error

// chunkAlign is the element granularity of a streamed chunk: a whole line
// of element-major packets (64 elements) and of a worker-major plane (512).
const chunkAlign = 8 * lowbit.LineBytes

// EncodeStream writes the file that Encode(h, g, tau) followed by WriteTo
// would write, byte for byte, reading the h.Elements gradients of each
// worker from src in chunks of about chunk elements (rounded up to a whole
// number of payload lines), so that memory is bounded by the chunk, not
// the file. Each chunk is encoded by host.Encode: element-major the
// workers' chunk is gathered into packets, worker-major one worker's chunk
// becomes its slab's next lines. With gate bits the input is read twice
// (the sign section precedes the gate section). progress, when not nil,
// is called with the bytes written so far. A NaN or Inf is an error
// naming the worker and the element (its index in the whole input).
//
// Int8 and BFP8 are written worker after worker, as their files hold
// them: Int8 reads the input once more first, for the workers' scale
// agreement (the header carries the scale); BFP8 reads it twice, its code
// section and then its exponent section.
func EncodeStream(w io.Writer, h Header, src Source, tau float32, chunk int, progress func(done, total int64)) error {
	c := max(chunkAlign, (chunk+chunkAlign-1)/chunkAlign*chunkAlign)
	e := &streamer{w: w, h: h, src: src, tau: tau, chunk: c, progress: progress, done: HeaderBytes}
	if h.Spec.Format.Scaled() {
		if err := e.agreeScale(); err != nil {
			return err
		}
		h.Scale = h.Spec.Format.AgreedScale(e.maxAbs)
		e.h.Scale = h.Scale
	}
	hb, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	if h.Spec.Format.Sum() {
		if h.Elements == 0 {
			return e.emit(nil) // nothing to write but the header: report it
		}
		for _, exps := range []bool{false, true} {
			if exps && !h.Spec.Format.BlockExponents() {
				break
			}
			for k := range h.Spec.Workers {
				if err := e.sumSection(k, exps); err != nil {
					return err
				}
			}
		}
		return nil
	}
	sections := []bool{false}
	if h.Spec.GateBits() {
		sections = append(sections, true)
	}
	for _, gates := range sections {
		if h.Spec.Layout == lowbit.ElementMajor {
			err = e.section(h.Spec, nil, gates)
		} else {
			one := h.Spec
			one.Workers = 1
			for k := range h.Spec.Workers {
				if err = e.section(one, []int{k}, gates); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type streamer struct {
	w        io.Writer
	h        Header
	src      Source
	tau      float32
	chunk    int
	progress func(done, total int64)
	done     int64
	bufs     [][]float32
	maxAbs   float32 // Int8: the workers' agreed max |g|
}

// agreeScale is Int8's first pass: the largest lowbit.MaxAbs over every
// worker's chunks, into e.maxAbs.
func (e *streamer) agreeScale() error {
	n := e.h.Elements
	for k := range e.h.Spec.Workers {
		for off := int64(0); off < n; off += int64(e.chunk) {
			g, err := e.read([]int{k}, off, int(min(int64(e.chunk), n-off)))
			if err != nil {
				return err
			}
			m, _ := lowbit.MaxAbs(g[0]) // finite: read checked it
			e.maxAbs = max(e.maxAbs, m)
		}
	}
	return nil
}

// sumSection writes worker k's code slab (or, exps, its BFP8 exponent
// slab) chunk by chunk: each chunk encoded by one worker's host.Payload
// (at the agreed scale for Int8), its exponents concatenated and the slab
// padded to a whole line at the end.
func (e *streamer) sumSection(k int, exps bool) error {
	n := e.h.Elements
	one := lowbit.Spec{Workers: 1, Layout: lowbit.WorkerMajor, Format: e.h.Spec.Format}
	var wrote int64
	for off := int64(0); off < n; off += int64(e.chunk) {
		m := int(min(int64(e.chunk), n-off))
		g, err := e.read([]int{k}, off, m)
		if err != nil {
			return err
		}
		p, err := host.NewPayload(one, m, int(e.h.Base+off))
		if err != nil {
			return err
		}
		if one.Format.Scaled() {
			if err := p.AgreeScale(e.maxAbs); err != nil {
				return err
			}
		}
		if err := p.EncodeWorker(0, g[0], 0); err != nil {
			return fmt.Errorf("worker %d: %w", k, err)
		}
		b := p.Codes
		if exps {
			b = p.Exps[:lowbit.BFPBlocks(m)]
		}
		if err := e.emit(b); err != nil {
			return err
		}
		wrote += int64(len(b))
	}
	if exps {
		return e.emit(make([]byte, int64(lowbit.Lines(int(wrote)))*lowbit.LineBytes-wrote))
	}
	return nil
}

// emit writes b and reports progress.
func (e *streamer) emit(b []byte) error {
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.done += int64(len(b))
	if e.progress != nil {
		e.progress(e.done, e.h.FileBytes())
	}
	return nil
}

// read returns the workers ks' gradients of elements [off, off+m), each
// checked finite (a NaN or Inf names its index in the whole input).
func (e *streamer) read(ks []int, off int64, m int) ([][]float32, error) {
	if len(e.bufs) < len(ks) {
		e.bufs = make([][]float32, len(ks))
	}
	g := make([][]float32, len(ks))
	for i, k := range ks {
		if cap(e.bufs[i]) < m {
			e.bufs[i] = make([]float32, e.chunk)
		}
		g[i] = e.bufs[i][:m]
		if err := e.src(k, off, g[i]); err != nil {
			return nil, fmt.Errorf("worker %d: %w", k, err)
		}
		if err := lowbit.CheckFinite(g[i]); err != nil {
			var nf *lowbit.NonFiniteError
			if errors.As(err, &nf) {
				err = &lowbit.NonFiniteError{Index: nf.Index + int(off), Value: nf.Value}
			}
			return nil, fmt.Errorf("worker %d: %w", k, err)
		}
	}
	return g, nil
}

// section writes the sign (or gate) data of the workers ks (nil: all of
// them, gathered into packets) chunk by chunk under s.
func (e *streamer) section(s lowbit.Spec, ks []int, gates bool) error {
	if ks == nil {
		ks = make([]int, s.Workers)
		for k := range ks {
			ks[k] = k
		}
	}
	n := e.h.Elements
	if n == 0 {
		return e.write(s, ks, 0, 0, gates)
	}
	for off := int64(0); off < n; off += int64(e.chunk) {
		if err := e.write(s, ks, off, int(min(int64(e.chunk), n-off)), gates); err != nil {
			return err
		}
	}
	return nil
}

func (e *streamer) write(s lowbit.Spec, ks []int, off int64, m int, gates bool) error {
	g, err := e.read(ks, off, m)
	if err != nil {
		return err
	}
	p, err := host.Encode(s, int(e.h.Base+off), g, e.tau)
	if err != nil {
		return err
	}
	b := p.Signs
	if gates {
		b = p.Gates
	}
	return e.emit(b)
}
