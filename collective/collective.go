// Package collective models the time of network collectives in the
// alpha-beta form and in ASTRA-sim's analytical terms, and the cost of
// NEURON-Fabric's low-bit CXL path (paper Sec. 5.1 and Sec. 9, Fig. 7).
// Every network collective is priced through one interface, Model, so one
// link gives one number in every command.
//
// # Units
//
// Bandwidths are bytes per second. GB/s means 10^9 bytes per second and
// GiB/s 2^30 (Link.String and FormatBandwidth print which). ASTRA-sim's
// network files write "GB/s" but ASTRA-sim converts it as GiB/s; the Astra
// model does the same (astra.go).
//
// # Alpha-beta models
//
// A link has a per-message latency alpha (seconds) and a bandwidth B (bytes
// per second, one direction); sending m bytes costs alpha + m/B. For n
// ranks and an S-byte all-reduce:
//
//	ring               2(n-1) alpha + 2(n-1)/n * S/B
//	tree               2 ceil(log2 n) alpha + 2 S/B
//	                   (NCCL's double binary tree, pipelined: each tree carries S/2;
//	                   a node is inner in at most one tree, so it receives S and
//	                   sends S per phase, reduce then broadcast)
//	halving-doubling   2 log2 p alpha + 2(p-1)/p * S/B, p = n a power of two
//	                   (Rabenseifner: reduce-scatter by recursive halving, all-gather
//	                   by recursive doubling); for n not a power of two, with p the
//	                   largest power of two below n, the extra n-p ranks first
//	                   fold into partners and receive the result at the end:
//	                   + 2(alpha + S/B)
//	hierarchical       g ranks per node on an intra link, m = n/g nodes on an
//	                   inter link: intra reduce-scatter, inter ring all-reduce on
//	                   S/g, intra all-gather:
//	                   2[(g-1) alpha_i + (g-1)/g S/B_i] + 2(m-1) alpha_e + 2(m-1)/m (S/g)/B_e
//
// The other operations (S as Op defines it) take k alpha + M/B, where M is
// the bandwidth-optimal bytes through the busiest link, which the ring and
// the recursive-doubling/halving and tree algorithms all reach for large S
// (the byte counts behind nccl-tests' bus-bandwidth factors), and k the
// algorithm's steps: n-1 for ring, ceil(log2 n) for tree and
// halving-doubling:
//
//	reduce-scatter(-block)  k alpha + (n-1)/n S/B
//	all-gather              k alpha + (n-1) S/B       (each rank receives (n-1) S)
//	all-to-all              (n-1) alpha + (n-1)/n S/B (pairwise exchange, any algorithm)
//	broadcast, reduce       k alpha + S/B             (pipelined)
//	gather                  k alpha + (n-1) S/B       (the root receives (n-1) S)
//	scatter                 k alpha + (n-1)/n S/B
//	barrier                 ceil(log2 n) alpha        (dissemination)
//
// The hierarchical algorithm prices only the all-reduce. Compute (the
// reduction arithmetic) is not charged. Results follow NCCL's conventions
// (nccl-tests PERFORMANCE.md): algbw = S / t and busbw = algbw times the
// operation's factor (all-reduce 2(n-1)/n; reduce-scatter, all-to-all and
// scatter (n-1)/n; all-gather and gather n-1 against S as defined here, the
// (n-1)/n of their nS output; broadcast and reduce 1), the per-link rate
// that makes algorithms comparable with the hardware's peak.
//
// # The NEURON-Fabric CXL path
//
// Each worker writes its packed payload (elements * bits / 8 bytes, rounded
// up to 64-byte lines) into the CXL-resident buffer and reads the aggregate
// back through the controller, so for an all-reduce the payload crosses
// the CXL link twice:
//
//	t = 2 (alpha_cxl + lines*64 / B_cxl) * (1 + e)
//
// (for a reduce-scatter a worker reads back only its 1/W shard of the
// aggregate), where e is the exposed low-bit datapath fraction measured by
// the timing model (zero for the FP32 bypass path, which uses no
// aggregation datapath). By default every worker has its own CXL port at
// B_cxl; with Shared the W workers' writes and reads share one controller
// link (t grows by W).
package collective

import (
	"fmt"
	"math"
	"strings"

	"github.com/neuronfabric/nfabric/lowbit"
)

// Algorithm is an All-Reduce algorithm.
type Algorithm uint8

const (
	Ring Algorithm = iota
	Tree
	HalvingDoubling
	Hierarchical
)

var algNames = [...]string{Ring: "ring", Tree: "tree", HalvingDoubling: "halving-doubling", Hierarchical: "hierarchical"}

func (a Algorithm) String() string {
	if int(a) < len(algNames) {
		return algNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm accepts ring, tree, halving-doubling (rhd) and
// hierarchical (hier).
func ParseAlgorithm(s string) (Algorithm, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ring":
		return Ring, nil
	case "tree", "double-binary-tree", "dbtree":
		return Tree, nil
	case "halving-doubling", "rhd", "recursive-halving-doubling", "rabenseifner":
		return HalvingDoubling, nil
	case "hierarchical", "hier", "2d":
		return Hierarchical, nil
	}
	return 0, fmt.Errorf("unknown algorithm %q (want ring, tree, halving-doubling or hierarchical)", s)
}

// Estimate is the modelled cost of one collective.
type Estimate struct {
	// Seconds is the total time; LatencyS and BandwidthS its alpha and beta
	// parts (zero for a model without that split).
	Seconds    float64 `json:"seconds"`
	LatencyS   float64 `json:"latency_s"`
	BandwidthS float64 `json:"bandwidth_s"`
	// Bytes is the call's S (Op's doc says what it counts).
	Bytes float64 `json:"bytes"`
	// AlgBW = Bytes / Seconds and BusBW = AlgBW * the operation's
	// nccl-tests factor, in bytes per second (10^9 of them are 1 GB/s).
	AlgBW float64 `json:"algbw"`
	BusBW float64 `json:"busbw"`
}

// LineBytes is the CXL cache-line size (declared once in lowbit).
const LineBytes = lowbit.LineBytes

// CXLPath is the NEURON-Fabric controller path.
type CXLPath struct {
	Link Link
	// Workers is W, the number of workers writing payloads.
	Workers int
	// Shared makes the W workers share one controller link; by default each
	// worker has its own port at Link.Bandwidth.
	Shared bool
	// Exposure is the exposed low-bit datapath fraction e (e.g. 0.0167),
	// applied to aggregated (low-bit) transfers only.
	Exposure float64
}

// Time is TimeOp(AllReduce, elements, bitsPerElement, aggregate): every
// worker writes its payload and reads the whole aggregate back.
func (p CXLPath) Time(elements int64, bitsPerElement float64, aggregate bool) (Estimate, error) {
	return p.TimeOp(AllReduce, elements, bitsPerElement, aggregate)
}

// TimeOp returns the cost of one aggregation of `elements` gradient
// elements at bitsPerElement payload bits each, for an all-reduce (each
// worker writes its payload and reads the whole aggregate back) or a
// reduce-scatter (it reads back only its 1/W shard: ceil(elements/W)
// elements, padded to lines). aggregate selects the low-bit datapath (adds
// the exposure); false is the FP32 bypass (write and read the payload, no
// aggregation datapath). Other operations are not a controller path.
func (p CXLPath) TimeOp(op Op, elements int64, bitsPerElement float64, aggregate bool) (Estimate, error) {
	if err := p.Link.Validate(); err != nil {
		return Estimate{}, err
	}
	if p.Workers < 1 {
		return Estimate{}, fmt.Errorf("cxl path: %d workers; want >= 1", p.Workers)
	}
	if elements < 0 || !(bitsPerElement > 0) || math.IsInf(bitsPerElement, 0) {
		return Estimate{}, fmt.Errorf("cxl path: %d elements at %v bits each", elements, bitsPerElement)
	}
	if math.IsNaN(p.Exposure) || p.Exposure < 0 || p.Exposure > 10 {
		return Estimate{}, fmt.Errorf("cxl path: exposure %v must be in [0, 10]", p.Exposure)
	}
	if !op.Aggregates() {
		return Estimate{}, fmt.Errorf("cxl path: a %v is not aggregated on the controller (all-reduce and reduce-scatter are)", op)
	}
	lineBytes := func(n int64) float64 {
		return float64(lowbit.PaddedBytes(int64(math.Ceil(float64(n) * bitsPerElement / 8))))
	}
	written := lineBytes(elements)
	read := written
	if op != AllReduce {
		read = lineBytes((elements + int64(p.Workers) - 1) / int64(p.Workers))
	}
	moved := written + read
	if p.Shared {
		moved *= float64(p.Workers)
	}
	e := Estimate{LatencyS: 2 * p.Link.Latency, BandwidthS: moved / p.Link.Bandwidth}
	f := 1.0
	if aggregate {
		f += p.Exposure
	}
	e.LatencyS *= f
	e.BandwidthS *= f
	e.Seconds = e.LatencyS + e.BandwidthS
	// The FP32-equivalent buffer is what the collective replaces: report
	// algbw against the FP32 gradient size, so paths compare directly.
	e.Bytes = float64(elements) * 4
	e.fill(busFactor(op, float64(p.Workers)))
	return e, nil
}
