// Package host is the runtime side of the paper's Fig. 1: the write half
// of the data path and the read of the aggregate, between the training
// framework's FP32 gradients and the CXL memory controller (package cxl).
//
//	worker k's FP32 gradient g_k of one bucket (n elements)
//	       │  Bucket.EncodeWorker: NaN/Inf -> *NonFiniteError, the
//	       │  bucket stays on FP32 (the caller's software mean)
//	       ▼
//	Payload: sign bits b_k,i = 1{g_k,i > 0} (+ gate bits, worker gate)
//	       │  worker-major: worker k's own bit-plane slab
//	       │  element-major: gathered into the paper's packets (Seal)
//	       ▼
//	Bucket.Write: payload lines as CXL.mem MemWr transactions
//	       │  into the bucket's region (Device.Map: one region per
//	       │  parameter group or gradient bucket, cxl.Region.DataBytes)
//	       ▼
//	cxl controller: stored lines; mode latch (written by the control
//	       │  plane only, through cxl.ModeWriter)
//	       ▼
//	Bucket.Read: MemRd of the aggregate view under the latched mode
//	       │  (G-Binary counts / G-Ternary m*u per packet byte, or the
//	       │  worker-major pos/nz planes)
//	       ▼
//	Bucket.Decode / Values / Counts: the update u or m*u per element
//
// A Device is one controller and the runtime's bookkeeping: the buckets
// mapped into it and the accounting the paper's Sec. 11 says a runtime
// must report (elements encoded, payload bytes against the FP32 bytes they
// replace, lines and transactions, buckets kept on FP32). Its raw methods
// (MapRegion, Unmap, Transact, WriteLines, ReadLines, SetMode, Mode,
// Stats) are the surface a remote client drives when it encodes payloads
// itself: nfabric serve's Controller service is a Device per opened
// device. Transact is the controller's batch: steps with the caller's
// tags, mode writes between acceptances, and one outcome per step.
// TransactRuns is the same batch with each step a run of consecutive
// lines (cxl.Core.DoRun: validated and moved a stretch at a time, the
// same outcomes as one step a line); the service runs its batches so.
//
// Payload is the layout of one bucket's data window on its own, without a
// controller: the bytes a payload file holds (package payload) and the
// software reduction of them (Counts, Vote), the same Sec. 2 semantics the
// controller's read transform computes.
//
// Every layout decision of the runtime is made here, once: how W workers'
// payloads are laid out in slabs (element-major packet or worker-major
// planes), how many lines a bucket takes (lowbit.Layout.Lines), and how
// big its region is (cxl.Region.DataBytes).
package host
