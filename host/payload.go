package host

import (
	"errors"
	"fmt"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
)

// Payload is W workers' encoded payload of one bucket of n elements: the
// bytes of the bucket's region data window, in the layout of Spec.
//
// Signs holds the sign slabs: element-major one slab of packets (byte i,
// bit k = worker k's sign of element i), worker-major W slabs, worker 0
// first (byte j bit q = the sign of element 8j+q). Gates has the same
// shape and holds the gate bits when Spec.GateBits(), else it is nil.
// Each slab is Lines() lines; bytes past the payload are zero.
type Payload struct {
	Spec     lowbit.Spec
	Elements int
	// Base is the flattened gradient index of element 0; the positional
	// gate depends on it.
	Base  int
	Signs []byte
	Gates []byte

	// element-major: each worker's bit-planes before Seal gathers them
	// into packets (the runtime's gather, lowbit.PlanesToPacket).
	planes, gplanes [][]byte
}

// shape returns the controller region shape of a spec: gate slabs only
// when workers write gate bits.
func shape(s lowbit.Spec) cxl.Region {
	r := cxl.Region{Workers: s.Workers, Layout: s.Layout}
	if s.GateBits() {
		r.Gate = s.Gate
	}
	return r
}

// DataBytes returns the size of the data window of n elements under s:
// the sign slabs and, with gate bits, the gate slabs (what a payload file
// holds after its header, and a region's Size).
func DataBytes(s lowbit.Spec, n int) int64 {
	return int64(shape(s).DataBytes(s.Layout.Lines(n)))
}

// NewPayload returns a zeroed payload of n elements under s.
func NewPayload(s lowbit.Spec, n, base int) (*Payload, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if n < 0 || base < 0 {
		return nil, fmt.Errorf("payload: %d elements from base %d: want both >= 0", n, base)
	}
	p := &Payload{Spec: s, Elements: n, Base: base}
	half := DataBytes(s, n)
	if s.GateBits() {
		half /= 2
	}
	p.Signs = make([]byte, half)
	if s.GateBits() {
		p.Gates = make([]byte, half)
	}
	if s.Layout == lowbit.ElementMajor {
		p.planes = newPlanes(s.Workers, n)
		if p.Gates != nil {
			p.gplanes = newPlanes(s.Workers, n)
		}
	}
	return p, nil
}

// Lines returns the lines of one slab: the aggregate lines of the bucket.
func (p *Payload) Lines() int { return p.Spec.Layout.Lines(p.Elements) }

// SlabBytes returns the size of one slab: Lines() * 64.
func (p *Payload) SlabBytes() int { return p.Lines() * lowbit.LineBytes }

// SignSlab returns slab k of the signs: worker k's bit-plane slab
// worker-major; the packet slab element-major (k ignored).
func (p *Payload) SignSlab(k int) []byte { return slab(p.Signs, p.Spec.Layout, k, p.SlabBytes()) }

// GateSlab returns slab k of the gate bits (nil without gate bits).
func (p *Payload) GateSlab(k int) []byte {
	if p.Gates == nil {
		return nil
	}
	return slab(p.Gates, p.Spec.Layout, k, p.SlabBytes())
}

func slab(b []byte, l lowbit.Layout, k, sb int) []byte {
	if l != lowbit.WorkerMajor {
		k = 0
	}
	return b[k*sb : (k+1)*sb]
}

// EncodeWorker encodes worker k's gradient g (Elements long) into the
// payload: its sign bits and, with gate bits, its gate bits |g| > tau.
// Calls for different workers may run concurrently. A NaN or Inf returns a
// *lowbit.NonFiniteError; the payload is then unspecified. Element-major
// payloads need Seal after every worker has encoded.
func (p *Payload) EncodeWorker(k int, g []float32, tau float32) error {
	if k < 0 || k >= p.Spec.Workers {
		return fmt.Errorf("worker %d out of range [0, %d)", k, p.Spec.Workers)
	}
	if len(g) != p.Elements {
		return fmt.Errorf("worker %d: %d elements, the payload has %d", k, len(g), p.Elements)
	}
	signs, gates := p.workerPlanes(k)
	if signs == nil {
		return fmt.Errorf("worker %d: the payload was not made by NewPayload", k)
	}
	pb := lowbit.PlaneBytes(p.Elements)
	if err := lowbit.EncodeSigns(signs[:pb], g); err != nil {
		return err
	}
	clear(signs[pb:])
	if gates != nil {
		if err := lowbit.EncodeGates(gates[:pb], g, tau); err != nil {
			return err
		}
		clear(gates[pb:])
	}
	return nil
}

// workerPlanes returns where worker k's bit-planes go: its slabs
// worker-major, its planes element-major (a Payload built by hand, not by
// NewPayload, has none: it can be reduced but not encoded into).
func (p *Payload) workerPlanes(k int) (signs, gates []byte) {
	if p.Spec.Layout == lowbit.WorkerMajor {
		return p.SignSlab(k), p.GateSlab(k)
	}
	if p.planes == nil {
		return nil, nil
	}
	if p.gplanes != nil {
		gates = p.gplanes[k]
	}
	return p.planes[k], gates
}

func newPlanes(w, n int) [][]byte {
	pl := make([][]byte, w)
	for k := range pl {
		pl[k] = make([]byte, lowbit.PlaneBytes(n))
	}
	return pl
}

// Seal finishes an element-major payload: it gathers the workers'
// bit-planes into the paper's packets (bit k of byte i = worker k's bit of
// element i). Worker-major payloads are written as encoded; Seal does
// nothing there.
func (p *Payload) Seal() {
	if p.Spec.Layout == lowbit.WorkerMajor || p.planes == nil {
		return
	}
	n := p.Elements
	lowbit.PlanesToPacket(p.Signs[:n], p.planes, n)
	clear(p.Signs[n:])
	if p.Gates != nil {
		lowbit.PlanesToPacket(p.Gates[:n], p.gplanes, n)
		clear(p.Gates[n:])
	}
}

// Encode encodes W workers' gradients (g[k] is worker k's, all of one
// length) under s, with worker-gate threshold tau (|g| > tau), and seals
// the payload. A NaN or Inf is an error naming the worker and element.
func Encode(s lowbit.Spec, base int, g [][]float32, tau float32) (*Payload, error) {
	if len(g) != s.Workers {
		return nil, fmt.Errorf("%d workers of gradients for a %d-worker spec", len(g), s.Workers)
	}
	if len(g) == 0 {
		return nil, errors.New("no workers")
	}
	n := len(g[0])
	for k := range g {
		if len(g[k]) != n {
			return nil, fmt.Errorf("worker %d has %d elements, worker 0 has %d", k, len(g[k]), n)
		}
	}
	p, err := NewPayload(s, n, base)
	if err != nil {
		return nil, err
	}
	for k := range g {
		if err := p.EncodeWorker(k, g[k], tau); err != nil {
			return nil, fmt.Errorf("worker %d: %w", k, err)
		}
	}
	p.Seal()
	return p, nil
}

// Check rejects non-zero bits outside the payload: past element n, and in
// packet bits at or above W. A writer that sets them is broken, and
// silently ignoring them would hide it (the controller ignores them).
func (p *Payload) Check() error {
	if err := p.checkSection("sign", p.Signs); err != nil {
		return err
	}
	if p.Gates != nil {
		return p.checkSection("gate", p.Gates)
	}
	return nil
}

func (p *Payload) checkSection(what string, data []byte) error {
	n := p.Elements
	if p.Spec.Layout == lowbit.ElementMajor {
		mask := byte(0xff << p.Spec.Workers)
		if p.Spec.Workers == 8 {
			mask = 0
		}
		for i := range n {
			if data[i]&mask != 0 {
				return fmt.Errorf("%s byte %d sets bits for workers beyond W=%d", what, i, p.Spec.Workers)
			}
		}
		for i := n; i < len(data); i++ {
			if data[i] != 0 {
				return fmt.Errorf("%s padding byte %d is not zero", what, i)
			}
		}
		return nil
	}
	sb, nb := p.SlabBytes(), lowbit.PlaneBytes(n)
	for k := range p.Spec.Workers {
		pl := data[k*sb : (k+1)*sb]
		if r := n % 8; r != 0 && pl[nb-1]>>r != 0 {
			return fmt.Errorf("%s plane %d sets bits past element %d", what, k, n)
		}
		for i := nb; i < sb; i++ {
			if pl[i] != 0 {
				return fmt.Errorf("%s plane %d padding byte %d is not zero", what, k, i)
			}
		}
	}
	return nil
}

// ErrNoGateBits is Vote's error for a worker-gate spec on a payload
// encoded without gate bits.
var ErrNoGateBits = errors.New("the worker gate needs gate bits, and this payload has none (encode it with the worker gate)")

// Counts returns the sign count c of every element: how many workers'
// sign bits are set (gate bits are not looked at, as in the controller's
// element-major count view).
func (p *Payload) Counts() []uint16 {
	n := p.Elements
	out := make([]uint16, n)
	if p.Spec.Layout == lowbit.WorkerMajor {
		lowbit.CountPlanes(out, p.slabs(p.Signs), n)
		return out
	}
	c := make([]byte, n)
	lowbit.CountPacket(c, p.Signs[:n], p.Spec.Workers)
	for i, v := range c {
		out[i] = uint16(v)
	}
	return out
}

// slabs returns the worker-major payload's W slabs of b, each cut to the
// bit-plane's bytes.
func (p *Payload) slabs(b []byte) [][]byte {
	pb, sb := lowbit.PlaneBytes(p.Elements), p.SlabBytes()
	out := make([][]byte, p.Spec.Workers)
	for k := range out {
		out[k] = b[k*sb : k*sb+pb]
	}
	return out
}

// Vote returns the aggregate u (G-Binary) or m*u (G-Ternary) of every
// element under s, in software, with the same semantics as the
// controller's read transform. s must match the payload's layout and
// workers; its format and gate may differ from Spec's (a G-Binary payload
// can be read as G-Ternary under a positional or margin gate), but the
// worker gate needs gate bits.
func (p *Payload) Vote(s lowbit.Spec) ([]int8, error) {
	if s.Layout != p.Spec.Layout || s.Workers != p.Spec.Workers {
		return nil, fmt.Errorf("spec %v with %d workers does not match the payload's %v with %d", s.Layout, s.Workers, p.Spec.Layout, p.Spec.Workers)
	}
	if s.GateBits() && p.Gates == nil {
		return nil, ErrNoGateBits
	}
	n := p.Elements
	out := make([]int8, n)
	if s.Layout == lowbit.ElementMajor {
		var gates []byte
		if s.GateBits() {
			gates = p.Gates[:n]
		}
		if err := lowbit.VotePacket(out, p.Signs[:n], gates, s, p.Base); err != nil {
			return nil, err
		}
		return out, nil
	}
	var gates [][]byte
	if s.GateBits() {
		gates = p.slabs(p.Gates)
	}
	pb := lowbit.PlaneBytes(n)
	pos, nz := make([]byte, pb), make([]byte, pb)
	if err := lowbit.VotePlanes(pos, nz, p.slabs(p.Signs), gates, n, s, p.Base); err != nil {
		return nil, err
	}
	lowbit.UnpackPlanes(out, pos, nz, n)
	return out, nil
}
