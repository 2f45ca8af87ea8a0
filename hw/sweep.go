package hw

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/neuronfabric/nfabric/usage"
)

// ParseWidths reads line widths given by name, as `nfabric hw` takes them:
// numbers of bits, or "all" (or nothing) for every width of Widths. A width
// the generator cannot build is a usage error.
func ParseWidths(names []string) ([]int, error) {
	if len(names) == 0 || len(names) == 1 && strings.TrimSpace(names[0]) == "all" {
		return Widths, nil
	}
	var out []int
	for _, n := range names {
		w, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			return nil, usage.Errorf("--widths: %q is not a number", n)
		}
		if err := (Config{Width: w}).Validate(); err != nil {
			return nil, usage.Errorf("--widths: %v", err)
		}
		out = append(out, w)
	}
	return out, nil
}

// ParseSimulators reads simulator names (verilator, iverilog).
func ParseSimulators(names []string) ([]Simulator, error) {
	var ss []Simulator
	for _, n := range names {
		sim := Simulator(strings.TrimSpace(n))
		if !slices.Contains(Simulators, sim) {
			return nil, usage.Errorf("--sim: unknown simulator %q (want verilator or iverilog)", n)
		}
		ss = append(ss, sim)
	}
	return ss, nil
}

// ParseSumDatapaths reads the integer-sum formats' datapaths run beside the
// paper's: format names, each once; nothing or "none" is none. The vote
// datapath is refused: it always runs.
func ParseSumDatapaths(names []string) ([]Datapath, error) {
	var out []Datapath
	for _, n := range names {
		if t := strings.TrimSpace(n); t == "" || t == "none" {
			continue
		}
		d, err := ParseDatapath(n)
		if err == nil && d.Paper() {
			err = fmt.Errorf("%s is the paper's datapath, always run, not a summed format's (int8, bfp8)", d)
		}
		if err != nil {
			return nil, usage.Errorf("--formats: %v", err)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// CosimRun is one run of a co-simulation sweep: a result, or the
// simulator that was skipped (not installed) and why.
type CosimRun struct {
	Sim     Simulator
	Result  CosimResult
	Skipped error
}

// CosimTally counts a sweep's runs.
type CosimTally struct{ Passed, Failed int }

// Err is the sweep's verdict: an error when a run failed or none ran.
func (t CosimTally) Err() error {
	if t.Failed > 0 {
		return fmt.Errorf("co-simulation: %d run(s) failed", t.Failed)
	}
	if t.Passed == 0 {
		return fmt.Errorf("co-simulation: no simulator available (install the Debian packages verilator and iverilog)")
	}
	return nil
}

// CosimSweep co-simulates every configuration on every simulator, in that
// order, with vectors vectors each (Vectors(c, vectors, seed)), calling
// each with every run as it completes, once per simulator that is not
// installed. A configuration or vector count that is wrong in itself is a
// usage error before any run.
func CosimSweep(ctx context.Context, cs []Config, sims []Simulator, vectors int, seed uint64, dir string, each func(CosimRun)) (CosimTally, error) {
	var t CosimTally
	if vectors < 1 {
		return t, usage.Errorf("--vectors must be positive")
	}
	for _, c := range cs {
		if err := c.Validate(); err != nil {
			return t, usage.Wrap(err)
		}
	}
	for _, sim := range sims {
		if err := sim.Check(); err != nil {
			each(CosimRun{Sim: sim, Skipped: err})
			continue
		}
		for _, c := range cs {
			r, err := Cosim(ctx, c, sim, Vectors(c, vectors, seed), dir)
			if err != nil {
				return t, err
			}
			each(CosimRun{Sim: sim, Result: r})
			if r.Passed() {
				t.Passed++
			} else {
				t.Failed++
			}
		}
	}
	return t, nil
}
