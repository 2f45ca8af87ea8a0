// Package verify is the transformation-aware functional tester of the
// NEURON-Fabric controller model (package cxl), the paper's Sec. 6 test
// ("NEURON-Fabric: CXL-Side Low-Bit Gradient Aggregation for Distributed
// Training", Wang, Huang and Lung) and the checks beyond it.
//
// Run writes the paper's packet lines, reads them back under every mode
// of its Table 2 and judges each response by a mode-specific oracle built
// from lowbit's Ref twins, with the naive read-equals-write oracle beside
// it (which flags every transformed line, the paper's point). Beyond the
// paper it checks that a mode change takes effect at a transaction
// boundary (latch), that every kind of bad request gets an error response
// and stores nothing (errors), random configurations with concurrent
// writers and mode flips (sweep), and the integer-sum formats end to end,
// from FP32 gradients through the lowbit encoders, the controller and the
// decoders to the FP32 mean (sum, sum-sweep). Every check that fails is
// counted in the Result; an error means a bad Config or a cancelled
// context.
//
// The tester is shown not to be vacuous: each of cxl.Faults, injected
// through Config.Fault, makes it fail in the group that should notice.
package verify
