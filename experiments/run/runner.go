package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// Outcome is what running one block produced.
type Outcome struct {
	Block  Block
	Result *report.Result
	Err    error
	Files  []string
	Wall   time.Duration
	// NotRun are the block's claims as ledger rows when Err is set: each
	// not run, with Err as the reason (Block.Claims).
	NotRun []report.Claim
}

// failed fills o.NotRun when the block failed.
func (o Outcome) failed(cfg Config) Outcome {
	if o.Err != nil {
		o.NotRun = o.Block.notRunClaims(cfg, o.Err)
	}
	return o
}

// unitResult is one unit's outcome as it travels in a shard file. Wall and
// CPU are what it took, in seconds (CPU 0 when it shared the process with
// other units: see measure); they vary from run to run and never reach the
// report.
type unitResult struct {
	Block  string          `json:"block"`
	Key    string          `json:"key"`
	Result json.RawMessage `json:"result,omitempty"`
	Err    string          `json:"error,omitempty"`
	Wall   float64         `json:"wall_s,omitempty"`
	CPU    float64         `json:"cpu_s,omitempty"`
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
		done: func(k int, res unitResult, m measure) {
			b := r.owner[k]
			if m.Wall >= slowUnit {
				fmt.Fprintf(progress, "    [%s/%s] done in %s%s\n", res.Block, res.Key, m.Wall.Round(time.Millisecond), costNote(m, r.units[k].unit.cost))
			}
			r.runs[b].results[r.pos[k]] = res
			r.runs[b].busy += m.Wall
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
	o = writeOutcome(o, r.outDir).failed(r.cfg)
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

// costNote is a finished unit's CPU time beside its estimate, for its
// progress line: " (3.2s of CPU; estimated 2.9s)", or the one known.
func costNote(m measure, est time.Duration) string {
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	switch {
	case m.CPUKnown && est > 0:
		return fmt.Sprintf(" (%s of CPU; estimated %s)", round(m.CPU), round(est))
	case m.CPUKnown:
		return fmt.Sprintf(" (%s of CPU)", round(m.CPU))
	case est > 0:
		return fmt.Sprintf(" (estimated %s of CPU)", round(est))
	}
	return ""
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
	keys := make([]string, len(results))
	for i, r := range results {
		if r.Err != "" {
			o.Err = errors.New(r.Err)
			return o
		}
		raws[i], keys[i] = r.Result, r.Key
	}
	res, err := b.layout(cfg, keys, raws)
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
