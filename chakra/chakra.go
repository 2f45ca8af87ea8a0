// Package chakra reads MLCommons Chakra execution traces (ETs, the
// workload format of ASTRA-sim) into bucket traces, as Chakra's own feeder
// reads them: nodes are scheduled on their data dependencies, every typed
// collective becomes a bucket of its operation at the time its
// dependencies allow, and whatever is not priced is counted with the
// reason (workload.Provenance).
//
// # File forms
//
// The protobuf form (.et): one length-delimited GlobalMetadata record, then
// length-delimited Node records (a varint byte length, then the message),
// as api/chakra/v1/et.proto declares them with Chakra's field numbers.
// Records are decoded one at a time (ReadFile streams the file), the nodes
// straight from the wire (wire.go).
//
// Two JSON forms are read too (ReadJSON): Chakra's JSON feeder input, an
// object whose "workload_graph" lists the nodes ({"Id", "Name",
// "NodeType", "data_deps", "ctrlDeps", "runtime", "comm_type",
// "comm_size", ...}), and the output of Chakra's jsonizer, the protobuf
// records written one after another as protobuf JSON. A PyTorch execution
// trace (the host trace Chakra converts from, with "schema" and "nodes")
// is recognised and refused: convert it with Chakra first.
//
// # Multi-rank workloads
//
// ASTRA-sim reads one file per NPU, PREFIX.0.et ... PREFIX.{N-1}.et
// (ReadRanks). Every rank must issue the same collectives (operation and
// size) in the same order; the first disagreement is an error naming the
// rank and its node. A bucket is ready when the last rank reaches its
// collective, and the step's backward time is the latest rank's.
//
// # Timeline
//
// As Chakra's feeder (and ASTRA-sim's workload layer through it), only
// data dependencies order nodes; control dependencies are counted and
// ignored (in a trace converted from PyTorch they name the enclosing
// operator, which contains its children in time, and often a node the
// trace does not hold). A node starts when all of its data dependencies
// have ended:
//
//	start(n) = max over d in data_deps(n) of end(d)   (0 without dependencies)
//	end(n)   = start(n) + duration_micros(n)          for COMP_NODE
//	end(n)   = start(n)                               for every other node
//
// This is the critical path with unbounded concurrency: unlike
// ASTRA-sim's workload layer it does not hold CPU operators and GPU kernels
// to one at a time each (PyTorch-derived traces nest their CPU operators,
// whose durations then overlap). A data dependency on the node itself is
// ignored and counted (the feeder would never issue such a node); one on a
// node the trace does not hold is an error, as is a cycle.
//
// Collectives take no time on this timeline: the trace says when each may
// start, and the what-if prices it on the network of the user's choice. A
// COMM_COLL_NODE with a comm_type attribute (ALL_REDUCE ... BARRIER)
// becomes a bucket of that operation (collective.Op) and comm_size bytes,
// ready at start(n), with duration_micros as its recorded duration;
// buckets are listed by ready time, then by their order in the file. A
// collective without comm_type (a CPU-side c10d:: call in a PyTorch-derived
// trace, whose GPU kernel node carries the type) is counted as untyped and
// not priced; so are point-to-point (COMM_SEND_NODE, COMM_RECV_NODE) and
// memory nodes. The trace's backward time is the latest end of any node,
// its forward time 0 (an ET does not say where forward ends): ready times
// count from the start of the trace.
//
// # Bounds
//
// A record is at most MaxRecordBytes, a trace at most MaxNodes nodes. The
// reader keeps about 50 bytes a node and 20 a dependency (ids, durations,
// the dependency graph, times) plus the name of every collective node, not
// the decoded records, and allocates about 130 bytes a node in all on the
// way (TestDecodeAllocationBound holds it under 150): a trace at MaxNodes
// with one dependency a node takes about 300 MB.
package chakra

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/workload"
	"google.golang.org/protobuf/proto"
)

// MaxRecordBytes bounds one record; MaxNodes bounds a trace.
const (
	MaxRecordBytes = 64 << 20
	MaxNodes       = 1 << 22
)

// maxMicros bounds a duration so that picoseconds of a long chain stay in
// int64 (workload's own bound on trace times is 10^12 us).
const maxMicros = 1e12

// Collective is one typed collective node of a rank.
type Collective struct {
	ID   uint64
	Name string
	Op   collective.Op
	// Bytes is comm_size; ReadyUS the node's start on the timeline;
	// DurationUS its duration_micros.
	Bytes      int64
	ReadyUS    uint64
	DurationUS uint64
	record     int // position in the file, the tie-break of equal ready times
}

// Stats counts what a rank's trace held and what was left out.
type Stats struct {
	Nodes  int64
	ByType [8]int64 // by NodeType value
	// Ops counts typed collectives by operation; Untyped the collective
	// nodes without comm_type.
	Ops     [collective.NumOps]int64
	Untyped int64
	// CtrlDeps counts every control dependency (none is scheduled on),
	// CtrlAbsent those on nodes the trace does not hold, CtrlSelf those
	// on the node itself.
	CtrlDeps, CtrlAbsent, CtrlSelf int64
	// DataSelf and DataRepeated count the data dependencies ignored: on
	// the node itself, and a node listed twice.
	DataSelf, DataRepeated int64
}

// Rank is one rank's trace: its typed collectives in schedule order, the
// end of its timeline and what was read.
type Rank struct {
	Name        string
	Collectives []Collective
	EndUS       uint64
	Stats       Stats
	format      string
}

// graph is a trace as it is decoded: per node its id, duration, type and
// collective, and the data dependencies as ids (resolved by schedule).
type graph struct {
	name    string
	ids     []uint64
	dur     []uint64
	kind    []uint8
	coll    []int32  // index into colls, -1 for other nodes
	depOff  []uint32 // node i's data dependencies are deps[depOff[i]:depOff[i+1]]
	deps    []uint64
	ctrl    []uint64 // control dependencies on other nodes, to count the absent
	pending []pendingColl
	stats   Stats
}

type pendingColl struct {
	name  string
	op    collective.Op
	typed bool
	size  int64
}

func newGraph(name string) *graph { return &graph{name: name, depOff: []uint32{0}} }

// nodeFields is one node as either form of the file gives it.
type nodeFields struct {
	id, dur        uint64
	name           string
	nameB          []byte   // a name not yet copied (kept for errors only)
	attrs          [][]byte // the attribute records, reused between nodes
	kind           int64
	data, ctrl     []uint64
	commType       int64
	hasType        bool
	commSize       int64
	hasSize        bool
	typeErr, szErr error
}

// add checks one node and appends it; i is its record index (for errors).
func (g *graph) add(i int, n *nodeFields) error {
	where := func() string {
		name := n.name
		if name == "" {
			name = string(n.nameB)
		}
		return fmt.Sprintf("node record %d (id %d, %q)", i, n.id, name)
	}
	if len(g.ids) >= MaxNodes {
		return fmt.Errorf("more than %d nodes", MaxNodes)
	}
	if n.kind < 0 || n.kind >= int64(len(g.stats.ByType)) {
		return fmt.Errorf("%s: node type %d is not one of Chakra's NodeType values (0-7)", where(), n.kind)
	}
	if float64(n.dur) > maxMicros {
		return fmt.Errorf("%s: duration %d us above %g", where(), n.dur, maxMicros)
	}
	if len(g.deps)+len(n.data) > 1<<31 {
		return fmt.Errorf("more than 2^31 data dependencies")
	}
	g.stats.Nodes++
	g.stats.ByType[n.kind]++
	if len(g.ids) == cap(g.ids) {
		// Double the node arrays (append grows large slices by a quarter,
		// which allocates them five times over on the way to millions).
		k := max(len(g.ids), 1024)
		g.ids, g.dur, g.kind = slices.Grow(g.ids, k), slices.Grow(g.dur, k), slices.Grow(g.kind, k)
		g.coll, g.depOff = slices.Grow(g.coll, k), slices.Grow(g.depOff, k)
	}
	if len(g.deps)+len(n.data) > cap(g.deps) {
		g.deps = slices.Grow(g.deps, max(len(g.deps), len(n.data), 1024))
	}
	g.ids = append(g.ids, n.id)
	g.dur = append(g.dur, n.dur)
	g.kind = append(g.kind, uint8(n.kind))
	for _, d := range n.data {
		if d == n.id {
			g.stats.DataSelf++
			continue
		}
		g.deps = append(g.deps, d)
	}
	g.depOff = append(g.depOff, uint32(len(g.deps)))
	for _, d := range n.ctrl {
		g.stats.CtrlDeps++
		if d == n.id {
			g.stats.CtrlSelf++
		} else {
			g.ctrl = append(g.ctrl, d)
		}
	}
	if chakrav1.NodeType(n.kind) != chakrav1.NodeType_COMM_COLL_NODE {
		g.coll = append(g.coll, -1)
		return nil
	}
	pc := pendingColl{name: n.name}
	switch {
	case n.typeErr != nil:
		return fmt.Errorf("%s: comm_type: %w", where(), n.typeErr)
	case !n.hasType:
		g.stats.Untyped++
	case n.commType < 0 || n.commType >= int64(collective.NumOps):
		return fmt.Errorf("%s: comm_type %d is not one of Chakra's CollectiveCommType values (0-9)", where(), n.commType)
	default:
		pc.typed, pc.op = true, collective.Op(n.commType)
		g.stats.Ops[pc.op]++
		if n.szErr != nil {
			return fmt.Errorf("%s: comm_size: %w", where(), n.szErr)
		}
		if pc.op != collective.Barrier && (!n.hasSize || n.commSize <= 0) {
			return fmt.Errorf("%s: a %s needs a positive comm_size attribute (bytes)", where(), pc.op.Chakra())
		}
		pc.size = max(0, n.commSize)
	}
	g.coll = append(g.coll, int32(len(g.pending)))
	g.pending = append(g.pending, pc)
	return nil
}

// schedule resolves the dependencies and computes the timeline (see the
// package doc), returning the rank.
func (g *graph) schedule() (*Rank, error) {
	n := len(g.ids)
	byID := make([]int32, n)
	for i := range byID {
		byID[i] = int32(i)
	}
	sort.Slice(byID, func(a, b int) bool { return g.ids[byID[a]] < g.ids[byID[b]] })
	for k := 1; k < n; k++ {
		if g.ids[byID[k]] == g.ids[byID[k-1]] {
			return nil, fmt.Errorf("node id %d appears twice (records %d and %d)", g.ids[byID[k]], min(byID[k-1], byID[k]), max(byID[k-1], byID[k]))
		}
	}
	find := func(id uint64) int32 {
		k := sort.Search(n, func(k int) bool { return g.ids[byID[k]] >= id })
		if k < n && g.ids[byID[k]] == id {
			return byID[k]
		}
		return -1
	}
	for _, d := range g.ctrl {
		if find(d) < 0 {
			g.stats.CtrlAbsent++
		}
	}
	g.ctrl = nil
	// Parents as node indices, each once.
	parents := make([]int32, len(g.deps))
	indeg := make([]int32, n)
	childN := make([]uint32, n+1)
	for i := range n {
		lo, hi := g.depOff[i], g.depOff[i+1]
		for k := lo; k < hi; k++ {
			p := find(g.deps[k])
			if p < 0 {
				return nil, fmt.Errorf("node %d (record %d, %s) has a data dependency on node %d, which the trace does not have",
					g.ids[i], i, chakrav1.NodeType(g.kind[i]), g.deps[k])
			}
			parents[k] = p
		}
		ps := parents[lo:hi]
		slices.Sort(ps)
		uniq := slices.Compact(ps)
		g.stats.DataRepeated += int64(len(ps) - len(uniq))
		for k := range ps[len(uniq):] {
			ps[len(uniq)+k] = -1
		}
		indeg[i] = int32(len(uniq))
		for _, p := range uniq {
			childN[p+1]++
		}
	}
	g.deps = nil
	for i := range n {
		childN[i+1] += childN[i]
	}
	children := make([]int32, childN[n])
	fill := slices.Clone(childN[:n])
	for i := range n {
		for _, p := range parents[g.depOff[i]:g.depOff[i+1]] {
			if p >= 0 {
				children[fill[p]] = int32(i)
				fill[p]++
			}
		}
	}
	parents, fill = nil, nil
	start := make([]uint64, n)
	queue := make([]int32, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	r := &Rank{Name: g.name, Stats: g.stats}
	for head := 0; head < len(queue); head++ {
		i := queue[head]
		end := start[i]
		if chakrav1.NodeType(g.kind[i]) == chakrav1.NodeType_COMP_NODE {
			end += g.dur[i]
			if float64(end) > maxMicros {
				return nil, fmt.Errorf("node %d (record %d) ends at %d us, above %g", g.ids[i], i, end, maxMicros)
			}
		}
		r.EndUS = max(r.EndUS, end)
		if c := g.coll[i]; c >= 0 && g.pending[c].typed {
			pc := g.pending[c]
			r.Collectives = append(r.Collectives, Collective{ID: g.ids[i], Name: pc.name, Op: pc.op, Bytes: pc.size,
				ReadyUS: start[i], DurationUS: g.dur[i], record: int(i)})
		}
		for _, c := range children[childN[i]:childN[i+1]] {
			start[c] = max(start[c], end)
			if indeg[c]--; indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	if len(queue) != n {
		return nil, fmt.Errorf("the data dependencies form a cycle (%d of %d nodes never become ready)", n-len(queue), n)
	}
	sort.SliceStable(r.Collectives, func(a, b int) bool {
		ca, cb := r.Collectives[a], r.Collectives[b]
		if ca.ReadyUS != cb.ReadyUS {
			return ca.ReadyUS < cb.ReadyUS
		}
		return ca.record < cb.record
	})
	return r, nil
}

// Decode reads the protobuf form from r, one record at a time, and
// schedules it; name (usually the path) is used in errors, which also name
// the record at fault.
func Decode(r io.Reader, name string) (*Rank, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var buf []byte
	meta := &chakrav1.GlobalMetadata{}
	ok, err := record(br, &buf, meta)
	if err != nil {
		return nil, fmt.Errorf("chakra %s: global metadata: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("chakra %s: empty file (want a global metadata record, then nodes)", name)
	}
	g := newGraph(name)
	var nf nodeFields
	for i := 0; ; i++ {
		raw, ok, err := readRecord(br, &buf)
		if err != nil {
			return nil, fmt.Errorf("chakra %s: node record %d: %w", name, i, err)
		}
		if !ok {
			break
		}
		if err := decodeNode(raw, &nf); err != nil {
			return nil, fmt.Errorf("chakra %s: node record %d: decode: %w", name, i, err)
		}
		if err := g.add(i, &nf); err != nil {
			return nil, fmt.Errorf("chakra %s: %w", name, err)
		}
	}
	rk, err := g.schedule()
	if err != nil {
		return nil, fmt.Errorf("chakra %s: %w", name, err)
	}
	rk.format = "Chakra ET (protobuf)"
	return rk, nil
}

// fieldsOf copies what the reader needs from a decoded node.
func fieldsOf(m *chakrav1.Node, nf *nodeFields) {
	*nf = nodeFields{id: m.Id, dur: m.DurationMicros, name: m.Name, kind: int64(m.Type), data: m.DataDeps, ctrl: m.CtrlDeps}
	if m.Type != chakrav1.NodeType_COMM_COLL_NODE {
		return
	}
	nf.commType, nf.hasType, nf.typeErr = attr(m, "comm_type")
	nf.commSize, nf.hasSize, nf.szErr = attr(m, "comm_size")
}

// record reads one length-delimited message into m, reusing *buf; false
// at a clean end of file.
func record(br *bufio.Reader, buf *[]byte, m proto.Message) (bool, error) {
	b, ok, err := readRecord(br, buf)
	if err != nil || !ok {
		return ok, err
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return false, fmt.Errorf("decode: %w", err)
	}
	return true, nil
}

// readRecord reads one length-delimited record into *buf (reused) and
// returns it; false at a clean end of file.
func readRecord(br *bufio.Reader, buf *[]byte) ([]byte, bool, error) {
	n, err := binary.ReadUvarint(br)
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("length: %w", unexpected(err))
	}
	if n > MaxRecordBytes {
		return nil, false, fmt.Errorf("length %d above %d bytes", n, MaxRecordBytes)
	}
	// Grow with what arrives rather than allocate the claimed length: a
	// corrupt length must not cost 64 MiB.
	b := (*buf)[:0]
	for uint64(len(b)) < n {
		chunk := min(n-uint64(len(b)), 1<<20)
		b = slices.Grow(b, int(chunk))
		got, err := io.ReadFull(br, b[len(b):len(b)+int(chunk)])
		b = b[:len(b)+got]
		if err != nil {
			return nil, false, fmt.Errorf("%d-byte message: %w after %d bytes", n, io.ErrUnexpectedEOF, len(b))
		}
	}
	*buf = b
	return b, true, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// attr returns an integer attribute (any of the integer encodings).
func attr(n *chakrav1.Node, key string) (int64, bool, error) {
	for _, a := range n.Attr {
		if a.Name != key {
			continue
		}
		switch v := a.Value.(type) {
		case *chakrav1.AttributeProto_Int64Val:
			return v.Int64Val, true, nil
		case *chakrav1.AttributeProto_Int32Val:
			return int64(v.Int32Val), true, nil
		case *chakrav1.AttributeProto_Uint32Val:
			return int64(v.Uint32Val), true, nil
		case *chakrav1.AttributeProto_Sint64Val:
			return v.Sint64Val, true, nil
		case *chakrav1.AttributeProto_Sint32Val:
			return int64(v.Sint32Val), true, nil
		case *chakrav1.AttributeProto_Uint64Val:
			if v.Uint64Val > 1<<62 {
				return 0, true, fmt.Errorf("%d is too large", v.Uint64Val)
			}
			return int64(v.Uint64Val), true, nil
		}
		return 0, true, fmt.Errorf("not an integer")
	}
	return 0, false, nil
}

// ReadFile reads the ET at path (protobuf, or a JSON form when the name
// ends in .json) as a one-rank bucket trace.
func ReadFile(path string) (*workload.Trace, error) {
	rk, err := readRank(path)
	if err != nil {
		return nil, err
	}
	return Merge([]*Rank{rk})
}

func readRank(path string) (*Rank, error) {
	if ext := extOf(path); ext == ".json" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read chakra trace: %w", err)
		}
		return DecodeJSON(data, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read chakra trace: %w", err)
	}
	defer f.Close()
	return Decode(f, path)
}

func extOf(path string) string {
	for i := len(path) - 1; i >= 0 && path[i] != '/'; i-- {
		if path[i] == '.' {
			return path[i:]
		}
	}
	return ""
}

// MaxRanks bounds the files of a multi-rank workload.
const MaxRanks = 1 << 16

// RankFiles returns PREFIX.0.et ... PREFIX.{N-1}.et, the files of a
// multi-rank workload (nil when PREFIX.0.et does not exist); a gap (a
// higher rank's file without every lower one) is an error.
func RankFiles(prefix string) ([]string, error) {
	var files []string
	for r := 0; ; r++ {
		p := prefix + "." + strconv.Itoa(r) + ".et"
		if _, err := os.Stat(p); err != nil {
			break
		}
		if len(files) >= MaxRanks {
			return nil, fmt.Errorf("chakra %s: more than %d rank files", prefix, MaxRanks)
		}
		files = append(files, p)
	}
	for _, k := range []int{len(files) + 1, len(files) + 2} {
		if p := prefix + "." + strconv.Itoa(k) + ".et"; fileExists(p) {
			return nil, fmt.Errorf("chakra %s: %s exists but %s.%d.et does not (rank files must be numbered 0..N-1)", prefix, p, prefix, len(files))
		}
	}
	return files, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// ReadRanks reads the multi-rank workload PREFIX.0.et ... as one bucket
// trace (see the package doc); its worker count is the number of files.
func ReadRanks(prefix string) (*workload.Trace, error) {
	files, err := RankFiles(prefix)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("chakra %s: no %s.0.et", prefix, prefix)
	}
	ranks := make([]*Rank, len(files))
	for r, f := range files {
		if ranks[r], err = readRank(f); err != nil {
			return nil, err
		}
		if r > 0 {
			if err := agree(ranks[0], ranks[r], r); err != nil {
				return nil, fmt.Errorf("chakra %s: %w", prefix, err)
			}
			ranks[r].Collectives = ranks[r].Collectives[:0:0] // keep only what Merge reads below
		}
	}
	tr, err := Merge(ranks)
	if err != nil {
		return nil, err
	}
	tr.Workers, tr.Ranks = len(files), len(files)
	return tr, nil
}

// agree checks that rank r issues rank 0's collectives, and folds its
// ready times and end into rank 0's (the latest rank sets each).
func agree(r0, rr *Rank, r int) error {
	a, b := r0.Collectives, rr.Collectives
	for k := range min(len(a), len(b)) {
		if a[k].Op != b[k].Op || a[k].Bytes != b[k].Bytes {
			return fmt.Errorf("rank %d node %d (%q) is its collective %d, a %s of %d bytes, where rank 0 has node %d, a %s of %d bytes: every rank must issue the same collectives in the same order",
				r, b[k].ID, b[k].Name, k, b[k].Op.Chakra(), b[k].Bytes, a[k].ID, a[k].Op.Chakra(), a[k].Bytes)
		}
		a[k].ReadyUS = max(a[k].ReadyUS, b[k].ReadyUS)
		a[k].DurationUS = max(a[k].DurationUS, b[k].DurationUS)
	}
	if len(a) != len(b) {
		return fmt.Errorf("rank %d (%s) issues %d typed collectives, rank 0 (%s) %d", r, rr.Name, len(b), r0.Name, len(a))
	}
	r0.EndUS = max(r0.EndUS, rr.EndUS)
	return nil
}

// Merge converts ranks (already checked to agree, rank 0's collectives
// carrying the latest ready times) into a bucket trace with its
// provenance.
func Merge(ranks []*Rank) (*workload.Trace, error) {
	r0 := ranks[0]
	tr := &workload.Trace{Model: r0.Name, BytesPerElement: 4, BackwardPS: int64(r0.EndUS) * 1e6}
	// Buckets in ready order; equal ready times keep the file's order.
	sort.SliceStable(r0.Collectives, func(a, b int) bool { return r0.Collectives[a].ReadyUS < r0.Collectives[b].ReadyUS })
	for _, c := range r0.Collectives {
		if err := tr.AddCollective(c.Op, c.Bytes, int64(c.ReadyUS)*1e6, int64(c.DurationUS)*1e6); err != nil {
			return nil, fmt.Errorf("chakra %s: node %d (%q): %w", r0.Name, c.ID, c.Name, err)
		}
	}
	tr.Source = provenance(ranks)
	if len(tr.Buckets) == 0 {
		why := tr.Source.ReadLine()
		if n := ranks[0].Stats.Untyped; n > 0 {
			why += fmt.Sprintf("; %d collective nodes without comm_type", n)
		}
		return nil, fmt.Errorf("chakra %s: no typed collective node to price (%s)", r0.Name, why)
	}
	return tr, nil
}
