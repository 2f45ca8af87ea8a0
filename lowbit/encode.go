package lowbit

import (
	"encoding/binary"
	"fmt"
	"math"
)

// PlaneBytes returns the bytes a bit-plane of n elements takes: ceil(n/8).
func PlaneBytes(n int) int { return (n + 7) / 8 }

// Lines returns how many 64-byte lines hold nbytes bytes: ceil(nbytes/64).
// It is the one round-up-to-lines helper; every package that sizes
// payloads in lines uses it.
func Lines[T ~int | ~int64 | ~uint64](nbytes T) T { return (nbytes + LineBytes - 1) / LineBytes }

// PaddedBytes returns nbytes rounded up to whole lines: Lines(nbytes) * 64.
func PaddedBytes[T ~int | ~int64 | ~uint64](nbytes T) T { return Lines(nbytes) * LineBytes }

// EncodeSigns writes the G-Binary bit-plane of g into dst, LSB first: bit
// j%8 of dst[j/8] is 1{g[j] > 0}. Zero, -0 and negative values encode as 0.
// Unused bits of the last byte are cleared; bytes past PlaneBytes(len(g))
// are not touched. dst must hold PlaneBytes(len(g)) bytes.
//
// A NaN or Inf in g returns a *NonFiniteError for the first one, and dst is
// then unspecified.
func EncodeSigns(dst []byte, g []float32) error {
	if len(dst) < PlaneBytes(len(g)) {
		panic("lowbit: EncodeSigns: dst too short")
	}
	if !kernels.encodeSigns(dst, g) {
		return CheckFinite(g)
	}
	return nil
}

// encodeSignsGeneric is the portable kernel behind EncodeSigns. It reports
// false if g holds a NaN or Inf. The sign test is branch-free on the IEEE
// bits x: x > 0 as an int32 exactly when g > 0 (and -0, 0x80000000, is
// negative), and x > 0 <=> the top bit of x | (x-1) is clear.
func encodeSignsGeneric(dst []byte, g []float32) bool {
	var bad uint32
	n8 := len(g) &^ 7
	for i := 0; i < n8; i += 8 {
		v := g[i : i+8 : i+8]
		var b uint32
		for k := 0; k < 8; k++ {
			x := math.Float32bits(v[k])
			bad |= (x&0x7f800000 + 0x00800000)
			b |= (((x | (x - 1)) >> 31) ^ 1) << k
		}
		dst[i>>3] = byte(b)
	}
	if n8 < len(g) {
		var b uint32
		for k, v := range g[n8:] {
			x := math.Float32bits(v)
			bad |= (x&0x7f800000 + 0x00800000)
			b |= (((x | (x - 1)) >> 31) ^ 1) << k
		}
		dst[n8>>3] = byte(b)
	}
	return bad>>31 == 0
}

// EncodeGates writes the gate bit-plane of g for GateWorker (an extension
// beyond the paper): bit j is 1{|g[j]| > tau}. tau must be finite and
// non-negative. Layout and errors are as for EncodeSigns.
func EncodeGates(dst []byte, g []float32, tau float32) error {
	if len(dst) < PlaneBytes(len(g)) {
		panic("lowbit: EncodeGates: dst too short")
	}
	if !(tau >= 0) || math.IsInf(float64(tau), 0) {
		return fmt.Errorf("gate threshold %v must be finite and non-negative", tau)
	}
	// |g| > tau on the IEEE bits: both sides are non-negative, where the
	// integer order of the bits is the float order; -0 becomes +0.
	if !kernels.encodeGates(dst, g, math.Float32bits(tau)&^(1<<31)) {
		return CheckFinite(g)
	}
	return nil
}

// encodeGatesGeneric is the portable kernel behind EncodeGates: bit j is
// 1{g[j]&0x7fffffff > tau} on the IEEE bits, i.e. the top bit of
// tau - |x|. It reports false if g holds a NaN or Inf.
func encodeGatesGeneric(dst []byte, g []float32, tau uint32) bool {
	var bad uint32
	n8 := len(g) &^ 7
	for i := 0; i < n8; i += 8 {
		v := g[i : i+8 : i+8]
		var b uint32
		for k := 0; k < 8; k++ {
			x := math.Float32bits(v[k]) &^ (1 << 31)
			bad |= x + 0x00800000
			b |= ((tau - x) >> 31) << k
		}
		dst[i>>3] = byte(b)
	}
	if n8 < len(g) {
		var b uint32
		for k, v := range g[n8:] {
			x := math.Float32bits(v) &^ (1 << 31)
			bad |= x + 0x00800000
			b |= ((tau - x) >> 31) << k
		}
		dst[n8>>3] = byte(b)
	}
	return bad>>31 == 0
}

// PackPacket writes the paper's element-major packets for len(g) <= 8
// workers: bit k of dst[i] is 1{g[k][i] > 0}; bits at or above len(g) are
// 0. All workers must have the same number of elements n, and dst must hold
// n bytes. A NaN or Inf returns an error naming the worker and element.
func PackPacket(dst []byte, g [][]float32) error {
	return packPacket(dst, g, func(v float32) bool { return v > 0 })
}

// PackPacketGates writes element-major gate packets for GateWorker (an
// extension beyond the paper): bit k of dst[i] is 1{|g[k][i]| > tau}.
func PackPacketGates(dst []byte, g [][]float32, tau float32) error {
	if !(tau >= 0) || math.IsInf(float64(tau), 0) {
		return fmt.Errorf("gate threshold %v must be finite and non-negative", tau)
	}
	return packPacket(dst, g, func(v float32) bool { return v > tau || v < -tau })
}

func packPacket(dst []byte, g [][]float32, bit func(float32) bool) error {
	if len(g) < 1 || len(g) > MaxPacketWorkers {
		return fmt.Errorf("element-major packets carry 1 to %d workers, not %d", MaxPacketWorkers, len(g))
	}
	n := len(g[0])
	for k := range g {
		if len(g[k]) != n {
			return fmt.Errorf("worker %d has %d elements, worker 0 has %d", k, len(g[k]), n)
		}
	}
	if len(dst) < n {
		panic("lowbit: PackPacket: dst too short")
	}
	clear(dst[:n])
	for k, gk := range g {
		for i, v := range gk {
			if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
				return fmt.Errorf("worker %d: %w", k, &NonFiniteError{Index: i, Value: v})
			}
			if bit(v) {
				dst[i] |= 1 << k
			}
		}
	}
	return nil
}

// PlanesToPacket gathers up to 8 worker bit-planes of n elements into
// element-major packets: bit k of dst[i] = bit i of planes[k]. It is what a
// runtime does to turn worker-major writes into the paper's packet.
func PlanesToPacket(dst []byte, planes [][]byte, n int) {
	if len(planes) > MaxPacketWorkers || len(dst) < n {
		panic("lowbit: PlanesToPacket: bad arguments")
	}
	// Eight elements a plane byte: spread8 puts bit q of a plane byte in
	// byte lane q, shifted to bit k for worker k.
	full := n / 8
	for j := range full {
		var v uint64
		for k, p := range planes {
			v |= spread8[p[j]] << k
		}
		binary.LittleEndian.PutUint64(dst[8*j:], v)
	}
	clear(dst[8*full : n])
	for k, p := range planes {
		for i := 8 * full; i < n; i++ {
			dst[i] |= (p[i>>3] >> (i & 7) & 1) << k
		}
	}
}

// PacketToPlanes scatters element-major packets of n elements into w
// worker bit-planes, the inverse of PlanesToPacket.
func PacketToPlanes(planes [][]byte, src []byte, n int) {
	for k, p := range planes {
		clear(p[:PlaneBytes(n)])
		for i := range n {
			p[i>>3] |= (src[i] >> k & 1) << (i & 7)
		}
	}
}
