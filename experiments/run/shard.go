package run

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// Shard is part Index of Of parts of a run's units. The units (the
// selected blocks in report order, each block's units in its Units order:
// the global order) are dealt to the parts by their estimated cost,
// longest first (see PlanShards), so that parts take about the same CPU
// time although units differ in cost by a factor of 1000 and more.
type Shard struct {
	Index, Of int
}

// ShardPlan is one part of a run's units: the units it runs, in the
// global order, and their estimated CPU time in all.
type ShardPlan struct {
	Units []UnitInfo
	Cost  time.Duration
}

// PlanShards deals the units of bs for cfg to n shards and returns each
// shard's units and estimated CPU time, without running anything; shard
// i's file holds the results of plans[i].Units.
//
// The rule is LPT (longest processing time first; Graham 1969): taking
// the units from the most to the least costly (Unit.Cost; equal costs in
// the global order), each goes to the shard with the least estimated cost
// so far, between equal costs the one with fewer units, then the lower
// index. The most loaded shard then carries at most 4/3 of the optimum
// (plus the estimates' error); units of unknown cost (0) spread evenly by
// count. The deal depends only on the plan and the cost models, so every
// shard of a run computes the same one, and the merge, which places
// results by unit key, writes the same bytes whatever the deal.
func PlanShards(bs []Block, cfg Config, n int) ([]ShardPlan, error) {
	if n < 1 {
		return nil, fmt.Errorf("shards: %d parts, want at least 1", n)
	}
	all, err := plan(bs, cfg, io.Discard)
	if err != nil {
		return nil, err
	}
	plans := make([]ShardPlan, n)
	for s, idx := range deal(all, n) {
		for _, i := range idx {
			g := all[i]
			plans[s].Units = append(plans[s].Units, UnitInfo{Block: bs[g.block].Name, Key: g.unit.key, Cores: g.unit.cores, Cost: g.unit.cost})
			plans[s].Cost += g.unit.cost
		}
	}
	return plans, nil
}

// deal assigns the units of all to n shards by LPT (see PlanShards) and
// returns each shard's unit indices in the global order.
func deal(all []globalUnit, n int) [][]int {
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(all[b].unit.cost, all[a].unit.cost) })
	load := make([]time.Duration, n)
	out := make([][]int, n)
	for _, i := range order {
		best := 0
		for s := 1; s < n; s++ {
			if load[s] < load[best] || (load[s] == load[best] && len(out[s]) < len(out[best])) {
				best = s
			}
		}
		load[best] += all[i].unit.cost
		out[best] = append(out[best], i)
	}
	for _, idx := range out {
		slices.Sort(idx)
	}
	return out
}

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return Shard{Index: i, Of: n}, nil
}

// FileName is the shard's file under the output directory:
// shard-I-of-N.json.
func (s Shard) FileName() string { return fmt.Sprintf("shard-%d-of-%d.json", s.Index, s.Of) }

var shardName = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.json$`)

// shardFormat names the shard file's layout; Merge refuses other versions.
// Version 2 carries the configuration's tier ("tier": "quick", "standard"
// or "full") where version 1 carried a "full" flag; version 3 adds the
// program that ran the shard and a checksum of the content.
const shardFormat = "nfabric-shard/3"

// shardFile is what one shard writes: the run's configuration, which shard
// it is, the program that ran it, the results of its units, the shard's
// own wall and CPU time in seconds (this process and its tools, for the
// merge to set beside the estimate) and a checksum of all of that.
type shardFile struct {
	Format string       `json:"format"`
	Config Config       `json:"config"`
	Blocks []string     `json:"blocks"`
	Shard  int          `json:"shard"`
	Of     int          `json:"of"`
	Binary Binary       `json:"binary"`
	Units  []unitResult `json:"units"`
	Wall   float64      `json:"wall_s,omitempty"`
	CPU    float64      `json:"cpu_s,omitempty"`
	// Checksum is shardChecksum of the other fields.
	Checksum string `json:"checksum"`
}

// globalUnit is one unit in the global order.
type globalUnit struct {
	block int
	unit  plannedUnit
}

// plan lists every unit of bs in the global order; each block plans with
// a Logf (when cfg has none) that prefixes its name.
func plan(bs []Block, cfg Config, progress io.Writer) ([]globalUnit, error) {
	var all []globalUnit
	for i, b := range bs {
		us, err := b.plan(withProgress(cfg, progress, b.Name))
		if err != nil {
			return nil, err
		}
		for _, u := range us {
			all = append(all, globalUnit{block: i, unit: u})
		}
	}
	return all, nil
}

func blockNames(bs []Block) []string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return names
}

// RunShard runs shard s of the units of bs and writes their results to
// outDir/s.FileName(). A unit that fails is recorded with its error (Merge
// fails its block, as a single run would); only a cancelled ctx or an
// unwritable file is an error here.
func RunShard(ctx context.Context, bs []Block, cfg Config, s Shard, outDir string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	if s.Of < 1 || s.Index < 0 || s.Index >= s.Of {
		return "", fmt.Errorf("shard %d/%d out of range", s.Index, s.Of)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("create output directory %s: %w", outDir, err)
	}
	progress = &lockedWriter{w: progress}
	all, err := plan(bs, cfg, progress)
	if err != nil {
		return "", err
	}
	f := shardFile{Format: shardFormat, Config: cfg, Blocks: blockNames(bs), Shard: s.Index, Of: s.Of, Binary: ThisBinary(), Units: []unitResult{}}
	var mine []poolUnit
	for _, i := range deal(all, s.Of)[s.Index] {
		g := all[i]
		b := bs[g.block]
		mine = append(mine, poolUnit{block: b, unit: g.unit, cfg: withProgress(cfg, progress, b.Name+"/"+g.unit.key)})
	}
	f.Units = make([]unitResult, len(mine))
	var est time.Duration
	for _, u := range mine {
		est += u.unit.cost
	}
	fmt.Fprintf(progress, "shard %d/%d: %d units, estimated %s of CPU\n", s.Index, s.Of, len(mine), est.Round(time.Second))
	t0 := time.Now()
	cpu0, cpuOK := processCPU()
	err = runPool(ctx, mine, cfg.jobs(), poolEvents{
		start: func(k int) {
			fmt.Fprintf(progress, "[%d/%d] %s/%s ...\n", k+1, len(mine), mine[k].block.Name, mine[k].unit.key)
		},
		done: func(k int, r unitResult, m measure) {
			if r.Err != "" {
				fmt.Fprintf(progress, "[%d/%d] %s/%s: FAILED: %s\n", k+1, len(mine), r.Block, r.Key, r.Err)
			} else if m.Wall >= slowUnit {
				fmt.Fprintf(progress, "[%d/%d] %s/%s: done in %s%s\n", k+1, len(mine), r.Block, r.Key, m.Wall.Round(time.Millisecond), costNote(m, mine[k].unit.cost))
			}
			r.Wall = m.Wall.Seconds()
			if m.CPUKnown {
				r.CPU = m.CPU.Seconds()
			}
			f.Units[k] = r
		},
	})
	if err != nil {
		return "", err
	}
	f.Wall = time.Since(t0).Seconds()
	if cpu1, ok := processCPU(); ok && cpuOK {
		f.CPU = (cpu1 - cpu0).Seconds()
	}
	if f.Checksum, err = shardChecksum(f); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return "", fmt.Errorf("encode shard: %w", err)
	}
	path := filepath.Join(outDir, s.FileName())
	return path, report.WriteFileAtomic(path, buf.Bytes())
}

// readShards reads every shard-I-of-N.json in dirs and checks that they
// come from one run (same configuration, blocks and N) and that every
// shard 0..N-1 is there exactly once.
func readShards(dirs []string) ([]shardFile, error) {
	var files []shardFile
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("read shard directory: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() || !shardName.MatchString(e.Name()) {
				continue
			}
			p := filepath.Join(d, e.Name())
			// A FIFO or device named like a shard would block the read
			// or never end: only regular files (or links to them) are read.
			if st, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("read shard: %w", err)
			} else if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("shard %s is not a regular file (%v)", p, st.Mode().Type())
			}
			f, err := readShard(p)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no shard-I-of-N.json files in %s", strings.Join(dirs, ", "))
	}
	first := files[0]
	seen := make(map[int]bool)
	me := ThisBinary()
	for _, f := range files {
		if why := me.sameProgram(f.Binary); why != "" {
			return nil, fmt.Errorf("shard %d/%d was run by another program than this merge: %s; run every shard and the merge with one nfabric binary", f.Shard, f.Of, why)
		}
		if f.Of != first.Of || f.Config.Tier != first.Config.Tier || f.Config.Seed != first.Config.Seed || f.Config.Seeds != first.Config.Seeds || !slices.Equal(f.Blocks, first.Blocks) {
			return nil, fmt.Errorf("shards %d/%d and %d/%d come from different runs (configuration, blocks or shard count differ)", first.Shard, first.Of, f.Shard, f.Of)
		}
		if seen[f.Shard] {
			return nil, fmt.Errorf("shard %d/%d appears twice", f.Shard, f.Of)
		}
		seen[f.Shard] = true
	}
	var missing []string
	for i := range first.Of {
		if !seen[i] {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing shard(s) %s of %d", strings.Join(missing, ", "), first.Of)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Shard < files[j].Shard })
	return files, nil
}

func readShard(path string) (shardFile, error) {
	var f shardFile
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("read shard: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("shard %s: %w", path, err)
	}
	if f.Format != shardFormat {
		return f, fmt.Errorf("shard %s: format %q, want %q", path, f.Format, shardFormat)
	}
	if sum, err := shardChecksum(f); err != nil {
		return f, fmt.Errorf("shard %s: %w", path, err)
	} else if f.Checksum != sum {
		return f, fmt.Errorf("shard %s: checksum %q, its content sums to %q (the file was changed after the shard wrote it)", path, f.Checksum, sum)
	}
	m := shardName.FindStringSubmatch(filepath.Base(path))
	if m[1] != fmt.Sprint(f.Shard) || m[2] != fmt.Sprint(f.Of) || f.Of < 1 || f.Shard >= f.Of {
		return f, fmt.Errorf("shard %s: holds shard %d of %d", path, f.Shard, f.Of)
	}
	return f, nil
}

// Merge reads the shards in dirs, checks that together they hold every
// unit of their run exactly once, and lays the blocks out into outDir: the
// same files, byte for byte, that a single Run of the same configuration
// writes. logf, if not nil, receives progress lines (Logf of the
// configuration the shards carry).
func Merge(dirs []string, outDir string, logf func(format string, args ...any)) ([]Outcome, error) {
	return merge(dirs, outDir, logf, Select)
}

// merge is Merge with the block lookup given (tests merge unregistered
// blocks).
func merge(dirs []string, outDir string, logf func(format string, args ...any), lookup func([]string) ([]Block, error)) ([]Outcome, error) {
	files, err := readShards(dirs)
	if err != nil {
		return nil, err
	}
	cfg := files[0].Config
	bs, err := lookup(files[0].Blocks)
	if err != nil {
		return nil, fmt.Errorf("shards name a block this binary lacks: %w", err)
	}
	if !slices.Equal(blockNames(bs), files[0].Blocks) {
		return nil, errors.New("shards list their blocks out of report order")
	}
	cfg.Logf = logf
	all, err := plan(bs, cfg, io.Discard)
	if err != nil {
		return nil, err
	}
	got := map[[2]string]unitResult{}
	for _, f := range files {
		for _, u := range f.Units {
			k := [2]string{u.Block, u.Key}
			if _, dup := got[k]; dup {
				return nil, fmt.Errorf("unit %s/%s appears in two shards", u.Block, u.Key)
			}
			got[k] = u
		}
	}
	perBlock := make([][]unitResult, len(bs))
	for _, g := range all {
		k := [2]string{bs[g.block].Name, g.unit.key}
		u, ok := got[k]
		if !ok {
			return nil, fmt.Errorf("no shard holds unit %s/%s", k[0], k[1])
		}
		delete(got, k)
		perBlock[g.block] = append(perBlock[g.block], u)
	}
	for k := range got {
		return nil, fmt.Errorf("shards hold unit %s/%s, which this binary does not plan", k[0], k[1])
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory %s: %w", outDir, err)
	}
	logShardCosts(files, all, bs, logf)
	var outs []Outcome
	for i, b := range bs {
		outs = append(outs, writeOutcome(layoutBlock(b, cfg, perBlock[i]), outDir).failed(cfg))
	}
	return outs, writeIndex(outs, cfg, outDir)
}

// logShardCosts reports each shard's estimated CPU time beside what it
// measured, so that a cluster user sees how well the deal balanced.
func logShardCosts(files []shardFile, all []globalUnit, bs []Block, logf func(string, ...any)) {
	if logf == nil {
		return
	}
	cost := map[[2]string]time.Duration{}
	for _, g := range all {
		cost[[2]string{bs[g.block].Name, g.unit.key}] = g.unit.cost
	}
	for _, f := range files {
		var est time.Duration
		for _, u := range f.Units {
			est += cost[[2]string{u.Block, u.Key}]
		}
		line := fmt.Sprintf("shard %d/%d: %d units, estimated %.0f CPU-s", f.Shard, f.Of, len(f.Units), est.Seconds())
		if f.CPU > 0 {
			line += fmt.Sprintf(", measured %.0f CPU-s in %.0f s of wall time", f.CPU, f.Wall)
		}
		logf("%s", line)
	}
}

// shardChecksum is "sha256:" and the SHA-256 of f's content without its
// Checksum field, in canonical JSON (canonicalJSON): the values, not the
// bytes, are summed, so a shard re-encoded by another JSON tool with the
// same values keeps its checksum, and any changed value breaks it.
func shardChecksum(f shardFile) (string, error) {
	f.Checksum = ""
	raw, err := json.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	var v any
	if err := decodeNumbers(raw, &v); err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	delete(v.(map[string]any), "checksum")
	c, err := canonicalJSON(v)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// canonicalJSON encodes a decoded JSON value (numbers as json.Number) with
// object keys sorted, no spaces, strings escaped as encoding/json escapes
// them and every number in one spelling: an integer in decimal, anything
// else as the shortest 'g' form of its float64 value (1e-05, 0.00001 and
// 1.0e-5 all print 1e-05; 3.0 prints 3).
func canonicalJSON(v any) ([]byte, error) {
	var canon func(v any) any
	canon = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = canon(e)
			}
		case []any:
			for i, e := range x {
				x[i] = canon(e)
			}
		case json.Number:
			if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10))
			}
			if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
				return json.Number(strconv.FormatUint(u, 10))
			}
			if f, err := strconv.ParseFloat(string(x), 64); err == nil {
				return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
			}
		}
		return v
	}
	return json.Marshal(canon(v))
}
