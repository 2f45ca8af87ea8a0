package host

import (
	"errors"
	"fmt"
	"math"

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
//
// An integer-sum payload (Spec.Format lowbit.Int8 or lowbit.BFP8, always
// worker-major) has no signs: Codes holds W code slabs, worker 0 first
// (byte i of slab k = worker k's int8 code, BFP8 mantissa, of element i,
// two's complement), each Lines() lines; for BFP8, Exps holds W exponent
// slabs (byte b = the worker's exponent of block b), each ExpLines()
// lines. Int8 carries the workers' agreed Scale.
type Payload struct {
	Spec     lowbit.Spec
	Elements int
	// Base is the flattened gradient index of element 0; the positional
	// gate depends on it.
	Base  int
	Signs []byte
	Gates []byte
	Codes []byte
	Exps  []byte
	// Scale is Int8's per-bucket scale, lowbit.Int8Scale of the largest
	// |g| over the workers (AgreeScale); 0 for the other formats.
	Scale float32
	// scaled: AgreeScale ran, so Int8 workers may encode.
	scaled bool

	// element-major: each worker's bit-planes before Seal gathers them
	// into packets (the runtime's gather, lowbit.PlanesToPacket).
	planes, gplanes [][]byte
}

// shape returns the controller region shape of a spec: gate slabs only
// when workers write gate bits; an integer-sum format's code (and
// exponent) slabs.
func shape(s lowbit.Spec) cxl.Region {
	r := cxl.Region{Workers: s.Workers, Layout: s.Layout}
	if s.GateBits() {
		r.Gate = s.Gate
	}
	if s.Format.Sum() {
		r.Sum = s.Format
	}
	return r
}

// sized returns shape(s) with the Size of n elements.
func sized(s lowbit.Spec, n int) cxl.Region {
	r := shape(s)
	r.Size = r.DataBytes(r.Lines(n))
	return r
}

// DataBytes returns the size of the data window of n elements under s:
// the sign slabs and, with gate bits, the gate slabs, or an integer-sum
// format's code and exponent slabs (what a payload file holds after its
// header, and a region's Size).
func DataBytes(s lowbit.Spec, n int) int64 {
	return int64(sized(s, n).Size)
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
	if s.Format.Sum() {
		r := sized(s, n)
		p.Codes = make([]byte, s.Workers*p.SlabBytes())
		p.Exps = make([]byte, s.Workers*r.ExpLines()*lowbit.LineBytes)
		if !s.Format.BlockExponents() {
			p.Exps = nil
		}
		return p, nil
	}
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
func (p *Payload) Lines() int { return shape(p.Spec).Lines(p.Elements) }

// ExpLines returns the lines of one BFP8 exponent slab: ceil(Lines()/64)
// (0 for the other formats).
func (p *Payload) ExpLines() int { return sized(p.Spec, p.Elements).ExpLines() }

// CodeSlab returns worker k's code slab of an integer-sum payload.
func (p *Payload) CodeSlab(k int) []byte {
	sb := p.SlabBytes()
	return p.Codes[k*sb : (k+1)*sb]
}

// ExpSlab returns worker k's exponent slab of a BFP8 payload.
func (p *Payload) ExpSlab(k int) []byte {
	eb := p.ExpLines() * lowbit.LineBytes
	return p.Exps[k*eb : (k+1)*eb]
}

// AgreeScale sets a scaled format's (Int8's) Scale from maxAbs, the
// largest lowbit.MaxAbs over the workers' gradients: the max-reduce the
// workers run before any of them encodes (lowbit.ScaleBits of traffic
// each). A maxAbs that is negative, NaN or Inf is an error.
func (p *Payload) AgreeScale(maxAbs float32) error {
	if !p.Spec.Format.Scaled() {
		return fmt.Errorf("payload: format %v has no scale to agree", p.Spec.Format)
	}
	if !(maxAbs >= 0 && maxAbs <= math.MaxFloat32) {
		return fmt.Errorf("payload: agreed max |g| %v is not a finite number >= 0", maxAbs)
	}
	p.Scale, p.scaled = p.Spec.Format.AgreedScale(maxAbs), true
	return nil
}

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
	if p.Spec.Format.Sum() {
		return p.encodeSum(k, g)
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

// encodeSum encodes worker k's gradient into its code (and exponent)
// slab with the format's lowbit.Format.EncodeCodes (at the agreed Scale
// for a scaled format); padding stays zero.
func (p *Payload) encodeSum(k int, g []float32) error {
	f := p.Spec.Format
	if p.Codes == nil {
		return fmt.Errorf("worker %d: the payload was not made by NewPayload", k)
	}
	if f.Scaled() && !p.scaled {
		return fmt.Errorf("worker %d: the %v scale is not agreed yet (AgreeScale)", k, f)
	}
	codes := lowbit.BytesInt8(p.CodeSlab(k))
	var exps []int8
	if f.BlockExponents() {
		exps = lowbit.BytesInt8(p.ExpSlab(k))
	}
	if err := f.EncodeCodes(codes, exps, g, p.Scale); err != nil {
		return err
	}
	if exps != nil {
		clear(exps[lowbit.BFPBlocks(len(g)):])
	}
	clear(codes[len(g):])
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
	if s.Format.Scaled() {
		var agreed float32
		for k := range g {
			m, err := lowbit.MaxAbs(g[k])
			if err != nil {
				return nil, fmt.Errorf("worker %d: %w", k, err)
			}
			agreed = max(agreed, m)
		}
		if err := p.AgreeScale(agreed); err != nil {
			return nil, err
		}
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
	if p.Spec.Format.Sum() {
		return p.checkSum()
	}
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

// checkSum rejects what no integer-sum encoder writes: a code or
// exponent of -128, a non-zero code past element n or exponent past the
// last block, a scale no agreement produces (lowbit.Format.CheckScale),
// and a non-zero code of a scaled format (Int8) under a zero scale (a scale of 0 means every
// gradient was 0, and the encoder then writes only zeros).
func (p *Payload) checkSum() error {
	if err := p.Spec.Format.CheckScale(p.Scale); err != nil {
		return err
	}
	n := p.Elements
	zeroScale := p.Spec.Format.Scaled() && p.Scale == 0
	for k := range p.Spec.Workers {
		for i, b := range p.CodeSlab(k) {
			switch {
			case i < n && b == 0x80:
				return fmt.Errorf("worker %d code %d is -128, which no encoder writes", k, i)
			case i < n && b != 0 && zeroScale:
				return fmt.Errorf("worker %d code %d is %d under a scale of 0, which the encoder writes only for all-zero gradients", k, i, int8(b))
			case i >= n && b != 0:
				return fmt.Errorf("worker %d code padding byte %d is not zero", k, i)
			}
		}
		if !p.Spec.Format.BlockExponents() {
			continue
		}
		nb := lowbit.BFPBlocks(n)
		for b, e := range p.ExpSlab(k) {
			switch {
			case b < nb && e == 0x80:
				return fmt.Errorf("worker %d exponent %d is -128, out of [%d, %d]", k, b, lowbit.BFPMinExp, lowbit.BFPMaxExp)
			case b >= nb && e != 0:
				return fmt.Errorf("worker %d exponent padding byte %d is not zero", k, b)
			}
		}
	}
	return nil
}

// Sum returns the software reduction of an integer-sum payload, with the
// controller's read transform (the format's lowbit.Format.SumCodes): the
// saturated int16 lane sums of every element and, for a format with block
// exponents (BFP8), the aligned exponent of every block (else nil).
func (p *Payload) Sum() (sums []int16, exps []int8, err error) {
	if !p.Spec.Format.Sum() {
		return nil, nil, fmt.Errorf("format %v is voted, not summed (Vote)", p.Spec.Format)
	}
	n, w := p.Elements, p.Spec.Workers
	codes := make([][]int8, w)
	for k := range codes {
		codes[k] = lowbit.BytesInt8(p.CodeSlab(k))[:n]
	}
	sums = make([]int16, n)
	var src [][]int8
	if p.Spec.Format.BlockExponents() {
		nb := lowbit.BFPBlocks(n)
		src = make([][]int8, w)
		for k := range src {
			src[k] = lowbit.BytesInt8(p.ExpSlab(k))[:nb]
		}
		exps = make([]int8, nb)
	}
	p.Spec.Format.SumCodes(sums, exps, codes, src)
	return sums, exps, nil
}

// Mean returns the workers' mean gradient decoded from Sum (the format's
// lowbit.Format.DecodeSums, at Scale for a scaled format): what an
// optimizer applies for an integer-sum bucket.
func (p *Payload) Mean() ([]float32, error) {
	sums, exps, err := p.Sum()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(sums))
	p.Spec.Format.DecodeSums(out, sums, exps, p.Scale, p.Spec.Workers)
	return out, nil
}

// ErrNoGateBits is Vote's error for a worker-gate spec on a payload
// encoded without gate bits.
var ErrNoGateBits = errors.New("the worker gate needs gate bits, and this payload has none (encode it with the worker gate)")

// Counts returns the sign count c of every element: how many workers'
// sign bits are set (gate bits are not looked at, as in the controller's
// element-major count view).
func (p *Payload) Counts() []uint16 {
	if p.Spec.Format.Sum() {
		return nil
	}
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
	if p.Spec.Format.Sum() || s.Format.Sum() {
		return nil, fmt.Errorf("format %v is summed, not voted (Sum)", p.Spec.Format)
	}
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
