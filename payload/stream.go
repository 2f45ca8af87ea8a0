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
func EncodeStream(w io.Writer, h Header, src Source, tau float32, chunk int, progress func(done, total int64)) error {
	hb, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	c := max(chunkAlign, (chunk+chunkAlign-1)/chunkAlign*chunkAlign)
	e := &streamer{w: w, h: h, src: src, tau: tau, chunk: c, progress: progress, done: HeaderBytes}
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
			return fmt.Errorf("worker %d: %w", k, err)
		}
		if err := lowbit.CheckFinite(g[i]); err != nil {
			var nf *lowbit.NonFiniteError
			if errors.As(err, &nf) {
				err = &lowbit.NonFiniteError{Index: nf.Index + int(off), Value: nf.Value}
			}
			return fmt.Errorf("worker %d: %w", k, err)
		}
	}
	p, err := host.Encode(s, int(e.h.Base+off), g, e.tau)
	if err != nil {
		return err
	}
	b := p.Signs
	if gates {
		b = p.Gates
	}
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	e.done += int64(len(b))
	if e.progress != nil {
		e.progress(e.done, e.h.FileBytes())
	}
	return nil
}
