// Package cxl is a functional model of the NEURON-Fabric CXL.mem memory
// controller (paper Sec. 3): 64-byte lines of sparse device memory, a
// region table with a mode latch per region written only by the control
// path, CXL.mem-style requests and responses, and the non-destructive
// read-side transform that returns identity bytes, the FP32 bypass payload
// or a G-Binary / G-Ternary aggregate, and beyond the paper the integer
// lane sums of the Int8 and BFP8 formats. Package verify is the
// transformation-aware functional tester of Sec. 6; Config.Fault injects
// the deliberate bugs (Faults) it must catch.
//
// # Shape
//
// Core is deterministic and single-threaded, in the style of etcd raft's
// RawNode: no goroutines, clocks or I/O. Requests go in through Accept;
// responses come out of Complete, in acceptance order. Controller is a
// mutex around a Core for concurrent writers and a control goroutine.
//
// # Memory
//
// Device memory is sparse: 4 KiB pages of 64 lines are allocated on the
// first write into them, so a device of up to MaxCapacity (4 PiB) costs
// only the pages touched; a line never written reads as zeros.
// Config.LinesHint presizes the page index.
//
// # Transactions
//
// A request is an M2S Req (MemRd, no data) or an M2S RwD (MemWr, exactly
// 64 bytes), with a 16-bit tag. A MemRd is answered by an S2M DRS carrying
// one line, a MemWr by an S2M NDR completion. The transaction's sequence
// number (1, 2, ...) is the model's logical time.
//
//	Accept(req)   validate; seq++; latch the region's mode      (no memory access)
//	Complete()    oldest accepted: apply the write or build the read response
//
// A mode change (SetMode) between the two therefore does not affect a
// transaction already accepted: it takes effect at a transaction boundary
// and is logged with the last accepted seq and a caller timestamp.
//
// DoRun runs a run of consecutive lines of one opcode as that many Do
// calls would (same sequence numbers, responses, counters and errors),
// but checks a stretch of alike lines once and moves it a storage page at
// a time, and computes a worker-major aggregate view (sign planes or
// INT8/BFP8 sums) 32 aggregate lines per kernel call; what it does not
// know (bad lines, G-Ternary element-major views, BFP8 exponent view
// lines, other modes) goes through Do line by line.
//
// Invalid requests (unaligned or out-of-range address, wrong data length,
// unknown opcode, a read of an aggregate view that is not mapped in the
// current mode, a write into a view) are still accepted and answered: the
// response carries an *Error wrapping one of ErrUnaligned, ErrOutOfRange,
// ErrBadLength, ErrBadOpcode, ErrUnmappedView or ErrReadOnlyView, a DRS
// carries zero data, and nothing is stored. Nothing panics on a request.
//
// # Address map of a region
//
// Outside every region the device is plain memory: reads return stored
// bytes (never-written lines read as zeros) and count as Identity. A
// region's data window [Base, Base+Size) is split into equal slabs of
// S = Size/Slabs() bytes; slab line l holds aggregate line l:
//
//	element-major (the paper's packet; W <= 8)
//	  slab 0  sign packets: byte i bit k = b[k, 64l+i]       aggregate view, in place
//	  slab 1  gate packets (lowbit.GateWorker only)
//
//	worker-major (bit-planes; W <= lowbit.MaxWorkers)
//	  slab k        worker k's sign plane: byte j bit q = b[k, 512l+8j+q]
//	  slab W+k      worker k's gate plane (lowbit.GateWorker only)
//	  view window [Base+Size, Base+Size+2S), read-only, after the data window:
//	    line 2l     pos plane of aggregate line l
//	    line 2l+1   nz plane of aggregate line l
//
//	integer-sum (Region.Sum lowbit.Int8 or lowbit.BFP8, worker-major; beyond the paper)
//	  slab k        worker k's code lines: byte i = int8 code q[k, 64l+i] (BFP8: mantissa)
//	  then, BFP8 only, W exponent slabs of X = ceil(L/64) lines each, L = PayloadLines():
//	    worker k's exponent line x at Base + W S + 64 (k X + x): byte b = e[k, block 64x+b]
//	  view window, read-only, after the data window:
//	    line 2l+p   lane sums of elements 64l+32p .. 64l+32p+31, int16 little endian
//	    line 2L+x   BFP8 only: aligned exponents E of blocks 64x .. 64x+63
//
// Element e of aggregate line l has flattened index Element0 + 64l + i
// (element-major) or Element0 + 512l + 8j + q (worker-major); the
// positional gate uses it.
//
// # Read responses
//
// The response to a MemRd depends on the mode latched at acceptance:
//
//	Identity, FP32Bypass   the stored 64 bytes exactly, anywhere
//	                       (a worker-major view read is ErrUnmappedView)
//	G-Binary, element-major   byte i = c[i] = PopCount of the low W bits
//	                          of sign byte i, in [0, W]: the count the
//	                          paper's functional test checks; u = sgn(2c-W)
//	G-Ternary, element-major  byte i = int8(m[i] u[i]) in two's complement:
//	                          0x01 (+1), 0x00 (0) or 0xFF (-1)
//	G-Binary/G-Ternary, worker-major   two lines per 512 elements, the
//	                          lowbit.VotePlanes result planes: view line 2l
//	                          = pos, 2l+1 = nz; element +1 when pos and nz,
//	                          -1 when nz only, 0 when neither. G-Binary's
//	                          nz is 0 only on a tie (W even).
//
//	INT8, on an Int8 region       S_i = clamp(sum_k q[k,i], -32768, 32767)
//	                              (lowbit.SumInt8): exact up to W = 258
//	BFP8, on a BFP8 region        per block E = max_k e_k, mantissas shifted
//	                              right by min(E - e_k, 8) rounding to nearest,
//	                              then summed and saturated as INT8
//	                              (lowbit.SumBFP8); exponent view byte b =
//	                              max(-127, max_k e_k) of the stored exponent
//	                              bytes (lowbit.MaxExponents)
//
// So the response width is one line per 64 elements element-major (8 bits
// per element), two lines per 512 elements worker-major (2 bits per
// element) and two lines per 64 elements in the sum modes (16 bits). A
// region aggregates only in the modes that fit its shape
// (Region.Aggregates): G-Binary and G-Ternary on a sign-plane region,
// the format's own sum mode on a Sum region; in any other mode its
// worker-major view reads are ErrUnmappedView. In low-bit modes, reads of
// data-window lines that are not an aggregate view (sign, gate, code and
// exponent slabs, element-major gate slab) return stored bytes
// untransformed.
//
// # Modes and formats
//
// A mode is identity, FP32 bypass or Aggregate(f) of a format f of
// lowbit's registry; what it implies (region shape, view lines, exponent
// plane, the read-side transform's kernels) comes from the format's
// traits, so a format added to the registry has its mode, its transform
// in Core and DoRun, and its oracle in the reference model (ref_test.go,
// from lowbit's Ref twins) and in package verify without a line here.
// What a new format needs end to end is listed in package lowbit.
//
// # Invariants
//
// Reads never change stored bytes; only a completed MemWr does. Identity
// and FP32 bypass return exactly the stored bytes. The tests check both
// after every step, against an independent reference model.
package cxl
