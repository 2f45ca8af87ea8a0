// Package run is the framework the evidence blocks run in: the registry
// (Register, Spec, Unit, Block), the run configuration and its tiers, the
// pool that runs units side by side under a core budget with CPU
// accounting, the shards that split a run across machines and the merge
// that puts them back, and the writing of each block's files and of the
// report's index (REPORT.md, index.html, ledger.json). It knows nothing of
// any block: the blocks live in package experiments and register
// themselves here from init functions.
//
// # How a block is written
//
// A block is four parts, each with one job:
//
//  1. Options: a struct with the block's parameters and its quick and full
//     values (e.g. experiments.FunctionalParams).
//  2. Units: Spec.Units lists the block's work for a Config as independent
//     units (seed x policy x configuration), each with a stable key unique
//     in the block ("seed1/sign", "bw128/k5"). Listing units runs nothing.
//     A unit's Run calls into the domain packages (cxl, timing, replay,
//     collective, hw, ...) and returns a typed result R: plain exported
//     fields, JSON-tagged, that survive a JSON round trip exactly (no
//     interface or func fields, no NaN). The framework checks the round
//     trip on every run (DecodeExact), because shards travel as JSON. A
//     unit that keeps one core busy and shares nothing with other units
//     says Cores: 1, so that `reproduce --jobs` may run it beside others;
//     one that says nothing runs alone (see Unit.Cores and Unit.Long).
//  3. The typed result R itself, which tests assert on.
//  4. Layout: Spec.Layout turns the results, in unit order, into a
//     report.Result (tables with the paper's figures beside ours, notes,
//     figures). It is pure: no I/O, no model calls and no formulas beyond
//     formatting. A figure the notes quote is computed by a domain package
//     inside a unit and carried in R.
//
// Then register it from an init function:
//
//	func init() {
//		run.Register(run.Spec[FooResult]{Name: "foo", Title: "Foo (Sec. 4)", Order: 40,
//			Units: fooUnits, Layout: fooLayout})
//	}
//
// Because a block is units plus a pure layout, Run can run the units of
// all blocks side by side (Config.Jobs) and still write the bytes of a
// run that takes them one at a time, and `reproduce --shard i/n` can
// run any subset of the units on another machine and `nfabric report merge`
// lays the gathered results out into the same bytes a single run writes
// (see RunShard and Merge).
package run

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/neuronfabric/nfabric/report"
	"github.com/neuronfabric/nfabric/usage"
)

// Config is what every block receives.
type Config struct {
	// Tier is the budget: quick (the default) keeps the whole of
	// `reproduce` to a few minutes, standard is the training block's
	// converging middle tier, full the configurations behind the notes.
	Tier Tier `json:"tier"`
	// Seed is the base seed; the same seed gives the same bytes out.
	Seed uint64 `json:"seed"`
	// Seeds, when not 0, replaces the tier's number of paired seeds in
	// every block that runs seeds (the training studies, the formats
	// rows, the control pilots): what the ledger's "seeds to decide" asks
	// for. 0 keeps each block's tier value.
	Seeds int `json:"seeds,omitempty"`
	// Logf reports progress; nil discards it.
	Logf func(format string, args ...any) `json:"-"`
	// Jobs is how many units Run and RunShard may run at once, counted in
	// cores (see Unit.Cores); 0 means GOMAXPROCS. It changes wall time,
	// never a byte of output.
	Jobs int `json:"-"`
}

// Full reports whether c runs the full tier (the blocks with two
// configurations choose by it).
func (c Config) Full() bool { return c.Tier == TierFull }

// MaxSeeds bounds Config.Seeds: each seed is a training run of every
// policy of a study, so ten thousand is already weeks of CPU.
const MaxSeeds = 10000

// Validate refuses a configuration no run can use, as a usage error
// naming the setting.
func (c Config) Validate() error {
	switch {
	case c.Tier < TierQuick || c.Tier > TierFull:
		return usage.Errorf("tier %d is not a tier", int(c.Tier))
	case c.Seeds < 0 || c.Seeds > MaxSeeds:
		return usage.Errorf("seeds %d: want 1 to %d paired seeds, or 0 for the tier's", c.Seeds, MaxSeeds)
	case c.Jobs < 0:
		return usage.Errorf("jobs %d: want 1 or more (0: GOMAXPROCS)", c.Jobs)
	}
	return nil
}

// Progressf reports progress through c.Logf, if any.
func (c Config) Progressf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// Unit is one independent piece of a block's work.
type Unit[R any] struct {
	// Key identifies the unit within its block; it must be stable across
	// runs of the same Config and unique in the block.
	Key string
	// Cores is how many cores the unit keeps busy while it runs: 1 for a
	// single-threaded computation or one single-threaded external tool.
	// AllCores (0, the default) is for a unit whose goroutines follow
	// GOMAXPROCS, or that shares mutable state (a cache, a scratch path,
	// the environment) with other units: it runs alone. A unit declaring
	// fewer cores may run beside other units of any block, so its Run
	// must touch nothing they touch.
	Cores int
	// Long marks a unit that takes far longer than most (a minute or
	// more, such as a 512-bit place and route). When several units may
	// run at once, long ones start first, so that one does not end up
	// running by itself at the end while the other cores idle.
	Long bool
	// Cost is the unit's estimated CPU time (user and system, with the
	// tools it runs) on the reference machine, from its block's cost model:
	// each block derives it from the unit's size (epochs, images, lines,
	// widths) and coefficients measured with a command recorded beside
	// them. Shards are balanced on it (PlanShards) and `reproduce --list`
	// sums it; it never changes a byte of output. 0 means unknown.
	Cost time.Duration
	// Run does the work by calling the domain packages.
	Run func(ctx context.Context, cfg Config) (R, error)
}

// Spec describes a block whose units return results of type R.
type Spec[R any] struct {
	// Name is the short identifier used by --only and as the file stem.
	Name string
	// Title names the evidence, e.g. "Functional correctness (Sec. 6)".
	Title string
	// Order places the block in the report (the paper's order).
	Order int
	// Units lists the block's units for cfg, in a fixed order. It must not
	// run them.
	Units func(cfg Config) ([]Unit[R], error)
	// Layout turns the units' results, in the order Units listed them,
	// into the block's report. It must be pure (see the package doc).
	Layout func(cfg Config, results []R) (*report.Result, error)
	// Claims lists the claims of the paper the block checks for cfg, as
	// its layout's ledger rows name them (Section, Name, Paper,
	// Criterion), without running anything; nil for a block that checks
	// none. When the block fails (a unit or its layout fails) each one
	// enters the ledger as not run with the reason, so a failure never
	// makes the ledger shorter or rosier.
	Claims func(cfg Config) []report.Claim
}

// Block is one registered evidence block of the paper.
type Block struct {
	Name  string
	Title string
	Order int

	claims func(cfg Config) []report.Claim
	plan   func(cfg Config) ([]plannedUnit, error)
	layout func(cfg Config, keys []string, results []json.RawMessage) (*report.Result, error)
}

// Claims lists the claims b checks for cfg (Spec.Claims), unjudged; nil
// for a block that declares none.
func (b Block) Claims(cfg Config) []report.Claim {
	if b.claims == nil {
		return nil
	}
	return b.claims(cfg)
}

// notRunClaims are b's claims as ledger rows of a block that failed with
// err: each not run, saying why.
func (b Block) notRunClaims(cfg Config, err error) []report.Claim {
	cs := b.Claims(cfg)
	for i := range cs {
		c := &cs[i]
		c.Block, c.Tier, c.Convergence, c.Interval = b.Name, cfg.Tier.String(), "n/a", ""
		c.Ours, c.Verdict = "not run: the block failed: "+err.Error(), report.VerdictNotRun
	}
	return cs
}

// UnitKeys lists the keys of b's units for cfg, in their order, without
// running them (e.g. to choose a shard count).
func (b Block) UnitKeys(cfg Config) ([]string, error) {
	us, err := b.Units(cfg)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = u.Key
	}
	return keys, nil
}

// UnitInfo is what a plan says of one unit without running it.
type UnitInfo struct {
	Block, Key string
	// Cores and Cost are the unit's (Unit.Cores, Unit.Cost).
	Cores int
	Cost  time.Duration
}

// Units describes b's units for cfg, in their order, without running
// them.
func (b Block) Units(cfg Config) ([]UnitInfo, error) {
	us, err := b.plan(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]UnitInfo, len(us))
	for i, u := range us {
		out[i] = UnitInfo{Block: b.Name, Key: u.key, Cores: u.cores, Cost: u.cost}
	}
	return out, nil
}

// plannedUnit is a Unit with its result type erased to JSON.
type plannedUnit struct {
	key   string
	cores int
	long  bool
	cost  time.Duration
	run   func(ctx context.Context, cfg Config) (json.RawMessage, error)
}

var (
	mu     sync.Mutex
	blocks = map[string]Block{}
)

// Register adds a block. It panics on a duplicate or incomplete block:
// both are programming errors caught by any test that imports the package.
func Register[R any](s Spec[R]) {
	b := NewBlock(s)
	mu.Lock()
	defer mu.Unlock()
	if _, dup := blocks[s.Name]; dup {
		panic("run: duplicate block " + s.Name)
	}
	blocks[s.Name] = b
}

// NewBlock erases a Spec's result type (units return JSON and the layout
// decodes it) without registering it: Register uses it, and so do tests
// that run a cut-down or synthetic block.
func NewBlock[R any](s Spec[R]) Block {
	if s.Name == "" || s.Units == nil || s.Layout == nil {
		panic("run: block without name, Units or Layout")
	}
	b := Block{Name: s.Name, Title: s.Title, Order: s.Order, claims: s.Claims}
	b.plan = func(cfg Config) ([]plannedUnit, error) {
		us, err := s.Units(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		seen := map[string]bool{}
		out := make([]plannedUnit, len(us))
		for i, u := range us {
			if u.Key == "" || strings.ContainsAny(u.Key, " \t\n") || seen[u.Key] || u.Run == nil {
				return nil, fmt.Errorf("%s: unit %d: key %q is empty, has blanks or repeats, or Run is nil", s.Name, i, u.Key)
			}
			if u.Cores < 0 || u.Cost < 0 {
				return nil, fmt.Errorf("%s: unit %s: Cores %d or Cost %v is negative", s.Name, u.Key, u.Cores, u.Cost)
			}
			seen[u.Key] = true
			out[i] = plannedUnit{key: u.Key, cores: u.Cores, long: u.Long, cost: u.Cost, run: func(ctx context.Context, cfg Config) (json.RawMessage, error) {
				r, err := u.Run(ctx, cfg)
				if err != nil {
					return nil, err
				}
				return json.Marshal(r)
			}}
		}
		return out, nil
	}
	b.layout = func(cfg Config, keys []string, raws []json.RawMessage) (*report.Result, error) {
		rs := make([]R, len(raws))
		for i, raw := range raws {
			if err := DecodeExact(raw, &rs[i]); err != nil {
				return nil, fmt.Errorf("%s: unit %s: %w", s.Name, keys[i], err)
			}
			if c, ok := any(rs[i]).(Consistent); ok {
				if err := c.CheckConsistent(); err != nil {
					return nil, fmt.Errorf("%s: unit %s: inconsistent result: %w", s.Name, keys[i], err)
				}
			}
		}
		res, err := s.Layout(cfg, rs)
		if err == nil && res != nil {
			SetStatus(res, rs)
		}
		return res, err
	}
	return b
}

// Skipper is implemented by unit results that can say their unit could not
// run (a missing tool or data set): SkipReason returns what was missing
// and how to get it, or "" when the unit ran.
type Skipper interface {
	SkipReason() string
}

// Consistent is implemented by unit results whose fields repeat one
// another (a mismatch count and the match flag derived from it, a final
// accuracy and the last epoch's): CheckConsistent returns an error naming
// the first contradiction or out-of-range value. Every result is checked
// after its JSON round trip, in a single run and in a merge alike, so a
// shard edited by hand fails its block instead of being laid out.
type Consistent interface {
	CheckConsistent() error
}

// SetStatus sets res.Status from the units' results: skipped when every
// unit skipped, partial when some did or the layout listed a substitution
// in res.Skipped, ok otherwise. The units' reasons join res.Skipped, each
// once.
func SetStatus[R any](res *report.Result, rs []R) {
	skipped := 0
	for _, r := range rs {
		s, ok := any(r).(Skipper)
		if !ok || s.SkipReason() == "" {
			continue
		}
		skipped++
		if reason := strings.TrimPrefix(s.SkipReason(), "skipped: "); !slices.Contains(res.Skipped, reason) {
			res.Skipped = append(res.Skipped, reason)
		}
	}
	switch {
	case len(rs) > 0 && skipped == len(rs):
		res.Status = report.StatusSkipped
	case len(res.Skipped) > 0:
		res.Status = report.StatusPartial
	default:
		res.Status = report.StatusOK
	}
}

// Blocks returns the registered blocks in report order.
func Blocks() []Block {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Block, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Select returns the blocks named in names (all blocks when names is
// empty) in report order, or an error naming the unknown ones and listing
// the known ones.
func Select(names []string) ([]Block, error) {
	all := Blocks()
	if len(names) == 0 {
		return all, nil
	}
	known := map[string]Block{}
	var list []string
	for _, b := range all {
		known[b.Name] = b
		list = append(list, b.Name)
	}
	var out []Block
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		b, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("unknown block %q (known: %s)", n, strings.Join(list, ", "))
		}
		seen[n] = true
		out = append(out, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, nil
}
