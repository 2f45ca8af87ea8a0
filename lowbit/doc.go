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
// # The format registry
//
// A payload format is one value of Format, and everything the system
// knows about it is one row of the registry in format.go: its name,
// aliases and label, its family (a sign vote over bit-planes, or an
// integer lane sum of fixed-point codes), its bits per element under each
// accounting (BitsPerElement), whether the paper evaluates it, and for an
// integer-sum format its kernels (sum.go): EncodeCodes, the read-side
// transform SumCodes, DecodeSums, their Ref twin RefSumCodes, the scale
// agreement (Scaled, AgreedScale, CheckScale) and the block-exponent
// side plane (BlockExponents). Spec.Validate is the one check of a spec
// for every format. The rest of the system derives from the row: the
// controller mode that aggregates a format is cxl.Aggregate(f), its
// training rule train.FormatRule(f), its RTL datapath hw.ModeDatapath,
// its rung on control.ExtendedLadder, its payload file code its number,
// its wire values the proto's MODE_ and FORMAT_ of its name, and the host
// runtime, payload files, what-if pricing, timing depth, the functional
// tester (package verify) and the Python format table read its traits.
//
// # Adding a format
//
// An integer-sum format with int8 codes (the family of Int8 and BFP8)
// takes these files, and no other source changes:
//
//  1. lowbit/format.go: its Format constant and registry row;
//  2. lowbit/sum.go: its sumKernels value;
//  3. its kernels (a lowbit source, as fixed.go holds Int8's and BFP8's);
//  4. lowbit/ref.go: their plain Ref twins;
//  5. a lowbit test file: hand-computed cases, kernel-vs-Ref tests on
//     random inputs of every length, a fuzz target, and its reference
//     call in TestSumCodecs;
//  6. api/nfabric/v1/controller.proto: its MODE_ and FORMAT_ values (the
//     wire maps them by name; serve/wire's tests fail until they exist);
//  7. verify/sum.go: the precision bound of its decoded mean, the
//     functional tester's end-to-end oracle;
//  8. hw/sum_test.go: its case in specSum, the RTL's spec-only oracle;
//
// and three generated files: api/nfabric/v1/controller.pb.go and
// python/nfabric/_proto/nfabric/v1/controller_pb2.py (api/generate.sh),
// and python/nfabric/_formats.py (go test ./lowbit -run Golden -update).
// Eight hand-written files and three generated ones; adding Int8 and BFP8
// together, before the registry, took 42. A format whose payload needs a
// new side plane (beside BFP8's block exponents) also extends the region
// shape in cxl/region.go, the host payload in host/payload.go and the RTL
// in hw/sum.go. The Python package's own kernels (lowbit/cabi and
// nfabric.fixed) are its own.
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
