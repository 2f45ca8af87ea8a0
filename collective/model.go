package collective

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Model prices one collective among a fixed set of ranks. Every command
// that prices a network collective (whatif, collective, the netcheck
// block) goes through a Model, so one link and one model give one number
// everywhere. The models are AlphaBeta (the closed forms in the package
// doc) and Astra (ASTRA-sim's analytical mode, astra.go).
type Model interface {
	// Time prices c. An operation the model does not cover returns an
	// error that wraps ErrUnsupported and says why.
	Time(c Call) (Estimate, error)
	// Ranks is the number of ranks the model's collectives span.
	Ranks() int
	// String describes the model, its link and units, for an output's
	// assumptions.
	String() string
}

// Call is one collective to price.
type Call struct {
	Op Op
	// Bytes is S as Op's doc defines it (Chakra's comm_size).
	Bytes float64
	// RecordedS is how long the trace recorded the collective taking
	// (seconds; 0 when it does not say). Only ASTRA-sim's BROADCAST, which
	// ASTRA-sim replays rather than models, uses it.
	RecordedS float64
}

// ErrUnsupported is wrapped by a Model's error for an operation it does
// not price (the message says why): a caller lists such collectives as
// unpriced rather than dropping them.
var ErrUnsupported = errors.New("not priced by this model")

func checkCall(c Call) error {
	if !c.Op.Valid() {
		return fmt.Errorf("collective: unknown operation %d", uint8(c.Op))
	}
	if math.IsNaN(c.Bytes) || math.IsInf(c.Bytes, 0) || c.Bytes < 0 {
		return fmt.Errorf("%v: size %v bytes must be finite and >= 0", c.Op, c.Bytes)
	}
	if math.IsNaN(c.RecordedS) || math.IsInf(c.RecordedS, 0) || c.RecordedS < 0 {
		return fmt.Errorf("%v: recorded time %v s must be finite and >= 0", c.Op, c.RecordedS)
	}
	return nil
}

// AlphaBeta is the alpha-beta model of the package doc: N ranks on Link
// (the inter-node link for Hierarchical, with PerNode ranks a node joined
// by Intra), collectives by algorithm Alg.
type AlphaBeta struct {
	Alg Algorithm
	// N is the number of ranks, >= 1.
	N    int
	Link Link
	// Intra and PerNode configure Hierarchical: PerNode ranks per node
	// joined by Intra; N must be a multiple of PerNode.
	Intra   Link
	PerNode int
}

// Ranks returns N.
func (c AlphaBeta) Ranks() int { return c.N }

// String describes the model: "ring on ib (25 GB/s, alpha 5µs), 8 ranks".
func (c AlphaBeta) String() string {
	if c.Alg == Hierarchical {
		return fmt.Sprintf("alpha-beta hierarchical: %d ranks, %d a node on %v, nodes on %v", c.N, c.PerNode, c.Intra, c.Link)
	}
	return fmt.Sprintf("alpha-beta %v on %v, %d ranks", c.Alg, c.Link, c.N)
}

func (c AlphaBeta) validate() error {
	if c.N < 1 {
		return fmt.Errorf("collective: %d ranks; want >= 1", c.N)
	}
	if err := c.Link.Validate(); err != nil {
		return err
	}
	if c.Alg == Hierarchical {
		if err := c.Intra.Validate(); err != nil {
			return fmt.Errorf("intra-node link: %w", err)
		}
		if c.PerNode < 1 || c.N%c.PerNode != 0 {
			return fmt.Errorf("hierarchical collective: %d ranks is not a multiple of %d per node", c.N, c.PerNode)
		}
	} else if c.Alg > Hierarchical {
		return fmt.Errorf("collective: unknown algorithm %v", c.Alg)
	}
	return nil
}

// Time returns the modelled time of the call (see the package doc for each
// operation's formula).
func (c AlphaBeta) Time(call Call) (Estimate, error) {
	if err := c.validate(); err != nil {
		return Estimate{}, err
	}
	if err := checkCall(call); err != nil {
		return Estimate{}, err
	}
	if call.Op == AllReduce {
		return c.allReduce(call.Bytes), nil
	}
	if c.Alg == Hierarchical {
		return Estimate{}, fmt.Errorf("%w: the hierarchical algorithm here is an all-reduce's; price a %v with ring, tree or halving-doubling", ErrUnsupported, call.Op)
	}
	n, S := float64(c.N), call.Bytes
	steps, moved := opTerms(call.Op, c.Alg, c.N, S)
	e := Estimate{Bytes: S}
	if c.N > 1 {
		e.LatencyS = float64(steps) * c.Link.Latency
		e.BandwidthS = moved / c.Link.Bandwidth
	}
	e.Seconds = e.LatencyS + e.BandwidthS
	e.fill(busFactor(call.Op, n))
	return e, nil
}

// opTerms returns the latency steps and the bytes crossing the busiest
// link of every operation but the all-reduce (the package doc's table).
func opTerms(op Op, alg Algorithm, n int, S float64) (steps int, moved float64) {
	nf := float64(n)
	ring := n - 1
	logn := ceilLog2(n)
	pick := func(ringSteps int) int {
		if alg == Ring {
			return ringSteps
		}
		return logn
	}
	switch op {
	case ReduceScatter, ReduceScatterBlock:
		return pick(ring), (nf - 1) / nf * S
	case AllGather:
		return pick(ring), (nf - 1) * S
	case AllToAll:
		return ring, (nf - 1) / nf * S
	case Broadcast, Reduce:
		return pick(ring), S
	case Gather:
		return pick(ring), (nf - 1) * S
	case Scatter:
		return pick(ring), (nf - 1) / nf * S
	case Barrier:
		return logn, 0
	}
	return 0, 0
}

// busFactor is nccl-tests' bus-bandwidth factor of an operation, relative
// to S as Op defines it: busbw = S / t * factor, the per-link rate.
func busFactor(op Op, n float64) float64 {
	switch op {
	case AllReduce:
		return 2 * (n - 1) / n
	case ReduceScatter, ReduceScatterBlock, AllToAll, Scatter:
		return (n - 1) / n
	case AllGather, Gather:
		return n - 1
	case Broadcast, Reduce:
		return 1
	}
	return 0
}

// allReduce is the all-reduce of S bytes by c's algorithm.
func (c AlphaBeta) allReduce(S float64) Estimate {
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
	e.fill(busFactor(AllReduce, n))
	return e
}

// fill sets algbw = Bytes / Seconds and busbw = algbw * factor.
func (e *Estimate) fill(factor float64) {
	if e.Seconds > 0 {
		e.AlgBW = e.Bytes / e.Seconds
		e.BusBW = e.AlgBW * factor
	}
}

func ceilLog2(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}
