package chakra

import (
	"fmt"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/workload"
)

// provenance tallies what the ranks held and what was left out.
func provenance(ranks []*Rank) *workload.Provenance {
	var s Stats
	p := &workload.Provenance{Format: ranks[0].format}
	for _, r := range ranks {
		p.Files = append(p.Files, r.Name)
		s.Nodes += r.Stats.Nodes
		for i, n := range r.Stats.ByType {
			s.ByType[i] += n
		}
		for i, n := range r.Stats.Ops {
			s.Ops[i] += n
		}
		s.Untyped += r.Stats.Untyped
		s.CtrlDeps += r.Stats.CtrlDeps
		s.CtrlAbsent += r.Stats.CtrlAbsent
		s.CtrlSelf += r.Stats.CtrlSelf
		s.DataSelf += r.Stats.DataSelf
		s.DataRepeated += r.Stats.DataRepeated
	}
	if len(ranks) > 1 {
		p.Format += fmt.Sprintf(", %d ranks", len(ranks))
		p.Read = append(p.Read, workload.Tally{What: "rank files", N: int64(len(ranks))})
	}
	p.Read = append(p.Read, workload.Tally{What: "nodes", N: s.Nodes})
	for t, n := range s.ByType {
		if n > 0 {
			p.Read = append(p.Read, workload.Tally{What: chakrav1.NodeType(t).String(), N: n})
		}
	}
	for op, n := range s.Ops {
		if n > 0 {
			p.Read = append(p.Read, workload.Tally{What: collective.Op(op).Chakra() + " collectives", N: n})
		}
	}
	ign := func(what string, n int64, why string) {
		if n > 0 {
			p.Ignored = append(p.Ignored, workload.Tally{What: what, N: n, Why: why})
		}
	}
	ign("control dependencies", s.CtrlDeps, "Chakra's feeder schedules on data dependencies only")
	ign("  of them on nodes the trace does not hold", s.CtrlAbsent, "ignored with the rest")
	ign("  of them on the node itself", s.CtrlSelf, "ignored with the rest")
	ign("data dependencies on the node itself", s.DataSelf, "a node cannot wait for itself (the feeder would never issue it)")
	ign("repeated data dependencies", s.DataRepeated, "a node waits once for each parent")
	ign("collective nodes without comm_type (untyped)", s.Untyped, "not priced: no operation to price (in a PyTorch-derived trace these are the CPU-side c10d:: calls; their GPU kernel nodes carry the type)")
	ign("COMM_SEND_NODE and COMM_RECV_NODE nodes", s.ByType[chakrav1.NodeType_COMM_SEND_NODE]+s.ByType[chakrav1.NodeType_COMM_RECV_NODE], "not priced: point-to-point messages are not collectives")
	ign("MEM_LOAD_NODE and MEM_STORE_NODE nodes", s.ByType[chakrav1.NodeType_MEM_LOAD_NODE]+s.ByType[chakrav1.NodeType_MEM_STORE_NODE], "not priced: remote memory is not modelled; they take no time on the timeline")
	ign("METADATA_NODE and INVALID_NODE nodes", s.ByType[chakrav1.NodeType_METADATA_NODE]+s.ByType[chakrav1.NodeType_INVALID_NODE], "no time on the timeline, as in ASTRA-sim")
	return p
}
