package collective

import (
	"fmt"
	"strings"
)

// Op is a collective operation. Its values are MLCommons Chakra's
// CollectiveCommType (ALL_REDUCE = 0 ... BARRIER = 9), so a Chakra node's
// comm_type converts directly.
//
// S, the bytes of a call (Call.Bytes), is what Chakra's comm_size counts:
// the sum of the input tensors one rank hands to the collective (torch's
// record_param_comms "In msg nelems" times the element size):
//
//	AllReduce                      the buffer every rank reduces
//	ReduceScatter, ReduceScatterBlock
//	                               every rank's whole input; each keeps S/n
//	AllGather                      every rank's contribution; each ends with nS
//	AllToAll                       every rank's send buffer (S/n to each peer)
//	Broadcast, Reduce              the root's buffer
//	Gather                         every rank's contribution (the root gets nS)
//	Scatter                        the root's buffer (each rank gets S/n)
//	Barrier                        nothing (S is 0)
type Op uint8

// The collective operations, numbered as Chakra's CollectiveCommType.
const (
	AllReduce Op = iota
	Reduce
	AllGather
	Gather
	Scatter
	Broadcast
	AllToAll
	ReduceScatter
	ReduceScatterBlock
	Barrier
	// NumOps is the number of operations.
	NumOps
)

var opNames = [NumOps]string{
	AllReduce: "all-reduce", Reduce: "reduce", AllGather: "all-gather", Gather: "gather", Scatter: "scatter",
	Broadcast: "broadcast", AllToAll: "all-to-all", ReduceScatter: "reduce-scatter",
	ReduceScatterBlock: "reduce-scatter-block", Barrier: "barrier",
}

// String returns the operation's name: all-reduce, reduce-scatter, ...
func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Valid reports whether o is one of the operations.
func (o Op) Valid() bool { return o < NumOps }

// Chakra returns the operation's name in Chakra's enum: ALL_REDUCE, ...
func (o Op) Chakra() string {
	return strings.ToUpper(strings.ReplaceAll(o.String(), "-", "_"))
}

// Aggregates reports whether the operation reduces every rank's data (an
// all-reduce, or a reduce-scatter, its aggregation half): the collectives
// of gradients that NEURON-Fabric's controller can aggregate. The others
// move data without reducing it, or reduce to one root, and stay FP32.
func (o Op) Aggregates() bool {
	return o == AllReduce || o == ReduceScatter || o == ReduceScatterBlock
}

// ParseOp accepts an operation's name (all-reduce), its Chakra spelling
// (ALL_REDUCE) or the same with underscores or without separators
// (all_reduce, allreduce), in any case.
func ParseOp(s string) (Op, error) {
	key := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(strings.TrimSpace(s)))
	for o := range NumOps {
		if strings.ReplaceAll(o.String(), "-", "") == key {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown collective %q (want one of %s)", s, strings.Join(opNames[:], ", "))
}

// MarshalText writes the operation's name, so JSON carries "reduce-scatter".
func (o Op) MarshalText() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("collective: invalid operation %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText reads what ParseOp accepts.
func (o *Op) UnmarshalText(b []byte) error {
	v, err := ParseOp(string(b))
	if err != nil {
		return err
	}
	*o = v
	return nil
}
