// Package experiments holds the paper's evidence blocks (its Table 3) as a
// registry: each block has a name, a quick and a full configuration, and a
// function that runs the experiments and returns their tables and figures
// beside the paper's own numbers. The command `nfabric reproduce` runs the
// registered blocks and writes their results; the per-topic commands
// (`nfabric verify`, `nfabric timing`, ...) call the same experiment
// functions with user-chosen parameters.
//
// Paper figures appear here only as constants feeding columns labelled
// "paper"; every other figure comes from the domain packages.
package experiments

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// Config is what every block receives.
type Config struct {
	// Full selects the full configuration (minutes to an hour); the default
	// quick one keeps the whole of `reproduce` to a few minutes.
	Full bool
	// Seed is the base seed; the same seed gives the same bytes out.
	Seed uint64
	// Logf reports progress; nil discards it.
	Logf func(format string, args ...any)
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// Block is one evidence block of the paper.
type Block struct {
	// Name is the short identifier used by --only and as the file stem.
	Name string
	// Title names the evidence, e.g. "Functional correctness (Sec. 6)".
	Title string
	// Order places the block in the report (the paper's order).
	Order int
	// Run executes the block.
	Run func(ctx context.Context, cfg Config) (*report.Result, error)
}

var (
	mu     sync.Mutex
	blocks = map[string]Block{}
)

// Register adds a block. It panics on a duplicate or unnamed block: both
// are programming errors caught by any test that imports the package.
func Register(b Block) {
	mu.Lock()
	defer mu.Unlock()
	if b.Name == "" || b.Run == nil {
		panic("experiments: block without name or Run")
	}
	if _, dup := blocks[b.Name]; dup {
		panic("experiments: duplicate block " + b.Name)
	}
	blocks[b.Name] = b
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
// empty), or an error naming the unknown ones and listing the known ones.
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

// Run runs the given blocks in order, writes each block's files into
// outDir and then outDir/REPORT.md linking them. A failing block is
// reported and the others still run; the returned error summarises the
// failures. progress receives one line per block (nil discards it).
func Run(ctx context.Context, bs []Block, cfg Config, outDir string, progress io.Writer) ([]Outcome, error) {
	if progress == nil {
		progress = io.Discard
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory %s: %w", outDir, err)
	}
	var outs []Outcome
	var failed []string
	for i, b := range bs {
		if err := ctx.Err(); err != nil {
			return outs, err
		}
		fmt.Fprintf(progress, "[%d/%d] %s: %s ...\n", i+1, len(bs), b.Name, b.Title)
		start := time.Now()
		bcfg := cfg
		if bcfg.Logf == nil {
			bcfg.Logf = func(format string, args ...any) {
				fmt.Fprintf(progress, "    "+format+"\n", args...)
			}
		}
		res, err := b.Run(ctx, bcfg)
		o := Outcome{Block: b, Result: res, Err: err, Wall: time.Since(start)}
		if err == nil && res != nil {
			res.Block = b.Name
			if res.Title == "" {
				res.Title = b.Title
			}
			o.Files, err = res.WriteFiles(outDir)
			o.Err = err
		}
		if o.Err != nil {
			failed = append(failed, b.Name)
			fmt.Fprintf(progress, "[%d/%d] %s: FAILED: %v\n", i+1, len(bs), b.Name, o.Err)
		} else {
			fmt.Fprintf(progress, "[%d/%d] %s: done in %s\n", i+1, len(bs), b.Name, o.Wall.Round(time.Millisecond))
		}
		outs = append(outs, o)
	}
	if err := report.WriteFileAtomic(filepath.Join(outDir, "REPORT.md"), []byte(Index(outs, cfg))); err != nil {
		return outs, err
	}
	if len(failed) > 0 {
		return outs, fmt.Errorf("%d block(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return outs, nil
}

// Index renders REPORT.md: one line per block with its status and links,
// then each block's Markdown in full. It holds no wall-clock times so that
// the same seed gives the same bytes.
func Index(outs []Outcome, cfg Config) string {
	var b strings.Builder
	b.WriteString("# NEURON-Fabric reproduction report\n\n")
	mode := "quick"
	if cfg.Full {
		mode = "full"
	}
	fmt.Fprintf(&b, "Configuration: %s, seed %d. Every figure in a column not labelled \"paper\" was computed by this run.\n\n", mode, cfg.Seed)
	b.WriteString("| block | evidence | status | files |\n| --- | --- | --- | --- |\n")
	for _, o := range outs {
		status := "ok"
		if o.Err != nil {
			status = "FAILED: " + strings.ReplaceAll(o.Err.Error(), "|", `\|`)
		} else if o.Result != nil && o.Result.Failed > 0 {
			status = fmt.Sprintf("%d passed, %d failed", o.Result.Passed, o.Result.Failed)
		}
		links := ""
		if o.Err == nil {
			links = fmt.Sprintf("[%s.md](%s.md), [%s.json](%s.json)", o.Block.Name, o.Block.Name, o.Block.Name, o.Block.Name)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", o.Block.Name, o.Block.Title, status, links)
	}
	b.WriteString("\n")
	for _, o := range outs {
		if o.Err == nil && o.Result != nil {
			b.WriteString(o.Result.Markdown())
		}
	}
	return b.String()
}
