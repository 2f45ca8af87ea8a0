// Command cabi is the C ABI of package lowbit: built with
//
//	go build -buildmode=c-shared -o libnfabric_lowbit.so ./lowbit/cabi
//
// it is the shared library the Python package nfabric loads through ctypes
// (python/nfabric/_golib.py), so that CPU tensors run the same kernels as
// the Go trainer, on the tensors' own memory (no copies).
//
// Every function is a thin wrapper over the lowbit function of the same
// name; the semantics (bit order, gates, NaN/Inf) are lowbit's, see `go
// doc ./lowbit`. Conventions:
//
//   - Arrays are raw pointers and element counts. A set of W bit-planes is an
//     array of W pointers, each to PlaneBytes(n) = ceil(n/8) bytes, so the
//     planes may live anywhere (rows of one tensor, or W received buffers).
//   - Enumerations are lowbit's numbers: format 1 G-Binary, 2 G-Ternary;
//     gate kind 0 pattern (param: period, 0 means 3), 1 worker, 2 margin
//     (param: threshold).
//   - Functions that can fail take an error buffer (err, errlen) and return
//     0 on success; otherwise they write lowbit's error message there,
//     NUL-terminated and truncated to errlen, and return nonzero. A Go panic
//     never crosses into the caller: it is returned as an error.
//   - The encoders return -1 when every element is finite and otherwise the
//     index of the first NaN or Inf (the plane is then unspecified).
//   - The summed formats (version 2, beyond the paper): INT8 codes and BFP8
//     mantissas and exponents are int8 arrays, lane sums int16; a set of W
//     workers' code (or exponent) arrays is an array of W pointers, as for
//     planes.
//
// Versions: 1 the vote kernels; 2 adds nfl_encode_int8, nfl_sum_int8,
// nfl_decode_int8, nfl_encode_bfp8, nfl_sum_bfp8 and nfl_decode_bfp8.
//
// nfl_abi_version changes whenever a signature or convention does; the
// loader refuses a library whose version it does not know. A new payload
// format adds functions here (nfl_encode_FORMAT, ...) and bumps the
// version; nothing else in this list changes.
package main

// #include <stdint.h>
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/neuronfabric/nfabric/lowbit"
)

// abiVersion is what nfl_abi_version returns.
const abiVersion = 2

func main() {}

//export nfl_abi_version
func nfl_abi_version() C.int64_t { return abiVersion }

// nfl_implementation writes lowbit.Implementation() ("avx2" or "go") into
// buf, NUL-terminated and truncated to n bytes, and returns its length.
//
//export nfl_implementation
func nfl_implementation(buf *C.char, n C.int64_t) C.int64_t {
	s := lowbit.Implementation()
	putString(buf, n, s)
	return C.int64_t(len(s))
}

// nfl_encode_signs writes the G-Binary plane of g[0..n) into dst
// (ceil(n/8) bytes): bit i = 1{g[i] > 0}.
//
//export nfl_encode_signs
func nfl_encode_signs(dst *C.uint8_t, g *C.float, n C.int64_t) C.int64_t {
	return nonFinite(lowbit.EncodeSigns(bytes(dst, lowbit.PlaneBytes(int(n))), floats(g, int(n))))
}

// nfl_encode_gates writes the worker gate's plane of g[0..n) into dst: bit
// i = 1{|g[i]| > tau}. It returns -2 with a message in err when tau is not
// finite and non-negative.
//
//export nfl_encode_gates
func nfl_encode_gates(dst *C.uint8_t, g *C.float, n C.int64_t, tau C.float, err *C.char, errlen C.int64_t) C.int64_t {
	e := lowbit.EncodeGates(bytes(dst, lowbit.PlaneBytes(int(n))), floats(g, int(n)), float32(tau))
	if _, ok := e.(*lowbit.NonFiniteError); e != nil && !ok {
		putString(err, errlen, e.Error())
		return -2
	}
	return nonFinite(e)
}

// nfl_vote_planes aggregates w worker-major sign planes of n elements into
// the result planes pos and nz (lowbit.VotePlanes); gates holds w gate
// planes for the worker gate and may be NULL otherwise. base is the
// flattened index of element 0 (the pattern gate's).
//
//export nfl_vote_planes
func nfl_vote_planes(pos, nz *C.uint8_t, signs, gates **C.uint8_t, w C.int32_t, n C.int64_t,
	format, gateKind, gateParam C.int32_t, base C.int64_t, err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	s := spec(int(w), lowbit.WorkerMajor, format, gateKind, gateParam)
	nb := lowbit.PlaneBytes(int(n))
	var gp [][]byte
	if s.GateBits() {
		if gates == nil {
			return fail(err, errlen, fmt.Errorf("vote: the worker gate needs %d gate planes", w))
		}
		gp = planes(gates, int(w), nb)
	}
	e := lowbit.VotePlanes(bytes(pos, nb), bytes(nz, nb), planes(signs, int(w), nb), gp, int(n), s, int(base))
	return fail(err, errlen, e)
}

// nfl_count_planes writes the sign count of each of n elements over w
// worker-major planes into dst (uint16).
//
//export nfl_count_planes
func nfl_count_planes(dst *C.uint16_t, signs **C.uint8_t, w C.int32_t, n C.int64_t) {
	d := unsafe.Slice((*uint16)(unsafe.Pointer(dst)), int(n))
	lowbit.CountPlanes(d, planes(signs, int(w), lowbit.PlaneBytes(int(n))), int(n))
}

// nfl_decode_planes writes scale * u[i] as float32 for the result planes
// of n elements (lowbit.DecodePlanes).
//
//export nfl_decode_planes
func nfl_decode_planes(dst *C.float, pos, nz *C.uint8_t, n C.int64_t, scale C.float) {
	nb := lowbit.PlaneBytes(int(n))
	lowbit.DecodePlanes(floats(dst, int(n)), bytes(pos, nb), bytes(nz, nb), int(n), float32(scale))
}

// nfl_unpack_planes writes u[i] in {-1, 0, +1} as int8 for the result
// planes of n elements (lowbit.UnpackPlanes).
//
//export nfl_unpack_planes
func nfl_unpack_planes(dst *C.int8_t, pos, nz *C.uint8_t, n C.int64_t) {
	nb := lowbit.PlaneBytes(int(n))
	d := unsafe.Slice((*int8)(unsafe.Pointer(dst)), int(n))
	lowbit.UnpackPlanes(d, bytes(pos, nb), bytes(nz, nb), int(n))
}

// nfl_planes_to_packet gathers w <= 8 worker planes of n elements into n
// element-major packet bytes (lowbit.PlanesToPacket).
//
//export nfl_planes_to_packet
func nfl_planes_to_packet(dst *C.uint8_t, signs **C.uint8_t, w C.int32_t, n C.int64_t, err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	if w < 1 || w > lowbit.MaxPacketWorkers {
		return fail(err, errlen, fmt.Errorf("element-major packets carry 1 to %d workers, not %d", lowbit.MaxPacketWorkers, w))
	}
	lowbit.PlanesToPacket(bytes(dst, int(n)), planes(signs, int(w), lowbit.PlaneBytes(int(n))), int(n))
	return 0
}

// nfl_vote_packet aggregates n element-major packets of w <= 8 workers
// into int8 values (lowbit.VotePacket); gates holds the gate packets for
// the worker gate and may be NULL otherwise.
//
//export nfl_vote_packet
func nfl_vote_packet(dst *C.int8_t, signs, gates *C.uint8_t, n C.int64_t, w C.int32_t,
	format, gateKind, gateParam C.int32_t, base C.int64_t, err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	s := spec(int(w), lowbit.ElementMajor, format, gateKind, gateParam)
	var g []byte
	if s.GateBits() {
		if gates == nil {
			return fail(err, errlen, fmt.Errorf("vote: the worker gate needs gate packets"))
		}
		g = bytes(gates, int(n))
	}
	d := unsafe.Slice((*int8)(unsafe.Pointer(dst)), int(n))
	return fail(err, errlen, lowbit.VotePacket(d, bytes(signs, int(n)), g, s, int(base)))
}

// nfl_count_packet writes popcount(src[i] & (2^w - 1)) into dst for n
// packet bytes (lowbit.CountPacket); w is 1 to 8.
//
//export nfl_count_packet
func nfl_count_packet(dst, src *C.uint8_t, n C.int64_t, w C.int32_t) {
	if w < 1 || w > lowbit.MaxPacketWorkers {
		return
	}
	lowbit.CountPacket(bytes(dst, int(n)), bytes(src, int(n)), int(w))
}

// nfl_encode_int8 writes the INT8 codes of g[0..n) at the agreed scale
// into dst (lowbit.EncodeInt8: clamp(roundHalfEven(g/scale), -127, 127)).
// It returns -1, the index of the first NaN or Inf, or -2 with a message
// in err when the scale is negative or not finite.
//
//export nfl_encode_int8
func nfl_encode_int8(dst *C.int8_t, g *C.float, n C.int64_t, scale C.float, err *C.char, errlen C.int64_t) C.int64_t {
	e := lowbit.EncodeInt8(int8s(dst, int(n)), floats(g, int(n)), float32(scale))
	if _, ok := e.(*lowbit.NonFiniteError); e != nil && !ok {
		putString(err, errlen, e.Error())
		return -2
	}
	return nonFinite(e)
}

// nfl_sum_int8 writes dst[i] = clamp(sum_k src[k][i], -32768, 32767) for
// n lanes of w workers' int8 codes (lowbit.SumInt8, the controller's
// INT8 transform).
//
//export nfl_sum_int8
func nfl_sum_int8(dst *C.int16_t, src **C.int8_t, w C.int32_t, n C.int64_t, err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	if w < 1 {
		return fail(err, errlen, fmt.Errorf("sum: %d workers, want at least 1", w))
	}
	lowbit.SumInt8(int16s(dst, int(n)), int8Rows(src, int(w), int(n)))
	return 0
}

// nfl_decode_int8 writes the mean float32(float64(sum[i]) float64(scale) /
// w) of n lanes into dst (lowbit.DecodeInt8); w is at least 1.
//
//export nfl_decode_int8
func nfl_decode_int8(dst *C.float, sum *C.int16_t, n C.int64_t, scale C.float, w C.int32_t, err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	if w < 1 {
		return fail(err, errlen, fmt.Errorf("decode: %d workers, want at least 1", w))
	}
	lowbit.DecodeInt8(floats(dst, int(n)), int16s(sum, int(n)), float32(scale), int(w))
	return 0
}

// nfl_encode_bfp8 writes the BFP8 mantissas of g[0..n) into mant (n int8)
// and its block exponents into exp (ceil(n/64) int8) (lowbit.EncodeBFP8).
// It returns -1 or the index of the first NaN or Inf.
//
//export nfl_encode_bfp8
func nfl_encode_bfp8(mant, exp *C.int8_t, g *C.float, n C.int64_t) C.int64_t {
	return nonFinite(lowbit.EncodeBFP8(int8s(mant, int(n)), int8s(exp, lowbit.BFPBlocks(int(n))), floats(g, int(n))))
}

// nfl_sum_bfp8 aligns and sums w workers' BFP8 payloads of n elements
// (srcMant: w pointers to n mantissas, srcExp: w pointers to ceil(n/64)
// exponents) into mant (n int16 sums) and exp (the ceil(n/64) block
// maxima E) (lowbit.SumBFP8, the controller's BFP8 transform).
//
//export nfl_sum_bfp8
func nfl_sum_bfp8(mant *C.int16_t, exp *C.int8_t, srcMant, srcExp **C.int8_t, w C.int32_t, n C.int64_t,
	err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	if w < 1 {
		return fail(err, errlen, fmt.Errorf("sum: %d workers, want at least 1", w))
	}
	nb := lowbit.BFPBlocks(int(n))
	lowbit.SumBFP8(int16s(mant, int(n)), int8s(exp, nb), int8Rows(srcMant, int(w), int(n)), int8Rows(srcExp, int(w), nb))
	return 0
}

// nfl_decode_bfp8 writes the mean float32(float64(mant[i]) 2^(E-7) / w) of
// n elements into dst, E the element's block exponent in exp
// (lowbit.DecodeBFP8); w is at least 1.
//
//export nfl_decode_bfp8
func nfl_decode_bfp8(dst *C.float, mant *C.int16_t, exp *C.int8_t, n C.int64_t, w C.int32_t, err *C.char, errlen C.int64_t) (rc C.int32_t) {
	defer recoverInto(&rc, err, errlen)
	if w < 1 {
		return fail(err, errlen, fmt.Errorf("decode: %d workers, want at least 1", w))
	}
	lowbit.DecodeBFP8(floats(dst, int(n)), int16s(mant, int(n)), int8s(exp, lowbit.BFPBlocks(int(n))), int(w))
	return 0
}

func spec(w int, l lowbit.Layout, format, kind, param C.int32_t) lowbit.Spec {
	g := lowbit.Gate{Kind: lowbit.GateKind(kind)}
	if g.Kind == lowbit.GateMargin {
		g.Threshold = int(param)
	} else {
		g.Period = int(param)
	}
	return lowbit.Spec{Workers: w, Layout: l, Format: lowbit.Format(format), Gate: g}
}

// bytes, floats and planes view caller memory as Go slices; the memory is
// the caller's (never the Go heap), so the cgo pointer rules hold.
func bytes(p *C.uint8_t, n int) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n)
}

func floats(p *C.float, n int) []float32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), n)
}

func int8s(p *C.int8_t, n int) []int8 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(p)), n)
}

func int16s(p *C.int16_t, n int) []int16 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int16)(unsafe.Pointer(p)), n)
}

func int8Rows(p **C.int8_t, w, n int) [][]int8 {
	ptrs := unsafe.Slice(p, w)
	out := make([][]int8, w)
	for k, q := range ptrs {
		out[k] = int8s(q, n)
	}
	return out
}

func planes(p **C.uint8_t, w, nb int) [][]byte {
	ptrs := unsafe.Slice(p, w)
	out := make([][]byte, w)
	for k, q := range ptrs {
		out[k] = bytes(q, nb)
	}
	return out
}

func nonFinite(e error) C.int64_t {
	if nf, ok := e.(*lowbit.NonFiniteError); ok {
		return C.int64_t(nf.Index)
	}
	return -1
}

func fail(buf *C.char, n C.int64_t, e error) C.int32_t {
	if e == nil {
		return 0
	}
	putString(buf, n, e.Error())
	return 1
}

func recoverInto(rc *C.int32_t, buf *C.char, n C.int64_t) {
	if r := recover(); r != nil {
		*rc = fail(buf, n, fmt.Errorf("lowbit: %v", r))
	}
}

func putString(buf *C.char, n C.int64_t, s string) {
	if buf == nil || n <= 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	k := copy(b[:len(b)-1], s)
	b[k] = 0
}
