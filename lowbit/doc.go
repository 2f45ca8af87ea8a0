// Package lowbit holds NEURON-Fabric's low-bit gradient payload formats and
// the kernels that encode, aggregate and decode them (paper Sec. 2-3).
//
// # Semantics
//
// For W workers, worker k and gradient element i:
//
//	b[k,i] = 1{g[k,i] > 0}          zero and negative values (and -0) encode as 0
//	c[i]   = PopCount(b[0,i] ... b[W-1,i])   in [0, W]
//	a[i]   = 2 c[i] - W             the signed vote margin, in [-W, W]
//	u[i]   = sgn(a[i])              G-Binary; sgn(0) = 0, which happens on a tie when W is even
//	t[i]   = m[i] u[i]              G-Ternary, with a zero gate m[i] in {0, 1}
//
// NaN and ±Inf never become a sign: encoders return a *NonFiniteError naming
// the first offending index, and the caller keeps that bucket on FP32.
//
// # Gates
//
// The paper's evaluated gate is positional (GatePattern): with period p = 3,
// flattened element i is zeroed when i mod 3 == 2 ("two keep, the third
// returns zero"). Two gates go beyond the paper and are named as extensions
// wherever they appear: GateWorker, where each worker writes a gate bit per
// element beside its sign (worker k votes only where its gate bit is 1, so
// a[i] = P[i] - N[i] over the gated-on workers), and GateMargin, which zeroes
// elements whose vote margin is small: |a[i]| < T.
//
// # Layouts
//
// A cache line is 64 bytes. The paper's element-major packet (ElementMajor)
// carries the signs of up to 8 workers for 64 elements per line:
//
//	byte:  0         1         2               63
//	      [w7 .. w0][w7 .. w0][w7 .. w0] ... [w7 .. w0]     bit k of byte i = b[k, i]
//	elem:  0         1         2               63
//
// Bits at or above W are ignored. The worker-major layout (WorkerMajor) has
// each worker write its own bit-plane, 512 elements per line, LSB first:
//
//	worker k, line L:  byte j bit q  =  b[k, 512 L + 8 j + q]
//
// so any W from 1 to MaxWorkers workers can write without a gather, which is
// what a real multi-writer buffer needs. With GateWorker each worker writes
// a second plane (or packet) of gate bits in the same layout.
//
// # Kernels
//
// Every fast kernel has a plain per-element reference twin in ref.go,
// written independently from the floating-point definitions above; the
// tests compare the two on random inputs of every length, W and alignment.
// No kernel allocates.
//
// # Adding a format
//
// A format is one row of the trait table in format.go (name, aliases, vote
// or sum, bits per element, paper or extension) plus, each in the package
// that owns it:
//
//   - lowbit: its encode, read-side and decode kernels with plain Ref twins
//     in ref.go, hand-computed cases, kernel-vs-Ref tests and a fuzz
//     target (fixed.go for Int8 and BFP8);
//   - cxl: a mode row in mode.go's table (format, datapath flag, view lines
//     per payload line, exponent plane), the region shape when its payload
//     is not sign planes (Region.Sum), the transform in Core calling these
//     kernels, and its oracle in the reference model and in Verify;
//   - timing: its datapath depth in DatapathCycles, derived from its
//     structure (for Table 4-style exposure, ModeAnchorExposure);
//   - hw: its RTL with co-simulation against the Ref twins and synthesis;
//   - train: its training rule and its rung on the admission ladder;
//   - host and payload: encoding into a bucket (host.Payload), the payload
//     file's format code (a header version when the layout changes) and
//     the cmd payload modes;
//   - serve: its wire values in api/nfabric/v1 (regenerated stubs);
//   - python: the format list derived from these definitions, bit-exact
//     with Go on golden vectors.
//
// Counted on Int8 and BFP8, which came together (issue 30): the lowbit part
// touched 6 files (format.go, fixed.go, ref.go, traffic.go and two test
// files), and the controller and I/O layers 36 more, 42 in all: 23
// hand-written sources in 8 Go packages and the proto (lowbit 5 with this
// comment, cxl 7, host 3, payload 3, serve 2, timing 1, cmd/nfabric 1, the
// proto 1), 17 test files and 2 generated stubs. Most of it was a first
// generalization (a region shape, a payload with codes instead of planes,
// a versioned file header, a proto Format) that a further integer-sum
// format reuses: one would add rows and branches to about 10 of those
// sources. The RTL, training and Python counts are those layers' own.
//
// # Implementations
//
// On amd64 CPUs with AVX2 (golang.org/x/sys/cpu.X86.HasAVX2, checked at
// run time) EncodeSigns, EncodeGates, CountPacket, VotePacket and the W = 8
// VotePlanes run assembly generated with avo by the asmgen module (`go
// generate` rewrites kernels_amd64.s from it); everywhere else, and under
// the noasm build tag, they run portable Go. Implementation names the set
// in use. Both give identical results: the tests check every set against
// the reference loops.
package lowbit
