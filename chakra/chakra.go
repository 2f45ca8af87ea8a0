// Package chakra reads MLCommons Chakra execution traces (the workload
// format of ASTRA-sim) into bucket traces: every ALL_REDUCE collective
// node becomes a gradient bucket at the time its dependencies allow, and
// compute nodes set that timeline.
//
// # File format
//
// One length-delimited GlobalMetadata record, then length-delimited Node
// records (a varint byte length, then the message), as api/chakra/v1/et.proto
// declares them with Chakra's field numbers.
//
// # Timeline
//
// A node starts when all of its data and control dependencies have ended:
//
//	start(n) = max over d in deps(n) of end(d)   (0 without dependencies)
//	end(n)   = start(n) + duration_micros(n)     for COMP_NODE
//	end(n)   = start(n)                          for every other node
//
// Communication and memory nodes take no time on this timeline: the trace
// says when each collective may start, and the what-if prices the
// collective itself on the link of the user's choice. An ALL_REDUCE node
// (COMM_COLL_NODE with comm_type 0) becomes a bucket of comm_size bytes
// ready at start(n); buckets are listed by ready time (then node id).
// Other collectives are skipped and counted. The trace's backward time is
// the latest end of any node, its forward time 0 (an ET does not say where
// forward ends): ready times count from the start of the trace.
package chakra

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
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

// ET is a decoded execution trace.
type ET struct {
	Meta  *chakrav1.GlobalMetadata
	Nodes []*chakrav1.Node
}

// Read decodes an ET from r; name (usually the path) is used in errors,
// which also name the record at fault.
func Read(r io.Reader, name string) (*ET, error) {
	br := bufio.NewReader(r)
	et := &ET{Meta: &chakrav1.GlobalMetadata{}}
	ok, err := record(br, et.Meta)
	if err != nil {
		return nil, fmt.Errorf("chakra %s: global metadata: %w", name, err)
	}
	if !ok {
		return nil, fmt.Errorf("chakra %s: empty file (want a global metadata record, then nodes)", name)
	}
	for i := 0; ; i++ {
		n := &chakrav1.Node{}
		ok, err := record(br, n)
		if err != nil {
			return nil, fmt.Errorf("chakra %s: node record %d: %w", name, i, err)
		}
		if !ok {
			break
		}
		if len(et.Nodes) >= MaxNodes {
			return nil, fmt.Errorf("chakra %s: more than %d nodes", name, MaxNodes)
		}
		et.Nodes = append(et.Nodes, n)
	}
	return et, nil
}

// record reads one length-delimited message; false at a clean end of file.
func record(br *bufio.Reader, m proto.Message) (bool, error) {
	n, err := binary.ReadUvarint(br)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("length: %w", unexpected(err))
	}
	if n > MaxRecordBytes {
		return false, fmt.Errorf("length %d above %d bytes", n, MaxRecordBytes)
	}
	// Read what is there rather than allocate the claimed length: a
	// corrupt length must not cost 64 MiB.
	buf, err := io.ReadAll(io.LimitReader(br, int64(n)))
	if err != nil {
		return false, fmt.Errorf("%d-byte message: %w", n, err)
	}
	if uint64(len(buf)) != n {
		return false, fmt.Errorf("%d-byte message: %w after %d bytes", n, io.ErrUnexpectedEOF, len(buf))
	}
	if err := proto.Unmarshal(buf, m); err != nil {
		return false, fmt.Errorf("decode: %w", err)
	}
	return true, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

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
				return 0, true, fmt.Errorf("attribute %s = %d is too large", key, v.Uint64Val)
			}
			return int64(v.Uint64Val), true, nil
		}
		return 0, true, fmt.Errorf("attribute %s is not an integer", key)
	}
	return 0, false, nil
}

// Timeline is the outcome of Schedule: each node's start and end in
// microseconds, and the nodes in a dependency order.
type Timeline struct {
	Start, End map[uint64]uint64
	Order      []*chakrav1.Node
}

// Schedule computes every node's start and end (see the package doc).
func (et *ET) Schedule() (*Timeline, error) {
	byID := make(map[uint64]*chakrav1.Node, len(et.Nodes))
	for _, n := range et.Nodes {
		if _, dup := byID[n.Id]; dup {
			return nil, fmt.Errorf("node id %d appears twice", n.Id)
		}
		if float64(n.DurationMicros) > maxMicros {
			return nil, fmt.Errorf("node %d (%s): duration %d us above %g", n.Id, n.Name, n.DurationMicros, maxMicros)
		}
		byID[n.Id] = n
	}
	indeg := make(map[uint64]int, len(et.Nodes))
	users := map[uint64][]uint64{}
	for _, n := range et.Nodes {
		seen := map[uint64]bool{}
		for _, d := range append(append([]uint64(nil), n.DataDeps...), n.CtrlDeps...) {
			if _, ok := byID[d]; !ok {
				return nil, fmt.Errorf("node %d (%s) depends on node %d, which the trace does not have", n.Id, n.Name, d)
			}
			if d == n.Id {
				return nil, fmt.Errorf("node %d (%s) depends on itself", n.Id, n.Name)
			}
			if seen[d] {
				continue
			}
			seen[d] = true
			indeg[n.Id]++
			users[d] = append(users[d], n.Id)
		}
	}
	tl := &Timeline{Start: map[uint64]uint64{}, End: map[uint64]uint64{}}
	var queue []uint64
	for _, n := range et.Nodes {
		if indeg[n.Id] == 0 {
			queue = append(queue, n.Id)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		n := byID[id]
		s := tl.Start[id]
		e := s
		if n.Type == chakrav1.NodeType_COMP_NODE {
			e += n.DurationMicros
			if float64(e) > maxMicros {
				return nil, fmt.Errorf("node %d (%s) ends at %d us, above %g", id, n.Name, e, maxMicros)
			}
		}
		tl.End[id] = e
		tl.Order = append(tl.Order, n)
		for _, u := range users[id] {
			if e > tl.Start[u] {
				tl.Start[u] = e
			}
			if indeg[u]--; indeg[u] == 0 {
				queue = append(queue, u)
			}
		}
	}
	if len(tl.Order) != len(et.Nodes) {
		return nil, fmt.Errorf("the dependencies form a cycle (%d of %d nodes never become ready)", len(et.Nodes)-len(tl.Order), len(et.Nodes))
	}
	return tl, nil
}

// Trace converts the ET into a bucket trace (see the package doc); skipped
// counts the collective nodes that are not ALL_REDUCE.
func (et *ET) Trace(model string) (tr *workload.Trace, skipped int, err error) {
	tl, err := et.Schedule()
	if err != nil {
		return nil, 0, err
	}
	type ar struct {
		id, ready uint64
		bytes     int64
	}
	var ars []ar
	var last uint64
	for _, n := range tl.Order {
		last = max(last, tl.End[n.Id])
		if n.Type != chakrav1.NodeType_COMM_COLL_NODE {
			continue
		}
		kind, ok, err := attr(n, "comm_type")
		if err != nil {
			return nil, 0, fmt.Errorf("node %d (%s): %w", n.Id, n.Name, err)
		}
		if !ok {
			return nil, 0, fmt.Errorf("node %d (%s): a collective without a comm_type attribute", n.Id, n.Name)
		}
		if kind != int64(chakrav1.CollectiveCommType_ALL_REDUCE) {
			skipped++
			continue
		}
		size, ok, err := attr(n, "comm_size")
		if err != nil {
			return nil, 0, fmt.Errorf("node %d (%s): %w", n.Id, n.Name, err)
		}
		if !ok || size < 4 || size%4 != 0 {
			return nil, 0, fmt.Errorf("node %d (%s): ALL_REDUCE comm_size %d must be given, positive and a multiple of 4 bytes (FP32 gradients)", n.Id, n.Name, size)
		}
		ars = append(ars, ar{n.Id, tl.Start[n.Id], size})
	}
	if len(ars) == 0 {
		return nil, skipped, fmt.Errorf("no ALL_REDUCE collective nodes (%d other collectives)", skipped)
	}
	sort.SliceStable(ars, func(i, j int) bool {
		if ars[i].ready != ars[j].ready {
			return ars[i].ready < ars[j].ready
		}
		return ars[i].id < ars[j].id
	})
	// Round-trip through the documented JSON form: one checker for every
	// bucket trace.
	mj, err := json.Marshal(model)
	if err != nil {
		return nil, 0, err
	}
	var js []byte
	js = fmt.Appendf(js, `{"model":%s,"backward_us":%d,"buckets":[`, mj, last)
	for i, a := range ars {
		if i > 0 {
			js = append(js, ',')
		}
		js = fmt.Appendf(js, `{"bytes":%d,"ready_us":%d}`, a.bytes, a.ready)
	}
	js = append(js, "]}"...)
	tr, err = workload.ParseTraceJSON(js, model)
	return tr, skipped, err
}

// ReadTrace reads the Chakra ET at path as a bucket trace.
func ReadTrace(path string) (*workload.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read chakra trace: %w", err)
	}
	defer f.Close()
	et, err := Read(f, path)
	if err != nil {
		return nil, err
	}
	tr, _, err := et.Trace(path)
	if err != nil {
		return nil, fmt.Errorf("chakra %s: %w", path, err)
	}
	return tr, nil
}
