package hw

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Stat is the cell count of one synthesized module, parsed from Yosys's
// `stat -json` output.
type Stat struct {
	Module      string         `json:"module"`
	Cells       int            `json:"cells"`
	CellsByType map[string]int `json:"cells_by_type"`
}

// IsRegister reports whether a cell type is a flip-flop or latch: Yosys's
// generic $_DFF*, $_SDFF*, $_DLATCH* … cells, $dff-style coarse cells and
// the FPGA primitives (TRELLIS_FF, SB_DFF*).
func IsRegister(cellType string) bool {
	t := strings.ToUpper(cellType)
	return strings.Contains(t, "DFF") || strings.Contains(t, "DLATCH") || strings.HasSuffix(t, "_FF") || strings.Contains(t, "_FF_")
}

// Registers counts the register cells.
func (s Stat) Registers() int {
	n := 0
	for t, c := range s.CellsByType {
		if IsRegister(t) {
			n += c
		}
	}
	return n
}

// Logic counts the cells that are not registers.
func (s Stat) Logic() int { return s.Cells - s.Registers() }

// Count returns the number of cells whose type is one of types.
func (s Stat) Count(types ...string) int {
	n := 0
	for _, t := range types {
		n += s.CellsByType[t]
	}
	return n
}

// ParseStat parses the JSON that Yosys's `stat -json` writes and returns
// the statistics of module (or of the whole design when module is "").
// Module names may be given with or without Yosys's leading backslash.
func ParseStat(data []byte, module string) (Stat, error) {
	type modStat struct {
		NumCells    *int           `json:"num_cells"`
		CellsByType map[string]int `json:"num_cells_by_type"`
	}
	var doc struct {
		Modules map[string]modStat `json:"modules"`
		Design  *modStat           `json:"design"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Stat{}, fmt.Errorf("parse yosys stat -json: %w", err)
	}
	var ms *modStat
	name := module
	if module == "" {
		ms = doc.Design
		name = "design"
		if ms == nil && len(doc.Modules) == 1 {
			for n, m := range doc.Modules {
				ms, name = &m, strings.TrimPrefix(n, `\`)
			}
		}
	} else {
		for n, m := range doc.Modules {
			if strings.TrimPrefix(n, `\`) == strings.TrimPrefix(module, `\`) {
				ms = &m
				break
			}
		}
	}
	if ms == nil {
		return Stat{}, fmt.Errorf("yosys stat -json: no statistics for module %q", module)
	}
	if ms.NumCells == nil {
		return Stat{}, fmt.Errorf("yosys stat -json: module %q has no num_cells", name)
	}
	s := Stat{Module: name, Cells: *ms.NumCells, CellsByType: map[string]int{}}
	sum := 0
	for t, c := range ms.CellsByType {
		if c < 0 {
			return Stat{}, fmt.Errorf("yosys stat -json: module %q: negative count %d for %s", name, c, t)
		}
		s.CellsByType[t] = c
		sum += c
		if sum < 0 {
			return Stat{}, fmt.Errorf("yosys stat -json: module %q: cell counts overflow", name)
		}
	}
	if s.Cells < 0 || sum != s.Cells {
		return Stat{}, fmt.Errorf("yosys stat -json: module %q: num_cells %d but the types sum to %d", name, s.Cells, sum)
	}
	return s, nil
}

// SynthResult is the Yosys synthesis of one configuration.
type SynthResult struct {
	Width      int  `json:"width"`
	Stages     int  `json:"stages"`
	SplitCount bool `json:"split_count,omitempty"`
	// Datapath and Workers name a sum datapath (empty and 0 for the vote
	// datapath, whose module name says its W).
	Datapath Datapath `json:"datapath,omitempty"`
	Workers  int      `json:"workers,omitempty"`
	// Generic is the `synth` (Yosys/ABC generic-cell) result.
	Generic Stat `json:"generic"`
	// Path is the longest register-to-register (or port) path of the
	// generic netlist under the delay table of the cost model.
	Path PathResult `json:"path"`
	// ECP5 is the `synth_ecp5` result (nil unless requested).
	ECP5 *Stat `json:"ecp5,omitempty"`
	// Yosys is the version line of the Yosys that ran.
	Yosys string `json:"yosys"`
}

// SynthOptions selects what Synth runs.
type SynthOptions struct {
	// ECP5 also runs synth_ecp5 for LUT and flip-flop counts.
	ECP5 bool
	// Dir keeps build products under Dir (e.g. hw/build); "" uses a
	// temporary directory that is removed afterwards.
	Dir string
	// Yosys is the Yosys build (YosysBuilds); the zero Tool is Debian's.
	Yosys Tool
}

// Synth runs Yosys generic-cell synthesis (`synth -top M`, which maps with
// ABC to Yosys's internal gate library) on c, parses `stat -json`, and
// computes the longest combinational path of the netlist. With
// opts.ECP5 it also runs `synth_ecp5`.
func Synth(ctx context.Context, c Config, opts SynthOptions) (SynthResult, error) {
	if err := c.Validate(); err != nil {
		return SynthResult{}, err
	}
	c = c.Normalized()
	res := SynthResult{Width: c.Width, Stages: c.Stages, SplitCount: c.SplitCount}
	res.Datapath, res.Workers = c.Datapath, c.Datapath.fam().workers(c)
	ys := opts.Yosys
	if ys.Name == "" {
		ys = Yosys
	}
	if _, err := ys.Path(); err != nil {
		return res, err
	}
	res.Yosys = ys.Version(ctx)
	work, cleanup, err := workDir(opts.Dir, "synth-"+ys.Name+"-"+c.ModuleName())
	if err != nil {
		return res, err
	}
	defer cleanup()
	src, err := c.Verilog()
	if err != nil {
		return res, err
	}
	m := c.ModuleName()
	vfile := m + ".v"
	if err := os.WriteFile(filepath.Join(work, vfile), []byte(src), 0o644); err != nil {
		return res, err
	}
	script := fmt.Sprintf("read_verilog %s; synth -top %s; tee -q -o stat.json stat -json; write_json netlist.json", vfile, m)
	if _, err := run(ctx, work, nil, ys, "-q", "-p", script); err != nil {
		return res, fmt.Errorf("yosys synth of %s: %w", m, err)
	}
	if res.Generic, err = readStat(filepath.Join(work, "stat.json"), m); err != nil {
		return res, err
	}
	net, err := os.ReadFile(filepath.Join(work, "netlist.json"))
	if err != nil {
		return res, fmt.Errorf("read yosys netlist of %s: %w", m, err)
	}
	if res.Path, err = LongestPath(net, m, DelayFO4); err != nil {
		return res, err
	}
	if opts.ECP5 {
		script := fmt.Sprintf("read_verilog %s; synth_ecp5 -top %s; tee -q -o ecp5.json stat -json", vfile, m)
		if _, err := run(ctx, work, nil, ys, "-q", "-p", script); err != nil {
			return res, fmt.Errorf("yosys synth_ecp5 of %s: %w", m, err)
		}
		s, err := readStat(filepath.Join(work, "ecp5.json"), m)
		if err != nil {
			return res, err
		}
		res.ECP5 = &s
	}
	return res, nil
}

func readStat(path, module string) (Stat, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, fmt.Errorf("read yosys statistics: %w", err)
	}
	s, err := ParseStat(data, module)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// PathResult is the longest combinational path of a netlist: from a
// module input or register output to a register input or module output.
type PathResult struct {
	// Depth is the largest number of logic cells on any path (every cell
	// counts 1, as Yosys's `ltp -noff` counts them).
	Depth int `json:"depth"`
	// DelayFO4 is the largest path delay in FO4 units under the delay
	// table (not necessarily on the deepest path).
	DelayFO4 float64 `json:"delay_fo4"`
	// Cells lists the cell types along the slowest path, source first.
	Cells []string `json:"cells"`
}

// LongestPath computes the longest combinational path of module in a
// Yosys `write_json` netlist. delay gives each combinational cell type's
// delay; a type missing from it is an error, as is a combinational loop.
// Registers (IsRegister) start and end paths and add no delay here.
func LongestPath(netlist []byte, module string, delay map[string]float64) (PathResult, error) {
	g, err := parseCombGraph(netlist, module, delay)
	if err != nil {
		return PathResult{}, err
	}
	return g.longest()
}

// combNode is one combinational cell: its type, delay, name and the bits
// it reads.
type combNode struct {
	typ  string
	ins  []int
	d    float64
	name string
}

// combGraph is a module's combinational cells and, for each bit, the
// index of the cell driving it.
type combGraph struct {
	nodes  []combNode
	driver map[int]int
}

type netlistCell struct {
	Type  string                       `json:"type"`
	Dirs  map[string]string            `json:"port_directions"`
	Conns map[string][]json.RawMessage `json:"connections"`
}

// parseCombGraph reads module's combinational cells from a Yosys netlist,
// in name order (deterministic tie-breaking).
func parseCombGraph(netlist []byte, module string, delay map[string]float64) (combGraph, error) {
	var doc struct {
		Modules map[string]struct {
			Cells map[string]netlistCell `json:"cells"`
		} `json:"modules"`
	}
	g := combGraph{driver: map[int]int{}}
	if err := json.Unmarshal(netlist, &doc); err != nil {
		return g, fmt.Errorf("parse yosys netlist: %w", err)
	}
	mod, ok := doc.Modules[module]
	if !ok {
		mod, ok = doc.Modules[`\`+module]
	}
	if !ok {
		return g, fmt.Errorf("yosys netlist: no module %q", module)
	}
	names := make([]string, 0, len(mod.Cells))
	for n := range mod.Cells {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := mod.Cells[n]
		if IsRegister(c.Type) {
			continue
		}
		d, ok := delay[c.Type]
		if !ok {
			return g, fmt.Errorf("yosys netlist: cell %s has type %s with no delay in the table", n, c.Type)
		}
		nd := combNode{typ: c.Type, d: d, name: n}
		outs, ins, err := cellBits(n, c)
		if err != nil {
			return g, err
		}
		nd.ins = ins
		idx := len(g.nodes)
		g.nodes = append(g.nodes, nd)
		for _, b := range outs {
			if prev, dup := g.driver[b]; dup {
				return g, fmt.Errorf("yosys netlist: bit %d driven by both %s and %s", b, g.nodes[prev].name, n)
			}
			g.driver[b] = idx
		}
	}
	return g, nil
}

// cellBits lists the bits cell n drives and reads, ports in name order;
// constants ("0", "1", "x", "z") are not bits.
func cellBits(n string, c netlistCell) (outs, ins []int, err error) {
	ports := make([]string, 0, len(c.Conns))
	for p := range c.Conns {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	for _, p := range ports {
		for _, raw := range c.Conns[p] {
			var bit int
			if json.Unmarshal(raw, &bit) != nil {
				continue
			}
			switch c.Dirs[p] {
			case "output":
				outs = append(outs, bit)
			case "input":
				ins = append(ins, bit)
			default:
				return nil, nil, fmt.Errorf("yosys netlist: cell %s port %s has direction %q", n, p, c.Dirs[p])
			}
		}
	}
	return outs, ins, nil
}

// longest finds the slowest path by memoised depth-first search (a cell
// on the stack seen again is a combinational loop).
func (g combGraph) longest() (PathResult, error) {
	const (
		unseen = iota
		active
		done
	)
	nodes, driver := g.nodes, g.driver
	state := make([]uint8, len(nodes))
	arr := make([]float64, len(nodes))
	depth := make([]int, len(nodes))
	from := make([]int, len(nodes)) // predecessor on the slowest path, -1 none
	type frame struct{ n, next int }
	for root := range nodes {
		if state[root] != unseen {
			continue
		}
		stack := []frame{{root, 0}}
		state[root] = active
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			nd := nodes[f.n]
			if f.next < len(nd.ins) {
				b := nd.ins[f.next]
				f.next++
				p, ok := driver[b]
				if !ok {
					continue
				}
				switch state[p] {
				case active:
					return PathResult{}, fmt.Errorf("yosys netlist: combinational loop through %s", nodes[p].name)
				case unseen:
					state[p] = active
					stack = append(stack, frame{p, 0})
				}
				continue
			}
			best, bd, bf := 0.0, 0, -1
			for _, b := range nd.ins {
				if p, ok := driver[b]; ok {
					if bf < 0 || arr[p] > best {
						best, bf = arr[p], p
					}
					bd = max(bd, depth[p])
				}
			}
			arr[f.n] = best + nd.d
			depth[f.n] = bd + 1
			from[f.n] = bf
			state[f.n] = done
			stack = stack[:len(stack)-1]
		}
	}
	return g.path(arr, depth, from), nil
}

// path reads the slowest path back from the search's arrival times.
func (g combGraph) path(arr []float64, depth, from []int) PathResult {
	var res PathResult
	worst := -1
	for i := range g.nodes {
		res.Depth = max(res.Depth, depth[i])
		if worst < 0 || arr[i] > arr[worst] {
			worst = i
		}
	}
	if worst >= 0 {
		res.DelayFO4 = arr[worst]
		for n := worst; n >= 0; n = from[n] {
			res.Cells = append([]string{g.nodes[n].typ}, res.Cells...)
		}
	}
	return res
}
