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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// Config is what every block receives.
type Config struct {
	// Tier is the budget: quick (the default) keeps the whole of
	// `reproduce` to a few minutes, standard is the training block's
	// converging middle tier, full the configurations behind the notes.
	Tier Tier `json:"tier"`
	// Seed is the base seed; the same seed gives the same bytes out.
	Seed uint64 `json:"seed"`
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
}

// Block is one registered evidence block of the paper.
type Block struct {
	Name  string
	Title string
	Order int

	plan   func(cfg Config) ([]plannedUnit, error)
	layout func(cfg Config, results []json.RawMessage) (*report.Result, error)
}

// UnitKeys lists the keys of b's units for cfg, in their order, without
// running them (e.g. to choose a shard count).
func (b Block) UnitKeys(cfg Config) ([]string, error) {
	us, err := b.plan(cfg)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = u.key
	}
	return keys, nil
}

// plannedUnit is a Unit with its result type erased to JSON.
type plannedUnit struct {
	key   string
	cores int
	long  bool
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
	b := Block{Name: s.Name, Title: s.Title, Order: s.Order}
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
			if u.Cores < 0 {
				return nil, fmt.Errorf("%s: unit %s: Cores %d is negative", s.Name, u.Key, u.Cores)
			}
			seen[u.Key] = true
			out[i] = plannedUnit{key: u.Key, cores: u.Cores, long: u.Long, run: func(ctx context.Context, cfg Config) (json.RawMessage, error) {
				r, err := u.Run(ctx, cfg)
				if err != nil {
					return nil, err
				}
				return json.Marshal(r)
			}}
		}
		return out, nil
	}
	b.layout = func(cfg Config, raws []json.RawMessage) (*report.Result, error) {
		rs := make([]R, len(raws))
		for i, raw := range raws {
			if err := DecodeExact(raw, &rs[i]); err != nil {
				return nil, fmt.Errorf("%s: unit %d: %w", s.Name, i, err)
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

// DecodeExact decodes raw into v and checks that v encodes back to the same
// values, so a result read from a shard is the result the unit returned.
// Values, not bytes, are compared: a shard re-encoded by another JSON tool
// (keys reordered, other spacing, 1e-05 written 0.00001, 3 written 3.0,
// characters escaped differently) still merges; a value the result type
// cannot hold (a fraction in an integer field, a number past float64's
// precision) is named with its path.
func DecodeExact(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	got, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("re-encode result: %w", err)
	}
	var want, back any
	if err := decodeNumbers(raw, &want); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if err := decodeNumbers(got, &back); err != nil {
		return fmt.Errorf("re-encode result: %w", err)
	}
	if path, ok := sameJSON("result", want, back); !ok {
		return fmt.Errorf("%s: the shard's value does not survive decoding into the result type (it holds data the type cannot represent exactly)", path)
	}
	return nil
}

func decodeNumbers(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// sameJSON compares two decoded JSON values (numbers as json.Number):
// objects key by key in any order, arrays element by element, numbers by
// value (exactly as integers when both are, else as float64). It returns
// the path of the first difference.
func sameJSON(path string, a, b any) (string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, false
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, in := x[k]; !in {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			xv, inX := x[k]
			yv, inY := y[k]
			if inX != inY {
				return path + "." + k, false
			}
			if p, ok := sameJSON(path+"."+k, xv, yv); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path, false
		}
		for i := range x {
			if p, ok := sameJSON(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		y, ok := b.(json.Number)
		return path, ok && sameNumber(x, y)
	}
	return path, a == b
}

func sameNumber(a, b json.Number) bool {
	if x, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return x == y
		}
	}
	if x, err := strconv.ParseUint(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseUint(string(b), 10, 64); err == nil {
			return x == y
		}
	}
	x, err1 := strconv.ParseFloat(string(a), 64)
	y, err2 := strconv.ParseFloat(string(b), 64)
	return err1 == nil && err2 == nil && x == y
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

// Outcome is what running one block produced.
type Outcome struct {
	Block  Block
	Result *report.Result
	Err    error
	Files  []string
	Wall   time.Duration
}

// unitResult is one unit's outcome as it travels in a shard file.
type unitResult struct {
	Block  string          `json:"block"`
	Key    string          `json:"key"`
	Result json.RawMessage `json:"result,omitempty"`
	Err    string          `json:"error,omitempty"`
}

// runUnit runs u and records its outcome; only a cancelled ctx is an error.
func runUnit(ctx context.Context, b Block, u plannedUnit, cfg Config) (unitResult, error) {
	raw, err := u.run(ctx, cfg)
	if cerr := ctx.Err(); cerr != nil {
		return unitResult{}, cerr
	}
	r := unitResult{Block: b.Name, Key: u.key, Result: raw}
	if err != nil {
		r.Result, r.Err = nil, fmt.Sprintf("%s: %v", u.key, err)
	}
	return r, nil
}

// Run runs the given blocks, writes each block's files into outDir and
// then outDir/REPORT.md linking them. A failing block is reported and the
// others still run; the returned error summarises the failures. progress
// receives a line when a block starts and when it is done, and the units'
// own lines prefixed with block/unit (nil discards them).
//
// Units run on cfg.Jobs slots (see runPool), those of different blocks
// side by side, so blocks may finish out of report order; each block is
// laid out and written when its last unit is done. Every unit's result
// goes through JSON before the layout sees it, as it does when shards are
// merged, so a single run and merged shards write the same bytes, and so
// does every Jobs.
func Run(ctx context.Context, bs []Block, cfg Config, outDir string, progress io.Writer) ([]Outcome, error) {
	if progress == nil {
		progress = io.Discard
	}
	progress = &lockedWriter{w: progress}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory %s: %w", outDir, err)
	}
	jobs := cfg.jobs()
	r := newBlockRuns(bs, cfg, outDir, progress, jobs)
	cpu0, _ := processCPU()
	t0 := time.Now()
	for i := range r.runs {
		if r.runs[i].left == 0 {
			r.begin(i)
			r.finish(i)
		}
	}
	err := runPool(ctx, r.units, jobs, poolEvents{
		start: func(k int) { r.begin(r.owner[k]) },
		done: func(k int, res unitResult, wall time.Duration) {
			b := r.owner[k]
			if wall >= slowUnit {
				fmt.Fprintf(progress, "    [%s/%s] done in %s\n", res.Block, res.Key, wall.Round(time.Millisecond))
			}
			r.runs[b].results[r.pos[k]] = res
			r.runs[b].busy += wall
			if r.runs[b].left--; r.runs[b].left == 0 {
				r.finish(b)
			}
		},
	})
	var outs []Outcome
	for _, br := range r.runs {
		if br.finished {
			outs = append(outs, br.out)
		}
	}
	if err != nil {
		return outs, err
	}
	wall := time.Since(t0)
	if cpu1, ok := processCPU(); ok {
		fmt.Fprintf(progress, "all %d blocks done in %s, %s of CPU (%.2f cores busy on average, --jobs %d)\n",
			len(bs), wall.Round(time.Millisecond), (cpu1 - cpu0).Round(time.Millisecond), (cpu1-cpu0).Seconds()/wall.Seconds(), jobs)
	}
	return outs, writeIndex(outs, cfg, outDir)
}

// blockRuns tracks the blocks of one Run: each block's planned units in
// the pool's list, their results by position and when the block is done.
type blockRuns struct {
	bs       []Block
	cfg      Config
	outDir   string
	progress io.Writer
	jobs     int
	runs     []blockRun
	units    []poolUnit
	owner    []int // owner[k]: the block of units[k]
	pos      []int // pos[k]: units[k]'s position in its block
}

// blockRun is one block's state during a Run.
type blockRun struct {
	planErr  error
	results  []unitResult
	left     int // units not yet done
	started  bool
	finished bool
	start    time.Time
	cpu0     time.Duration
	busy     time.Duration // the units' wall times, summed
	out      Outcome
}

// newBlockRuns plans every block of bs; the pool's units are all blocks'
// units in report order.
func newBlockRuns(bs []Block, cfg Config, outDir string, progress io.Writer, jobs int) *blockRuns {
	r := &blockRuns{bs: bs, cfg: cfg, outDir: outDir, progress: progress, jobs: jobs, runs: make([]blockRun, len(bs))}
	for i, b := range bs {
		us, err := b.plan(withProgress(cfg, progress, b.Name))
		r.runs[i] = blockRun{planErr: err, results: make([]unitResult, len(us)), left: len(us)}
		for j, u := range us {
			r.units = append(r.units, poolUnit{block: b, unit: u, cfg: withProgress(cfg, progress, b.Name+"/"+u.key)})
			r.owner = append(r.owner, i)
			r.pos = append(r.pos, j)
		}
	}
	return r
}

// begin prints block i's start line when its first unit starts.
func (r *blockRuns) begin(i int) {
	br := &r.runs[i]
	if br.started {
		return
	}
	br.started, br.start = true, time.Now()
	br.cpu0, _ = processCPU()
	fmt.Fprintf(r.progress, "[%d/%d] %s: %s ...\n", i+1, len(r.bs), r.bs[i].Name, r.bs[i].Title)
}

// finish lays out block i from its units' results, writes its files and
// prints its status with the wall time from its first unit's start to its
// last unit's end, and its CPU time when it ran alone (one job) or else
// the sum of its units' wall times (with several jobs the span also holds
// other blocks' units).
func (r *blockRuns) finish(i int) {
	br, b := &r.runs[i], r.bs[i]
	bcfg := withProgress(r.cfg, r.progress, b.Name)
	o := Outcome{Block: b, Err: br.planErr}
	if o.Err == nil {
		o = layoutBlock(b, bcfg, br.results)
	}
	o.Wall = time.Since(br.start)
	o = writeOutcome(o, r.outDir)
	br.out, br.finished = o, true
	if o.Err != nil {
		fmt.Fprintf(r.progress, "[%d/%d] %s: FAILED: %v\n", i+1, len(r.bs), b.Name, o.Err)
		return
	}
	extra := fmt.Sprintf(" (its units ran %s in all)", br.busy.Round(time.Millisecond))
	if c, ok := processCPU(); ok && r.jobs == 1 {
		extra = fmt.Sprintf(", %s of CPU", (c - br.cpu0).Round(time.Millisecond))
	}
	fmt.Fprintf(r.progress, "[%d/%d] %s: %s, done in %s%s\n", i+1, len(r.bs), b.Name, markdownStatus(o), o.Wall.Round(time.Millisecond), extra)
}

// withProgress gives cfg, when it has no Logf, one that writes indented
// lines prefixed with name (the block, or block/unit) to progress, so the
// lines of units running at once stay readable.
func withProgress(cfg Config, progress io.Writer, name string) Config {
	if cfg.Logf == nil {
		prefix := "    [" + name + "] "
		cfg.Logf = func(format string, args ...any) {
			fmt.Fprintf(progress, prefix+format+"\n", args...)
		}
	}
	return cfg
}

// layoutBlock lays out b from its units' results, given in plan order; the
// first failed unit fails the block.
func layoutBlock(b Block, cfg Config, results []unitResult) Outcome {
	o := Outcome{Block: b}
	raws := make([]json.RawMessage, len(results))
	for i, r := range results {
		if r.Err != "" {
			o.Err = errors.New(r.Err)
			return o
		}
		raws[i] = r.Result
	}
	res, err := b.layout(cfg, raws)
	if err == nil && res == nil {
		err = errors.New("layout returned no result")
	}
	if err != nil {
		o.Err = err
		return o
	}
	res.Block = b.Name
	if res.Title == "" {
		res.Title = b.Title
	}
	for i := range res.Claims {
		c := &res.Claims[i]
		if c.Block == "" {
			c.Block = b.Name
		}
		if c.Tier == "" {
			c.Tier = cfg.Tier.String()
		}
		if c.Convergence == "" {
			c.Convergence = "n/a"
		}
	}
	o.Result = res
	return o
}

// Ledger gathers every block's claims in report order: the rows of the
// claims ledger that REPORT.md, index.html and ledger.json open with.
func Ledger(outs []Outcome) []report.Claim {
	var out []report.Claim
	for _, o := range outs {
		if o.Err == nil && o.Result != nil {
			out = append(out, o.Result.Claims...)
		}
	}
	return out
}

// writeOutcome writes a laid-out block's files into outDir.
func writeOutcome(o Outcome, outDir string) Outcome {
	if o.Err == nil && o.Result != nil {
		o.Files, o.Err = o.Result.WriteFiles(outDir)
	}
	return o
}

// writeIndex writes REPORT.md and index.html and summarises the failed
// blocks.
func writeIndex(outs []Outcome, cfg Config, outDir string) error {
	ledger, err := LedgerJSON(outs)
	if err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "ledger.json"), ledger); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "REPORT.md"), []byte(Index(outs, cfg))); err != nil {
		return err
	}
	page, err := IndexHTML(outs, cfg)
	if err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "index.html"), page); err != nil {
		return err
	}
	var failed []string
	for _, o := range outs {
		if o.Err != nil {
			failed = append(failed, o.Block.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d block(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// BlockStatus is a block's status word ("ok" or "failed") and its detail
// (the error, the check counts): the one source of REPORT.md's status
// column and index.html's status badges, so a status the block's result
// carries plugs in here for both.
func BlockStatus(o Outcome) (status, detail string) {
	switch {
	case o.Err != nil:
		return "failed", o.Err.Error()
	case o.Result != nil && o.Result.Failed > 0:
		return "failed", fmt.Sprintf("%d passed, %d failed", o.Result.Passed, o.Result.Failed)
	case o.Result != nil && (o.Result.Status == report.StatusSkipped || o.Result.Status == report.StatusPartial):
		return o.Result.Status, strings.Join(o.Result.Skipped, "; ")
	case o.Result != nil && len(o.Result.Skipped) > 0:
		return report.StatusPartial, strings.Join(o.Result.Skipped, "; ")
	}
	return report.StatusOK, ""
}

// FailedBlocks returns an error naming every outcome whose BlockStatus is
// "failed" (an error or failed checks), nil when none is: a run whose
// report records a failure must not exit as a success.
func FailedBlocks(outs []Outcome) error {
	var failed []string
	for _, o := range outs {
		if st, detail := BlockStatus(o); st == "failed" {
			failed = append(failed, o.Block.Name+" ("+detail+")")
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d blocks failed: %s", len(failed), len(outs), strings.Join(failed, "; "))
}

// markdownStatus is BlockStatus as REPORT.md's status column and the
// progress lines print it.
func markdownStatus(o Outcome) string {
	st, detail := BlockStatus(o)
	switch {
	case detail == "":
		return st
	case o.Err != nil:
		return strings.ToUpper(st) + ": " + detail
	case st == "failed":
		return detail
	}
	return st + ": " + detail
}

func indexIntro(cfg Config) string {
	return fmt.Sprintf("Configuration: %s, seed %d. Every figure in a column not labelled \"paper\" was computed by this run.", cfg.Tier, cfg.Seed)
}

const indexTitle = "NEURON-Fabric reproduction report"

// blockFiles are the block's own files the indexes link.
func blockFiles(o Outcome) []string {
	if o.Err != nil {
		return nil
	}
	return []string{o.Block.Name + ".md", o.Block.Name + ".json"}
}

// LedgerJSON is ledger.json: the claims ledger's rows as indented JSON,
// the same rows REPORT.md and index.html open with.
func LedgerJSON(outs []Outcome) ([]byte, error) {
	rows := Ledger(outs)
	if rows == nil {
		rows = []report.Claim{}
	}
	b, err := json.MarshalIndent(struct {
		Claims []report.Claim `json:"claims"`
	}{rows}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode ledger.json: %w", err)
	}
	return append(b, '\n'), nil
}

// Index renders REPORT.md: the claims ledger (each row linking to its
// block's file), one line per block with its status and links, then each
// block's Markdown in full. It holds no wall-clock times so that the same
// seed gives the same bytes.
func Index(outs []Outcome, cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", indexTitle, indexIntro(cfg))
	if ledger := Ledger(outs); len(ledger) > 0 {
		t := report.LedgerTable(ledger, func(block string) string { return fmt.Sprintf("[%s](%s.md)", block, block) })
		t.Title = ""
		fmt.Fprintf(&b, "## Claims ledger\n\n%s\n\n%s\n", report.LedgerSummary(ledger), t.Markdown())
		b.WriteString("## Blocks\n\n")
	}
	b.WriteString("| block | evidence | status | files |\n| --- | --- | --- | --- |\n")
	for _, o := range outs {
		status := strings.ReplaceAll(report.EscapeMarkdown(markdownStatus(o)), "|", `\|`)
		var links []string
		for _, f := range blockFiles(o) {
			links = append(links, fmt.Sprintf("[%s](%s)", f, f))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", o.Block.Name, report.EscapeMarkdown(o.Block.Title), status, strings.Join(links, ", "))
	}
	b.WriteString("\n")
	for _, o := range outs {
		if o.Err == nil && o.Result != nil {
			b.WriteString(o.Result.Markdown())
		}
	}
	return b.String()
}

// IndexHTML renders index.html from the same outcomes as Index: the whole
// report on one self-contained page (see report.Page).
func IndexHTML(outs []Outcome, cfg Config) ([]byte, error) {
	p := report.Page{Title: indexTitle, Intro: []string{indexIntro(cfg), "Open REPORT.md for the same report in Markdown; each block's files are linked from its section."}, Ledger: Ledger(outs)}
	for _, o := range outs {
		st, detail := BlockStatus(o)
		pb := report.PageBlock{Name: o.Block.Name, Title: o.Block.Title, Status: st, Detail: detail, Files: blockFiles(o)}
		if o.Err == nil {
			pb.Result = o.Result
			if o.Result != nil && o.Result.Title != "" {
				pb.Title = o.Result.Title
			}
		}
		p.Blocks = append(p.Blocks, pb)
	}
	return p.HTML()
}
