package whatif

import (
	"fmt"
	"os"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/usage"
	"github.com/neuronfabric/nfabric/workload"
)

// Request is a what-if as a user asks it, by names and files (the flags of
// 'nfabric whatif'); Prepare checks it and turns it into a trace and the
// Options Run takes. A request that is wrong in itself is a usage error
// naming the flag.
type Request struct {
	// Trace is a trace file or multi-rank prefix (traces.Load); Model a
	// built-in or YAML profile instead. Exactly one is given.
	Trace, Model string
	// Workers is Options.Workers (0: the trace's).
	Workers int
	// Net and CXL name links (presets, or the YAML file Links adds);
	// Algorithm is the network collectives' (ring, tree,
	// halving-doubling).
	Net, CXL, Algorithm, Links string
	// AstraNetwork and AstraSystem are ASTRA-sim's analytical network YAML
	// and system JSON, both or neither (collective.LoadAstra).
	AstraNetwork, AstraSystem string
	// Memory is the timing preset of the CXL memory; Shared makes the
	// workers share one controller port.
	Memory string
	Shared bool
	// Plan is a policy or "recorded" ("": the default plan, DefaultPlan);
	// Ladder is the ladder of "recorded" as control.ParseLadder reads it,
	// LadderGiven whether the user gave it (it is an error with any other
	// plan).
	Plan, Ladder string
	LadderGiven  bool
}

// Prepare checks q, loads its trace and resolves its plan.
func Prepare(q Request) (*workload.Trace, Options, error) {
	o := Options{Workers: q.Workers, Memory: q.Memory, Shared: q.Shared}
	if (q.Trace == "") == (q.Model == "") {
		return nil, o, usage.Errorf("give one of --trace FILE or --model NAME")
	}
	if q.Workers < 0 || q.Workers == 1 {
		return nil, o, usage.Errorf("--workers %d: a collective needs at least 2 workers (0: the trace's)", q.Workers)
	}
	var extra []collective.Link
	if q.Links != "" {
		data, err := os.ReadFile(q.Links)
		if err != nil {
			return nil, o, fmt.Errorf("read links: %w", err)
		}
		if extra, err = collective.ParseLinksYAML(data, q.Links); err != nil {
			return nil, o, err
		}
	}
	var err error
	if o.Net, err = collective.LookupLink(q.Net, extra); err != nil {
		return nil, o, usage.Errorf("--net: %v", err)
	}
	if o.CXL, err = collective.LookupLink(q.CXL, extra); err != nil {
		return nil, o, usage.Errorf("--cxl: %v", err)
	}
	if o.Alg, err = collective.ParseAlgorithm(q.Algorithm); err != nil {
		return nil, o, usage.Errorf("--algorithm: %v", err)
	}
	if o.Astra, err = collective.LoadAstra(q.AstraNetwork, q.AstraSystem); err != nil {
		return nil, o, err
	}
	ladder, err := control.ParseLadder(q.Ladder)
	if err != nil {
		return nil, o, usage.Errorf("--ladder-rungs: %v", err)
	}
	tr, err := LoadTrace(q.Trace, q.Model)
	if err != nil {
		return nil, o, err
	}
	if o.Plan, err = ResolvePlan(q.Plan, ladder, q.LadderGiven, tr); err != nil {
		return nil, o, err
	}
	return tr, o, nil
}
