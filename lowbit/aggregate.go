package lowbit

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// Lane constants for SWAR arithmetic on eight byte lanes of a uint64.
const (
	lanes01 = 0x0101010101010101
	lanes55 = 0x5555555555555555
	lanes33 = 0x3333333333333333
	lanes0f = 0x0f0f0f0f0f0f0f0f
	lanes08 = 0x0808080808080808
	lanes10 = 0x1010101010101010
)

// popcount8 counts the set bits of each byte lane of x.
func popcount8(x uint64) uint64 {
	x -= (x >> 1) & lanes55
	x = x&lanes33 + (x>>2)&lanes33
	return (x + x>>4) & lanes0f
}

// patternByteMask[p][o] has byte lane q = 0xFF unless element o+q is zeroed
// by the period-p pattern, i.e. (o+q) mod p == p-1. patternBitMask[p][o] is
// the same for 64 one-bit lanes.
var (
	patternByteMask [65][64]uint64
	patternBitMask  [65][64]uint64
)

func init() {
	for p := 2; p <= 64; p++ {
		for o := range p {
			var bm, bb uint64
			for q := range 64 {
				if (o+q)%p != p-1 {
					bb |= 1 << q
					if q < 8 {
						bm |= 0xff << (8 * q)
					}
				}
			}
			patternByteMask[p][o] = bm
			patternBitMask[p][o] = bb
		}
	}
}

// checkSpec validates s and the slice shapes shared by the vote kernels.
func checkSpec(s Spec, l Layout, base int) error {
	if s.Layout != l {
		return fmt.Errorf("spec layout is %v, kernel wants %v", s.Layout, l)
	}
	if base < 0 {
		return fmt.Errorf("negative base element index %d", base)
	}
	if !s.Format.Vote() {
		return fmt.Errorf("format %v has no sign vote", s.Format)
	}
	return s.Validate()
}

// CountPacket writes the sign counts of element-major packets: dst[i] =
// PopCount(src[i] & (1<<w - 1)), the byte-level count c the paper's
// functional test checks. Bits at or above w are ignored. w is 1 to 8 and
// dst must be as long as src.
func CountPacket(dst, src []byte, w int) {
	if w < 1 || w > MaxPacketWorkers || len(dst) < len(src) {
		panic("lowbit: CountPacket: bad arguments")
	}
	kernels.countPacket(dst, src, w)
}

func countPacketGeneric(dst, src []byte, w int) {
	mask := uint64(byte(1<<w-1)) * lanes01
	n8 := len(src) &^ 7
	for i := 0; i < n8; i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		binary.LittleEndian.PutUint64(dst[i:], popcount8(x&mask))
	}
	for i := n8; i < len(src); i++ {
		dst[i] = byte(popcount8(uint64(src[i]) & mask))
	}
}

// VotePacket aggregates element-major packets into one int8 per element:
// the G-Binary update u = sgn(2c - W) or the G-Ternary value m*u, as +1, 0
// or -1. base is the flattened index of element src[0] (the pattern gate
// depends on it). gates holds the per-worker gate packets for GateWorker
// and is ignored otherwise. dst must be as long as signs.
func VotePacket(dst []int8, signs, gates []byte, s Spec, base int) error {
	if err := checkSpec(s, ElementMajor, base); err != nil {
		return err
	}
	if len(dst) < len(signs) {
		return fmt.Errorf("vote: dst has %d elements, want %d", len(dst), len(signs))
	}
	if s.GateBits() {
		if len(gates) < len(signs) {
			return fmt.Errorf("vote: %d gate bytes for %d sign bytes", len(gates), len(signs))
		}
		votePacketWorkerGate(dst, signs, gates, s.Workers)
		return nil
	}
	kernels.votePacket(dst, signs, s, base)
	return nil
}

// packetKeep returns, for 8 lanes of counts c, the lanes kept by a margin
// gate: |2c - W| >= t, i.e. c >= ceil((W+t)/2) or c <= floor((W-t)/2).
func packetKeep(c uint64, w, t int) uint64 {
	var keep uint64
	if hi := (w + t + 1) / 2; hi <= 8 {
		keep |= ((c + uint64(8-hi)*lanes01) & lanes08) >> 3
	}
	if lo := w - t; lo >= 0 {
		lo /= 2
		keep |= (^(c + uint64(8-(lo+1))*lanes01) & lanes08) >> 3
	}
	return keep * 0xff
}

func votePacketGeneric(dst []int8, src []byte, s Spec, base int) {
	w := s.Workers
	mask := uint64(byte(1<<w-1)) * lanes01
	posAdd := uint64(7-w/2) * lanes01     // c + 7 - floor(W/2) >= 8  <=>  2c > W
	negAdd := uint64(8-(w+1)/2) * lanes01 // c + 8 - ceil(W/2) < 8    <=>  2c < W
	ternary := s.Format == Ternary
	p := s.Gate.period()
	pattern := ternary && s.Gate.Kind == GatePattern
	margin := ternary && s.Gate.Kind == GateMargin
	o := 0
	if pattern {
		o = base % p
	}
	n8 := len(src) &^ 7
	word := func(x uint64) uint64 {
		c := popcount8(x & mask)
		pos := ((c + posAdd) & lanes08) >> 3
		neg := (^(c + negAdd) & lanes08) >> 3
		v := pos | neg*0xff
		if pattern {
			v &= patternByteMask[p][o]
			o = (o + 8) % p
		} else if margin {
			v &= packetKeep(c, w, s.Gate.Threshold)
		}
		return v
	}
	for i := 0; i < n8; i += 8 {
		v := word(binary.LittleEndian.Uint64(src[i:]))
		for q := range 8 {
			dst[i+q] = int8(v >> (8 * q))
		}
	}
	if n8 < len(src) {
		var buf [8]byte
		copy(buf[:], src[n8:])
		v := word(binary.LittleEndian.Uint64(buf[:]))
		for q := range len(src) - n8 {
			dst[n8+q] = int8(v >> (8 * q))
		}
	}
}

// votePacketWorkerGate is the GateWorker extension: only workers whose gate
// bit is set vote, and u = sgn(P - N) over them.
func votePacketWorkerGate(dst []int8, signs, gates []byte, w int) {
	mask := uint64(byte(1<<w-1)) * lanes01
	word := func(s, g uint64) uint64 {
		g &= mask
		pc := popcount8(s & g)
		nc := popcount8(^s & g)
		d := pc + 8*lanes01 - nc // P - N + 8, in [0, 16] per lane
		pos := ((d + 7*lanes01) & lanes10) >> 4
		neg := (^(d + 8*lanes01) & lanes10) >> 4
		return pos | neg*0xff
	}
	n8 := len(signs) &^ 7
	for i := 0; i < n8; i += 8 {
		v := word(binary.LittleEndian.Uint64(signs[i:]), binary.LittleEndian.Uint64(gates[i:]))
		for q := range 8 {
			dst[i+q] = int8(v >> (8 * q))
		}
	}
	if n8 < len(signs) {
		var sb, gb [8]byte
		copy(sb[:], signs[n8:])
		copy(gb[:], gates[n8:])
		v := word(binary.LittleEndian.Uint64(sb[:]), binary.LittleEndian.Uint64(gb[:]))
		for q := range len(signs) - n8 {
			dst[n8+q] = int8(v >> (8 * q))
		}
	}
}

// CountPlanes writes the sign count of each of n elements over the
// worker-major bit-planes: dst[i] = sum over k of bit i of planes[k].
// Every plane must hold PlaneBytes(n) bytes and dst n values.
func CountPlanes(dst []uint16, planes [][]byte, n int) {
	if len(dst) < n {
		panic("lowbit: CountPlanes: dst too short")
	}
	kernels.countPlanes(dst[:n], planes, n)
}

// spread16[b] spreads the bits of b into 16-bit lanes: bit q of b is lane
// q mod 4 of word q / 4, so adding spreads counts 8 elements at once.
var spread16 [256][2]uint64

func init() {
	for b := range 256 {
		for q := range 8 {
			spread16[b][q/4] |= uint64(b>>q&1) << (16 * (q % 4))
		}
	}
}

// countBlock is how many plane bytes countPlanesGeneric sums over all
// workers before it writes them out, so the counters stay in L1.
const countBlock = 256

func countPlanesGeneric(dst []uint16, planes [][]byte, n int) {
	dst = dst[:n]
	full := n / 8
	var acc [countBlock][2]uint64 // 16-bit lanes: counts <= MaxWorkers fit
	for j0 := 0; j0 < full; j0 += countBlock {
		j1 := min(j0+countBlock, full)
		a := acc[:j1-j0]
		clear(a)
		for _, p := range planes {
			p = p[j0:j1]
			a := a[:len(p)]
			for j, b := range p {
				sp := &spread16[b]
				a[j][0] += sp[0]
				a[j][1] += sp[1]
			}
		}
		for j := range a {
			d := dst[8*(j0+j) : 8*(j0+j)+8]
			lo, hi := a[j][0], a[j][1]
			d[0], d[1], d[2], d[3] = uint16(lo), uint16(lo>>16), uint16(lo>>32), uint16(lo>>48)
			d[4], d[5], d[6], d[7] = uint16(hi), uint16(hi>>16), uint16(hi>>32), uint16(hi>>48)
		}
	}
	if r := n - 8*full; r > 0 {
		d := dst[8*full:]
		clear(d)
		for _, p := range planes {
			b := p[full]
			for q := range d {
				d[q] += uint16(b >> q & 1)
			}
		}
	}
}

// VotePlanes aggregates worker-major bit-planes of n elements into two
// result bit-planes in the same layout: nz (the update is not zero) and pos
// (the update is +1). An element is +1 when pos and nz are set, -1 when
// only nz is set, and 0 when neither is; pos is never set without nz.
// base is the flattened index of element 0. gates holds one gate plane per
// worker for GateWorker and is ignored otherwise. The number of workers is
// s.Workers == len(signs).
func VotePlanes(pos, nz []byte, signs, gates [][]byte, n int, s Spec, base int) error {
	if err := checkSpec(s, WorkerMajor, base); err != nil {
		return err
	}
	nb := PlaneBytes(n)
	if len(signs) != s.Workers {
		return fmt.Errorf("vote: %d sign planes for %d workers", len(signs), s.Workers)
	}
	for k, p := range signs {
		if len(p) < nb {
			return fmt.Errorf("vote: worker %d plane has %d bytes, want %d", k, len(p), nb)
		}
	}
	if s.GateBits() {
		if len(gates) != s.Workers {
			return fmt.Errorf("vote: %d gate planes for %d workers", len(gates), s.Workers)
		}
		for k, p := range gates {
			if len(p) < nb {
				return fmt.Errorf("vote: worker %d gate plane has %d bytes, want %d", k, len(p), nb)
			}
		}
	}
	if len(pos) < nb || len(nz) < nb {
		return fmt.Errorf("vote: result planes hold %d and %d bytes, want %d", len(pos), len(nz), nb)
	}
	kernels.votePlanes(pos[:nb], nz[:nb], signs, gates, n, s, base)
	return nil
}

// planeWord loads 64 elements of a plane starting at byte j, zero-padding
// past the end.
func planeWord(p []byte, j, nb int) uint64 {
	if j+8 <= nb {
		return binary.LittleEndian.Uint64(p[j:])
	}
	var buf [8]byte
	copy(buf[:], p[j:nb])
	return binary.LittleEndian.Uint64(buf[:])
}

func putPlaneWord(p []byte, j, nb int, v uint64) {
	if j+8 <= nb {
		binary.LittleEndian.PutUint64(p[j:], v)
		return
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	copy(p[j:nb], buf[:])
}

// maxSlices is the width of a bit-sliced counter: counts up to MaxWorkers.
const maxSlices = 11

// bitCounter is a bit-sliced counter of 64 lanes: lane q counts
// sum over b of ((s[b] >> q) & 1) << b.
type bitCounter struct {
	s [maxSlices]uint64
	n int // slices in use
}

func (c *bitCounter) reset(w int) {
	c.n = 1
	for (1 << c.n) <= w {
		c.n++
	}
	clear(c.s[:c.n])
}

// add adds the one-bit lanes of x.
func (c *bitCounter) add(x uint64) {
	for b := 0; x != 0 && b < c.n; b++ {
		c.s[b], x = c.s[b]^x, c.s[b]&x
	}
}

// gt returns the lanes whose count is greater than k (k >= 0).
func (c *bitCounter) gt(k int) uint64 {
	if k >= 1<<c.n {
		return 0
	}
	var gt uint64
	eq := ^uint64(0)
	for b := c.n - 1; b >= 0; b-- {
		if k>>b&1 == 0 {
			gt |= eq & c.s[b]
			eq &^= c.s[b]
		} else {
			eq &= c.s[b]
		}
	}
	return gt
}

// gtCounter returns the lanes where a > b, for counters of equal width.
func gtCounter(a, b *bitCounter) uint64 {
	var gt uint64
	eq := ^uint64(0)
	for i := a.n - 1; i >= 0; i-- {
		gt |= eq & a.s[i] &^ b.s[i]
		eq &^= a.s[i] ^ b.s[i]
	}
	return gt
}

func votePlanesGeneric(pos, nz []byte, signs, gates [][]byte, n int, s Spec, base int) {
	w := s.Workers
	nb := PlaneBytes(n)
	ternary := s.Format == Ternary
	p := s.Gate.period()
	pattern := ternary && s.Gate.Kind == GatePattern
	margin := ternary && s.Gate.Kind == GateMargin
	workerGate := ternary && s.Gate.Kind == GateWorker
	o := 0
	if pattern {
		o = base % p
	}
	var c, cn bitCounter
	j0 := 0
	if w == 8 && !margin && !workerGate {
		// Whole words through the carry-save tree, with the positional
		// gate's bit stream ANDed in the same pass.
		j0 = nb &^ 7
		if pattern {
			stream, chunk := planeMaskStream(p, o)
			for j := 0; j < j0; j += chunk {
				e := min(j+chunk, j0)
				vote8Words(pos[j:e], nz[j:e], signs, j, stream[:e-j])
			}
			o = (base + 8*j0) % p
		} else {
			vote8Words(pos[:j0], nz[:j0], signs, 0, nil)
		}
	}
	for j := j0; j < nb; j += 8 {
		var up, un uint64 // lanes with update +1 and -1
		switch {
		case workerGate:
			c.reset(w)
			cn.reset(w)
			for k := range w {
				x := planeWord(signs[k], j, nb)
				g := planeWord(gates[k], j, nb)
				c.add(x & g)
				cn.add(^x & g)
			}
			up = gtCounter(&c, &cn)
			un = gtCounter(&cn, &c)
		default:
			c.reset(w)
			for k := range w {
				c.add(planeWord(signs[k], j, nb))
			}
			up = c.gt(w / 2)        // 2c > W
			un = ^c.gt((w+1)/2 - 1) // 2c < W
			if margin {
				t := s.Gate.Threshold
				var keep uint64
				if hi := (w + t + 1) / 2; hi >= 1 {
					keep |= c.gt(hi - 1)
				}
				if lo := w - t; lo >= 0 {
					keep |= ^c.gt(lo / 2)
				}
				up &= keep
				un &= keep
			}
		}
		if pattern {
			m := patternBitMask[p][o]
			up &= m
			un &= m
			o = (o + 64) % p
		}
		putPlaneWord(pos, j, nb, up)
		putPlaneWord(nz, j, nb, up|un)
	}
	// Clear the bits past n in the last byte.
	if r := n % 8; r != 0 {
		pos[nb-1] &= byte(1<<r - 1)
		nz[nb-1] &= byte(1<<r - 1)
	}
}

// planesChunk is how many result bytes the AVX2 W=8 plane kernel writes
// per call (the planes' pointers are advanced between calls).
const planesChunk = 4096

// planeMaskStreams[p] holds the positional gate of period p as bit streams
// for whole result-plane words, one per pattern offset o < p: bit i (LSB
// first) of stream o is 0 when (o+i) mod p == p-1, else 1. A stream is
// planeMaskChunk(p) bytes, a multiple of 32 and of p, so 8 chunk bits are
// a whole number of periods: a run of chunks that starts at offset o ANDs
// every chunk with stream o. Built on first use (at most 64 x 4 KiB).
var planeMaskStreams [65]atomic.Pointer[[][]byte]

// planeMaskStream returns stream o of period p and its length in bytes.
func planeMaskStream(p, o int) (stream []byte, chunk int) {
	if s := planeMaskStreams[p].Load(); s != nil {
		return (*s)[o], len((*s)[o])
	}
	chunk = gateChunk(p)
	all := make([][]byte, p)
	for off := range p {
		s := make([]byte, chunk)
		q := off
		for j := 0; j < chunk; j += 8 {
			binary.LittleEndian.PutUint64(s[j:], patternBitMask[p][q])
			q = (q + 64) % p
		}
		all[off] = s
	}
	planeMaskStreams[p].Store(&all)
	return all[o], chunk
}

// gateChunk is the chunk length (in bytes) of the positional gate's mask
// streams for period p: the least multiple of lcm(32, p) that is at least
// 4096, so a chunk is whole AVX2 vectors, whole periods of bytes (packets)
// and whole periods of bits (planes), and fits in L1 beside the data.
func gateChunk(p int) int {
	a, b := 32, p
	for b != 0 {
		a, b = b, a%b
	}
	l := 32 * p / a // lcm(32, p)
	return l * ((planesChunk + l - 1) / l)
}

// vote8Words is the majority of exactly eight planes over whole words,
// through a carry-save adder tree (count = b0 + 2 b1 + 4 b2 + 8 b3): pos
// and nz hold a multiple of 8 bytes, and word i reads the planes at byte
// off+i. When mask is not nil (the positional gate's bit stream, as long
// as pos) both results are ANDed with it in the same pass. A partial last
// word goes through the generic bit-sliced counter.
func vote8Words(pos, nz []byte, planes [][]byte, off int, mask []byte) {
	n := len(pos)
	nz = nz[:n]
	p0, p1, p2, p3 := planes[0][off:off+n], planes[1][off:off+n], planes[2][off:off+n], planes[3][off:off+n]
	p4, p5, p6, p7 := planes[4][off:off+n], planes[5][off:off+n], planes[6][off:off+n], planes[7][off:off+n]
	for j := 0; j+8 <= n; j += 8 {
		x0, x1, x2, x3 := le64(p0[j:]), le64(p1[j:]), le64(p2[j:]), le64(p3[j:])
		x4, x5, x6, x7 := le64(p4[j:]), le64(p5[j:]), le64(p6[j:]), le64(p7[j:])
		s1, c1 := fullAdd(x0, x1, x2)
		s2, c2 := fullAdd(x3, x4, x5)
		s3, c3 := fullAdd(s1, s2, x6)
		b0, h := s3^x7, s3&x7
		t, c4 := fullAdd(c1, c2, c3)
		b1, h2 := t^h, t&h
		b23 := c4 | h2 // b3 | b2
		up := c4&h2 | b23&(b1|b0)
		nzw := up | ^b23
		if mask != nil {
			m := le64(mask[j:])
			up, nzw = up&m, nzw&m
		}
		binary.LittleEndian.PutUint64(pos[j:], up)
		binary.LittleEndian.PutUint64(nz[j:], nzw)
	}
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func fullAdd(a, b, c uint64) (sum, carry uint64) {
	t := a ^ b
	return t ^ c, a&b | c&t
}

// Decode writes the FP32 update scale*u[i] for each aggregate value u[i] in
// {-1, 0, +1}. dst must be as long as u.
func Decode(dst []float32, u []int8, scale float32) {
	dst = dst[:len(u)]
	for i, v := range u {
		dst[i] = scale * float32(v)
	}
}

// DecodePlanes writes the FP32 update of n elements from result planes
// (see VotePlanes): scale * u as float32, so +scale, -scale, or scale * 0
// (a zero with the scale's sign); pos without nz is 0. It reads a nibble
// of each plane at a time from a 256-entry table of four updates built
// from the three values, so the loop is table loads and stores.
func DecodePlanes(dst []float32, pos, nz []byte, n int, scale float32) {
	dst = dst[:n]
	vals := [3]float32{scale * 0, scale * -1, scale * 1} // indexed z * (1 + p)
	full := n / 8
	if full >= 32 {
		var tab [256][4]float32 // tab[z | p<<4][q]: nibbles z of nz, p of pos
		for i := range tab {
			for q := range 4 {
				z, p := i>>q&1, i>>(4+q)&1
				tab[i][q] = vals[z*(1+p)]
			}
		}
		pos, nz := pos[:full], nz[:full]
		for j, z := range nz {
			p := pos[j]
			d := dst[8*j : 8*j+8 : 8*j+8]
			*(*[4]float32)(d[:4]) = tab[z&15|(p&15)<<4]
			*(*[4]float32)(d[4:]) = tab[z>>4|(p>>4)<<4]
		}
	} else {
		full = 0
	}
	for i := 8 * full; i < n; i++ {
		b := uint(i & 7)
		z := int(nz[i>>3] >> b & 1)
		p := int(pos[i>>3] >> b & 1)
		dst[i] = vals[z*(1+p)]
	}
}

// spread8[b] has byte q = bit q of b: eight elements of a plane as eight
// 0/1 bytes.
var spread8 [256]uint64

func init() {
	for b := range 256 {
		for q := range 8 {
			spread8[b] |= uint64(b>>q&1) << (8 * q)
		}
	}
}

// UnpackPlanes converts n elements of result planes to int8 values, eight
// at a time: with z and p the spread bytes of nz and pos, each byte lane is
// z&p (+1) or (z&^p)*0xFF (-1, as 0xFF), or 0.
func UnpackPlanes(dst []int8, pos, nz []byte, n int) {
	d := int8sAsBytes(dst[:n])
	full := n / 8
	for j, zb := range nz[:full] {
		z, p := spread8[zb], spread8[pos[j]]
		binary.LittleEndian.PutUint64(d[8*j:], z&p|(z&^p)*0xff)
	}
	for i := 8 * full; i < n; i++ {
		b := uint(i & 7)
		z := int8(nz[i>>3] >> b & 1)
		p := int8(pos[i>>3] >> b & 1)
		d[i] = byte(z * (2*p - 1))
	}
}
