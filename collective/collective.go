// Package collective models the time of one All-Reduce in the alpha-beta
// form and the cost of NEURON-Fabric's low-bit CXL path (paper Sec. 5.1 and
// Sec. 9, Fig. 7).
//
// # Cost models
//
// A link has a per-message latency alpha (seconds) and a bandwidth B (bytes
// per second, one direction); sending m bytes costs alpha + m/B. For n
// workers and an S-byte buffer:
//
//	ring               2(n-1) alpha + 2(n-1)/n * S/B
//	tree               2 ceil(log2 n) alpha + 2 S/B
//	                   (NCCL's double binary tree, pipelined: each tree carries S/2;
//	                   a node is inner in at most one tree, so it receives S and
//	                   sends S per phase, reduce then broadcast)
//	halving-doubling   2 log2 p alpha + 2(p-1)/p * S/B, p = n a power of two
//	                   (Rabenseifner: reduce-scatter by recursive halving, all-gather
//	                   by recursive doubling); for n not a power of two, with p the
//	                   largest power of two below n, the extra n-p workers first
//	                   fold into partners and receive the result at the end:
//	                   + 2(alpha + S/B)
//	hierarchical       g workers per node on an intra link, m = n/g nodes on an
//	                   inter link: intra reduce-scatter, inter ring all-reduce on
//	                   S/g, intra all-gather:
//	                   2[(g-1) alpha_i + (g-1)/g S/B_i] + 2(m-1) alpha_e + 2(m-1)/m (S/g)/B_e
//
// Compute (the reduction arithmetic) is not charged. Results follow NCCL's
// conventions (nccl-tests PERFORMANCE.md): algbw = S / t, and for
// All-Reduce busbw = algbw * 2(n-1)/n, the per-link rate that makes
// algorithms comparable with the hardware's peak.
//
// # The NEURON-Fabric CXL path
//
// Each worker writes its packed payload (elements * bits / 8 bytes, rounded
// up to 64-byte lines) into the CXL-resident buffer and reads the aggregate
// back through the controller, so the payload crosses the CXL link twice:
//
//	t = 2 (alpha_cxl + lines*64 / B_cxl) * (1 + e)
//
// where e is the exposed low-bit datapath fraction measured by the timing
// model (zero for the FP32 bypass path, which uses no aggregation datapath).
// By default every worker has its own CXL port at B_cxl; with Shared the W
// workers' writes and reads share one controller link (t grows by W).
package collective

import (
	"fmt"
	"math"
	"math/bits"
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

// AllReduce is one All-Reduce configuration.
type AllReduce struct {
	Alg Algorithm
	// N is the number of workers (ranks), >= 1.
	N int
	// Link is the link every worker uses (the inter-node link for
	// Hierarchical).
	Link Link
	// Intra and PerNode configure Hierarchical: PerNode workers per node
	// joined by Intra; N must be a multiple of PerNode.
	Intra   Link
	PerNode int
}

// Estimate is the modelled cost of one collective.
type Estimate struct {
	// Seconds is the total time; LatencyS and BandwidthS its alpha and beta
	// parts.
	Seconds    float64 `json:"seconds"`
	LatencyS   float64 `json:"latency_s"`
	BandwidthS float64 `json:"bandwidth_s"`
	// Bytes is the buffer size S.
	Bytes float64 `json:"bytes"`
	// AlgBW = Bytes / Seconds; BusBW = AlgBW * 2(n-1)/n (All-Reduce).
	AlgBW float64 `json:"algbw"`
	BusBW float64 `json:"busbw"`
}

func (c AllReduce) validate() error {
	if c.N < 1 {
		return fmt.Errorf("all-reduce: %d workers; want >= 1", c.N)
	}
	if err := c.Link.Validate(); err != nil {
		return err
	}
	if c.Alg == Hierarchical {
		if err := c.Intra.Validate(); err != nil {
			return fmt.Errorf("intra-node link: %w", err)
		}
		if c.PerNode < 1 || c.N%c.PerNode != 0 {
			return fmt.Errorf("hierarchical all-reduce: %d workers is not a multiple of %d per node", c.N, c.PerNode)
		}
	} else if c.Alg > Hierarchical {
		return fmt.Errorf("all-reduce: unknown algorithm %v", c.Alg)
	}
	return nil
}

// Time returns the modelled time of an All-Reduce of S bytes.
func (c AllReduce) Time(S float64) (Estimate, error) {
	if err := c.validate(); err != nil {
		return Estimate{}, err
	}
	if math.IsNaN(S) || math.IsInf(S, 0) || S < 0 {
		return Estimate{}, fmt.Errorf("all-reduce: size %v bytes must be finite and >= 0", S)
	}
	n := float64(c.N)
	a, B := c.Link.Latency, c.Link.Bandwidth
	var lat, bw float64
	if c.N > 1 {
		switch c.Alg {
		case Ring:
			lat = 2 * (n - 1) * a
			bw = 2 * (n - 1) / n * S / B
		case Tree:
			lat = 2 * float64(ceilLog2(c.N)) * a
			bw = 2 * S / B
		case HalvingDoubling:
			p := 1 << (bits.Len(uint(c.N)) - 1) // largest power of two <= N
			lp := float64(bits.Len(uint(p)) - 1)
			pf := float64(p)
			lat = 2 * lp * a
			bw = 2 * (pf - 1) / pf * S / B
			if p != c.N {
				lat += 2 * a
				bw += 2 * S / B
			}
		case Hierarchical:
			g, m := float64(c.PerNode), n/float64(c.PerNode)
			ai, Bi := c.Intra.Latency, c.Intra.Bandwidth
			lat = 2*(g-1)*ai + 2*(m-1)*a
			bw = 2*(g-1)/g*S/Bi + 2*(m-1)/m*(S/g)/B
		}
	}
	e := Estimate{Seconds: lat + bw, LatencyS: lat, BandwidthS: bw, Bytes: S}
	e.fill(c.N)
	return e, nil
}

func (e *Estimate) fill(n int) {
	if e.Seconds > 0 {
		e.AlgBW = e.Bytes / e.Seconds
		e.BusBW = e.AlgBW * 2 * float64(n-1) / float64(n)
	}
}

func ceilLog2(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// AllGather returns the time of a ring all-gather in which every worker
// contributes S bytes (each receives (n-1) S): (n-1) alpha + (n-1) S/B.
// MajoritySignSGD uses it to collect every worker's signs.
func AllGather(n int, l Link, S float64) (Estimate, error) {
	if n < 1 {
		return Estimate{}, fmt.Errorf("all-gather: %d workers; want >= 1", n)
	}
	if err := l.Validate(); err != nil {
		return Estimate{}, err
	}
	if math.IsNaN(S) || math.IsInf(S, 0) || S < 0 {
		return Estimate{}, fmt.Errorf("all-gather: size %v bytes must be finite and >= 0", S)
	}
	k := float64(n - 1)
	e := Estimate{LatencyS: k * l.Latency, BandwidthS: k * S / l.Bandwidth, Bytes: S * float64(n)}
	e.Seconds = e.LatencyS + e.BandwidthS
	if e.Seconds > 0 {
		e.AlgBW = e.Bytes / e.Seconds
		e.BusBW = e.AlgBW * k / float64(n) // nccl-tests all-gather convention
	}
	return e, nil
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

// Time returns the cost of one aggregation of `elements` gradient elements
// at bitsPerElement payload bits each. aggregate selects the low-bit
// datapath (adds the exposure); false is the FP32 bypass (write and read
// the full payload, no aggregation datapath).
func (p CXLPath) Time(elements int64, bitsPerElement float64, aggregate bool) (Estimate, error) {
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
	payload := float64(lowbit.PaddedBytes(int64(math.Ceil(float64(elements) * bitsPerElement / 8))))
	moved := payload
	if p.Shared {
		moved *= float64(p.Workers)
	}
	e := Estimate{Bytes: payload, LatencyS: 2 * p.Link.Latency, BandwidthS: 2 * moved / p.Link.Bandwidth}
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
	e.fill(p.Workers)
	return e, nil
}
