package chakra

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/workload"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// et frames the metadata and nodes as a Chakra file.
func et(t testing.TB, nodes ...*chakrav1.Node) []byte {
	var b []byte
	for _, m := range append([]proto.Message{&chakrav1.GlobalMetadata{Version: "0.0.4"}}, toMsgs(nodes)...) {
		raw, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = protowire.AppendVarint(b, uint64(len(raw)))
		b = append(b, raw...)
	}
	return b
}

// jsonized writes the same records as Chakra's jsonizer does: the
// metadata and every node as protobuf JSON, one after another.
func jsonized(t testing.TB, nodes ...*chakrav1.Node) []byte {
	var b []byte
	for _, m := range append([]proto.Message{&chakrav1.GlobalMetadata{Version: "0.0.4"}}, toMsgs(nodes)...) {
		js, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, js...), '\n')
	}
	return b
}

func toMsgs(ns []*chakrav1.Node) []proto.Message {
	out := make([]proto.Message, len(ns))
	for i, n := range ns {
		out[i] = n
	}
	return out
}

func comp(id, dur uint64, deps ...uint64) *chakrav1.Node {
	return &chakrav1.Node{Id: id, Name: "comp", Type: chakrav1.NodeType_COMP_NODE, DurationMicros: dur, DataDeps: deps}
}

func intAttr(name string, v int64) *chakrav1.AttributeProto {
	return &chakrav1.AttributeProto{Name: name, Value: &chakrav1.AttributeProto_Int64Val{Int64Val: v}}
}

func coll(id uint64, kind chakrav1.CollectiveCommType, size int64, deps ...uint64) *chakrav1.Node {
	return &chakrav1.Node{Id: id, Name: "coll", Type: chakrav1.NodeType_COMM_COLL_NODE, DataDeps: deps, DurationMicros: 999,
		Attr: []*chakrav1.AttributeProto{intAttr("comm_type", int64(kind)), intAttr("comm_size", size)}}
}

func decode(t *testing.T, data []byte) *workload.Trace {
	t.Helper()
	rk, err := Decode(bytes.NewReader(data), "t.et")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Merge([]*Rank{rk})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type want struct {
	op    collective.Op
	bytes int64
	ready int64 // us
}

// TestTimelines checks the schedule on data dependencies only, by hand.
func TestTimelines(t *testing.T) {
	ar := chakrav1.CollectiveCommType_ALL_REDUCE
	for _, c := range []struct {
		name     string
		nodes    []*chakrav1.Node
		buckets  []want
		backward int64
	}{
		// 1(10) -> 2(20) -> AR3 (ready 30) -> 4(5) -> AR5 (ready 35): the
		// collective takes no time on the compute timeline.
		{"chain", []*chakrav1.Node{comp(1, 10), comp(2, 20, 1), coll(3, ar, 400, 2), comp(4, 5, 3), coll(5, ar, 800, 4)},
			[]want{{collective.AllReduce, 400, 30}, {collective.AllReduce, 800, 35}}, 35},
		// 1(10) and 2(25) fan in to AR3 (ready 25); 4(7) after 1 ends at
		// 17, AR5 after it: listed by ready time, AR5 first.
		{"fan-in", []*chakrav1.Node{comp(1, 10), comp(2, 25), coll(3, ar, 64, 1, 2), comp(4, 7, 1), coll(5, ar, 128, 4)},
			[]want{{collective.AllReduce, 128, 17}, {collective.AllReduce, 64, 25}}, 25},
		// Listed out of order; node 6 names 5 only as a control dependency,
		// which does not order it (Chakra's feeder schedules on data): 6
		// runs 0-1, AR13 is ready at 1. The all-gather is a bucket too.
		// 1: 0-100, 2: 100-130, 3: 130-170, 5: 170-220.
		{"step", []*chakrav1.Node{
			coll(10, ar, 4096, 3), comp(3, 40, 2), comp(2, 30, 1), comp(1, 100),
			coll(11, ar, 8192, 2), coll(12, chakrav1.CollectiveCommType_ALL_GATHER, 4, 1),
			comp(5, 50, 3), {Id: 6, Type: chakrav1.NodeType_COMP_NODE, DurationMicros: 1, CtrlDeps: []uint64{5}}, coll(13, ar, 16, 6)},
			[]want{{collective.AllReduce, 16, 1}, {collective.AllGather, 4, 100}, {collective.AllReduce, 8192, 130}, {collective.AllReduce, 4096, 170}}, 220},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := decode(t, et(t, c.nodes...))
			if len(tr.Buckets) != len(c.buckets) || tr.BackwardPS != c.backward*1e6 || tr.ForwardPS != 0 {
				t.Fatalf("%d buckets, backward %d", len(tr.Buckets), tr.BackwardPS)
			}
			for i, w := range c.buckets {
				b := tr.Buckets[i]
				if b.Op != w.op || b.Bytes != w.bytes || b.ReadyPS != w.ready*1e6 || b.RecordedPS != 999e6 {
					t.Fatalf("bucket %d: %+v, want %+v", i, b, w)
				}
			}
		})
	}
}

// pytorchShaped is an ET with the shape of Chakra's own PyTorch-derived
// test trace (MLCommons Chakra, tests/data: 3,664 nodes converted from a
// PyTorch run): operators under a root (node 3) the file does not hold,
// control dependencies on the node itself, CPU-side c10d:: collectives
// without comm_type, and the GPU kernels that carry the type and size,
// data-dependent on the c10d:: call and on the kernels that produce their
// tensors. Durations are microseconds.
func pytorchShaped() []*chakrav1.Node {
	cpu := func(n *chakrav1.Node) *chakrav1.Node {
		n.Attr = append(n.Attr, &chakrav1.AttributeProto{Name: "is_cpu_op", Value: &chakrav1.AttributeProto_BoolVal{BoolVal: true}})
		return n
	}
	c10d := func(id uint64, name string, dur uint64, data []uint64, ctrl ...uint64) *chakrav1.Node {
		return cpu(&chakrav1.Node{Id: id, Name: name, Type: chakrav1.NodeType_COMM_COLL_NODE, DurationMicros: dur, DataDeps: data, CtrlDeps: ctrl})
	}
	kernel := func(id uint64, name string, kind chakrav1.CollectiveCommType, size int64, dur uint64, data []uint64, ctrl ...uint64) *chakrav1.Node {
		return &chakrav1.Node{Id: id, Name: name, Type: chakrav1.NodeType_COMM_COLL_NODE, DurationMicros: dur, DataDeps: data, CtrlDeps: ctrl,
			Attr: []*chakrav1.AttributeProto{intAttr("comm_type", int64(kind)), intAttr("comm_size", size)}}
	}
	op := func(id uint64, name string, dur uint64, data []uint64, ctrl ...uint64) *chakrav1.Node {
		return cpu(&chakrav1.Node{Id: id, Name: name, Type: chakrav1.NodeType_COMP_NODE, DurationMicros: dur, DataDeps: data, CtrlDeps: ctrl})
	}
	gpu := func(id uint64, name string, dur uint64, data []uint64, ctrl ...uint64) *chakrav1.Node {
		return &chakrav1.Node{Id: id, Name: name, Type: chakrav1.NodeType_COMP_NODE, DurationMicros: dur, DataDeps: data, CtrlDeps: ctrl}
	}
	return []*chakrav1.Node{
		op(216, "aten::flatten_dense_tensors(0)", 318, nil, 3),
		op(217, "aten::flatten_dense_tensors(1)", 28, []uint64{216}, 3),
		gpu(430, "CatArrayBatchedCopy", 4, []uint64{216}, 429),
		c10d(432, "c10d::broadcast_(0)", 85, nil, 3),
		c10d(433, "c10d::broadcast_(1)", 79, []uint64{432}, 3),
		kernel(435, "ncclKernel_Broadcast_RING_LL_Sum_int8_t", chakrav1.CollectiveCommType_BROADCAST, 212480, 28, []uint64{432, 216, 217}, 434),
		// Backward: two gradient kernels, then the all-reduce of their bucket.
		gpu(3238, "gemm_backward(0)", 600, []uint64{217}, 3238),
		gpu(3240, "gemm_backward(1)", 400, []uint64{3238}, 3240),
		c10d(3254, "c10d::allreduce_(0)", 151, []uint64{3240}, 3248),
		c10d(3255, "c10d::allreduce_(1)", 174, []uint64{3240, 3254}, 3248),
		kernel(3256, "ncclKernel_AllReduce_RING_LL_Sum_float", chakrav1.CollectiveCommType_ALL_REDUCE, 8196000, 5572, []uint64{3254, 3238, 3240}, 3255),
		gpu(3300, "gemm_backward(2)", 700, []uint64{3240}, 3300),
		c10d(3511, "c10d::allreduce_(0)", 86, []uint64{3300}, 3511),
		kernel(3512, "ncclKernel_AllReduce_RING_LL_Sum_float", chakrav1.CollectiveCommType_ALL_REDUCE, 31502336, 9093, []uint64{3511, 3300}, 3507),
	}
}

// TestPyTorchShaped reads the shape above as Chakra's feeder does and
// counts what it ignored. By hand: 216 0-318, 217 318-346, 3238
// 346-946, 3240 946-1346, 3254 (no time) ready 1346, 3300 1346-2046,
// 3511 ready 2046; the broadcast kernel waits for 432 (0), 216 and 217
// (346); the all-reduce kernels for 3240 (1346) and 3300 (2046).
func TestPyTorchShaped(t *testing.T) {
	nodes := pytorchShaped()
	for name, data := range map[string][]byte{"protobuf": et(t, nodes...), "jsonizer": jsonized(t, nodes...)} {
		t.Run(name, func(t *testing.T) {
			var rk *Rank
			var err error
			if name == "protobuf" {
				rk, err = Decode(bytes.NewReader(data), "pt.et")
			} else {
				rk, err = DecodeJSON(data, "pt.json")
			}
			if err != nil {
				t.Fatal(err)
			}
			tr, err := Merge([]*Rank{rk})
			if err != nil {
				t.Fatal(err)
			}
			wantB := []want{{collective.Broadcast, 212480, 346}, {collective.AllReduce, 8196000, 1346}, {collective.AllReduce, 31502336, 2046}}
			if len(tr.Buckets) != 3 || tr.BackwardPS != 2046e6 {
				t.Fatalf("%d buckets, backward %d ps", len(tr.Buckets), tr.BackwardPS)
			}
			for i, w := range wantB {
				if b := tr.Buckets[i]; b.Op != w.op || b.Bytes != w.bytes || b.ReadyPS != w.ready*1e6 {
					t.Errorf("bucket %d: %v %d B ready %d ps; want %+v", i, b.Op, b.Bytes, b.ReadyPS, w)
				}
			}
			s := rk.Stats
			// 14 nodes: 8 compute, 6 collective (3 typed, 5 untyped... see below).
			if s.Nodes != 14 || s.ByType[chakrav1.NodeType_COMP_NODE] != 6 || s.ByType[chakrav1.NodeType_COMM_COLL_NODE] != 8 ||
				s.Untyped != 5 || s.Ops[collective.AllReduce] != 2 || s.Ops[collective.Broadcast] != 1 {
				t.Errorf("stats %+v", s)
			}
			// Control dependencies: 14 in all; on absent nodes 3 (216, 217,
			// 432, 433), 429, 434, 3248 (3254, 3255), 3507 = 9; on the node
			// itself 3238, 3240, 3300, 3511 = 4; on a node present, 3255 -> 3256.
			if s.CtrlDeps != 14 || s.CtrlAbsent != 9 || s.CtrlSelf != 4 {
				t.Errorf("control dependencies %d, absent %d, self %d; want 14, 9, 4", s.CtrlDeps, s.CtrlAbsent, s.CtrlSelf)
			}
			lines := strings.Join(tr.Source.Lines(), "\n")
			for _, w := range []string{"14 control dependencies: Chakra's feeder schedules on data dependencies only",
				"9 of them on nodes the trace does not hold", "4 of them on the node itself",
				"5 collective nodes without comm_type (untyped): not priced", "1 BROADCAST collectives", "2 ALL_REDUCE collectives"} {
				if !strings.Contains(lines, w) {
					t.Errorf("provenance lacks %q:\n%s", w, lines)
				}
			}
		})
	}
}

// writeRanks writes an ASTRA-sim microbenchmark workload as its generator
// scripts do (examples/workload/microbenchmarks/generator_scripts): one
// file per NPU, each with one COMM_COLL_NODE whose id is the NPU's index,
// comm_type the collective and comm_size 1 MiB.
func writeRanks(t *testing.T, dir, name string, kind chakrav1.CollectiveCommType, npus int) string {
	t.Helper()
	prefix := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for r := range npus {
		n := &chakrav1.Node{Id: uint64(r), Name: fmt.Sprintf("%s_%dnpus_1MB", name, npus), Type: chakrav1.NodeType_COMM_COLL_NODE,
			Attr: []*chakrav1.AttributeProto{{Name: "is_cpu_op", Value: &chakrav1.AttributeProto_BoolVal{BoolVal: false}},
				intAttr("comm_type", int64(kind)), intAttr("comm_size", 1<<20)}}
		if err := os.WriteFile(fmt.Sprintf("%s.%d.et", prefix, r), et(t, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return prefix
}

// TestASTRAMicrobenchmarks reads every shape of ASTRA-sim's shipped
// microbenchmarks (all four collectives, 4, 8 and 16 NPUs): the worker
// count is the number of files, one bucket of 1 MiB of that operation.
func TestASTRAMicrobenchmarks(t *testing.T) {
	dir := t.TempDir()
	for name, kind := range map[string]chakrav1.CollectiveCommType{"all_reduce": chakrav1.CollectiveCommType_ALL_REDUCE,
		"all_gather": chakrav1.CollectiveCommType_ALL_GATHER, "reduce_scatter": chakrav1.CollectiveCommType_REDUCE_SCATTER,
		"all_to_all": chakrav1.CollectiveCommType_ALL_TO_ALL} {
		for _, npus := range []int{4, 8, 16} {
			prefix := writeRanks(t, filepath.Join(dir, fmt.Sprint(npus)), name, kind, npus)
			tr, err := ReadRanks(prefix)
			if err != nil {
				t.Fatalf("%s %d: %v", name, npus, err)
			}
			if tr.Workers != npus || tr.Ranks != npus || len(tr.Buckets) != 1 || tr.Buckets[0].Op != collective.Op(kind) || tr.Buckets[0].Bytes != 1<<20 {
				t.Errorf("%s %d NPUs: workers %d ranks %d buckets %+v", name, npus, tr.Workers, tr.Ranks, tr.Buckets)
			}
			if got := tr.Source.ReadLine(); !strings.Contains(got, fmt.Sprintf("%d rank files, %d nodes", npus, npus)) {
				t.Errorf("%s %d: provenance %q", name, npus, got)
			}
		}
	}
}

// TestRanksDisagree: a rank whose collectives differ from rank 0's is an
// error naming the rank and its node; so are a different count and a gap
// in the file numbers.
func TestRanksDisagree(t *testing.T) {
	dir := t.TempDir()
	prefix := writeRanks(t, dir, "all_reduce", chakrav1.CollectiveCommType_ALL_REDUCE, 4)
	os.WriteFile(prefix+".3.et", et(t, coll(3, chakrav1.CollectiveCommType_REDUCE_SCATTER, 1<<20)), 0o644)
	if _, err := ReadRanks(prefix); err == nil || !strings.Contains(err.Error(), "rank 3 node 3") || !strings.Contains(err.Error(), "a REDUCE_SCATTER of 1048576 bytes, where rank 0 has node 0, a ALL_REDUCE") {
		t.Errorf("disagreeing rank: %v", err)
	}
	os.WriteFile(prefix+".3.et", et(t, coll(3, chakrav1.CollectiveCommType_ALL_REDUCE, 1<<20), coll(4, chakrav1.CollectiveCommType_ALL_REDUCE, 64)), 0o644)
	if _, err := ReadRanks(prefix); err == nil || !strings.Contains(err.Error(), "rank 3") || !strings.Contains(err.Error(), "issues 2 typed collectives, rank 0") {
		t.Errorf("longer rank: %v", err)
	}
	os.Remove(prefix + ".2.et")
	if _, err := ReadRanks(prefix); err == nil || !strings.Contains(err.Error(), "all_reduce.3.et exists but") {
		t.Errorf("gap: %v", err)
	}
	// The latest rank sets a collective's ready time.
	p2 := filepath.Join(dir, "late")
	os.WriteFile(p2+".0.et", et(t, comp(1, 10), coll(2, chakrav1.CollectiveCommType_ALL_REDUCE, 64, 1)), 0o644)
	os.WriteFile(p2+".1.et", et(t, comp(7, 30), coll(8, chakrav1.CollectiveCommType_ALL_REDUCE, 64, 7)), 0o644)
	tr, err := ReadRanks(p2)
	if err != nil || tr.Buckets[0].ReadyPS != 30e6 || tr.BackwardPS != 30e6 {
		t.Errorf("late rank: %v %+v", err, tr)
	}
}

// TestFeederJSON reads Chakra's JSON feeder form; its shape follows
// Chakra's tests/data json_trace (workload_graph with Id, Name, NodeType,
// ctrlDeps, data_deps, runtime, is_cpu_op), where collectives carry no
// comm_type: then nothing is priced and the error says what was read.
func TestFeederJSON(t *testing.T) {
	untyped := `{"workload_graph": [
 {"Id": 216, "Name": "aten::flatten_dense_tensors(0)", "NodeType": 4, "ctrlDeps": [3], "data_deps": [], "runtime": 318, "is_cpu_op": true},
 {"Id": 432, "Name": "c10d::broadcast_(0)", "NodeType": 7, "ctrlDeps": [3], "data_deps": [], "runtime": 85, "is_cpu_op": true},
 {"Id": 435, "Name": "ncclKernel_Broadcast", "NodeType": 7, "ctrlDeps": [434], "data_deps": [432, 216], "runtime": 28, "is_cpu_op": false}],
 "workload_name": "workload_name", "ngpus": 8, "soc": "soc_name"}`
	_, err := DecodeJSON([]byte(untyped), "small.json")
	if err != nil {
		t.Fatal(err)
	}
	rk, _ := DecodeJSON([]byte(untyped), "small.json")
	if _, err := Merge([]*Rank{rk}); err == nil || !strings.Contains(err.Error(), "no typed collective node to price (3 nodes, 1 COMP_NODE, 2 COMM_COLL_NODE; 2 collective nodes without comm_type)") {
		t.Errorf("untyped feeder JSON: %v", err)
	}
	typed := strings.Replace(untyped, `"runtime": 28,`, `"runtime": 28, "comm_type": 5, "comm_size": 212480,`, 1)
	rk, err = DecodeJSON([]byte(typed), "typed.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Merge([]*Rank{rk})
	if err != nil || len(tr.Buckets) != 1 || tr.Buckets[0].Op != collective.Broadcast || tr.Buckets[0].ReadyPS != 318e6 {
		t.Errorf("typed feeder JSON: %v %+v", err, tr)
	}
	host := `{"schema": "1.0.2-chakra.0.0.4", "pid": 1, "nodes": [{"id": 2, "name": "[pytorch|profiler|execution_trace|thread]"}]}`
	if _, err := DecodeJSON([]byte(host), "host.json"); err == nil || !strings.Contains(err.Error(), "a PyTorch execution trace (host trace, schema 1.0.2-chakra.0.0.4)") || !strings.Contains(err.Error(), "chakra_converter") {
		t.Errorf("PyTorch host trace: %v", err)
	}
}

func TestErrors(t *testing.T) {
	ar := chakrav1.CollectiveCommType_ALL_REDUCE
	good := et(t, comp(1, 1), coll(2, ar, 4, 1))
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty file"},
		{"truncated", good[:len(good)-2], "node record 1"},
		{"unknown dep", et(t, coll(2, ar, 4, 7)), "data dependency on node 7, which the trace does not have"},
		{"cycle", et(t, comp(1, 1, 2), comp(2, 1, 1), coll(3, ar, 4)), "cycle"},
		{"duplicate", et(t, comp(1, 1), comp(1, 2)), "node id 1 appears twice (records 0 and 1)"},
		{"size", et(t, coll(1, ar, 6)), "not a multiple of the element size 4"},
		{"nothing to price", et(t, comp(1, 1)), "no typed collective node to price (1 nodes, 1 COMP_NODE)"},
		{"comm_type range", et(t, coll(1, chakrav1.CollectiveCommType(12), 4)), "comm_type 12 is not one of Chakra's"},
		{"no comm_size", et(t, &chakrav1.Node{Id: 1, Type: chakrav1.NodeType_COMM_COLL_NODE, Attr: []*chakrav1.AttributeProto{intAttr("comm_type", 0)}}), "needs a positive comm_size"},
		{"node type", et(t, &chakrav1.Node{Id: 1, Type: chakrav1.NodeType(9)}), "node type 9 is not one of Chakra's NodeType"},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, "global metadata: length"},
		{"garbage", []byte{3, 0xff, 0xff, 0xff}, "global metadata: decode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rk, err := Decode(bytes.NewReader(c.data), "bad.et")
			if err == nil {
				_, err = Merge([]*Rank{rk})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.et") {
				t.Fatalf("err %v, want %q naming bad.et", err, c.want)
			}
		})
	}
	// A data dependency on the node itself is ignored and counted.
	rk, err := Decode(bytes.NewReader(et(t, comp(1, 5, 1), coll(2, ar, 4, 1, 1))), "self.et")
	if err != nil || rk.Stats.DataSelf != 1 || rk.Stats.DataRepeated != 1 || rk.Collectives[0].ReadyUS != 5 {
		t.Errorf("self and repeated data dependencies: %v %+v", err, rk)
	}
}

// FuzzDecode: the reader never panics; an accepted trace has ordered
// buckets within its backward time, and the same records written as the
// jsonizer does read to the same collectives (an independent decoder of
// the framing, protojson and the JSON path as the oracle).
func FuzzDecode(f *testing.F) {
	ar := chakrav1.CollectiveCommType_ALL_REDUCE
	f.Add(et(f, comp(1, 10), comp(2, 20, 1), coll(3, ar, 400, 2), comp(4, 5, 3), coll(5, ar, 800, 4)))
	f.Add(et(f, pytorchShaped()...))
	f.Add(et(f, comp(1, 1, 2), comp(2, 1, 1)))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rk, err := Decode(bytes.NewReader(data), "f.et")
		if err != nil {
			if !strings.Contains(err.Error(), "f.et") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		var prev uint64
		for _, c := range rk.Collectives {
			if c.ReadyUS < prev || c.ReadyUS > rk.EndUS {
				t.Fatalf("collective %+v out of order or after the end %d", c, rk.EndUS)
			}
			prev = c.ReadyUS
		}
		js := rejson(t, data)
		again, err := DecodeJSON(js, "f.json")
		if err != nil {
			t.Fatalf("the jsonizer's form of an accepted trace: %v\n%s", err, js)
		}
		if again.EndUS != rk.EndUS || len(again.Collectives) != len(rk.Collectives) {
			t.Fatalf("JSON form: end %d, %d collectives; protobuf %d, %d", again.EndUS, len(again.Collectives), rk.EndUS, len(rk.Collectives))
		}
		for i := range rk.Collectives {
			a, b := rk.Collectives[i], again.Collectives[i]
			if a.ID != b.ID || a.Op != b.Op || a.Bytes != b.Bytes || a.ReadyUS != b.ReadyUS {
				t.Fatalf("collective %d: %+v vs %+v", i, a, b)
			}
		}
	})
}

// rejson splits data's records with protowire (not the reader's code) and
// writes them as protobuf JSON.
func rejson(t *testing.T, data []byte) []byte {
	var out []byte
	for i := 0; len(data) > 0; i++ {
		n, k := protowire.ConsumeVarint(data)
		if k < 0 || uint64(len(data)-k) < n {
			t.Fatalf("record %d framing", i)
		}
		rec := data[k : k+int(n)]
		data = data[k+int(n):]
		var m proto.Message = &chakrav1.Node{}
		if i == 0 {
			m = &chakrav1.GlobalMetadata{}
		}
		if err := proto.Unmarshal(rec, m); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		js, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, js...), '\n')
	}
	return out
}

// FuzzDecodeJSON: the JSON reader never panics and names the file.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"workload_graph":[{"Id":1,"NodeType":4,"runtime":3},{"Id":2,"NodeType":7,"data_deps":[1],"comm_type":0,"comm_size":64}]}`))
	f.Add(jsonized(f, pytorchShaped()...))
	f.Add([]byte(`{"schema":"1.0.2","nodes":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rk, err := DecodeJSON(data, "f.json")
		if err != nil {
			if !strings.Contains(err.Error(), "f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if _, err := Merge([]*Rank{rk}); err != nil && !strings.Contains(err.Error(), "f.json") {
			t.Fatalf("merge error does not name the file: %v", err)
		}
	})
}

// TestDecodeAllocationBound: decoding and scheduling a 4M-node ET (the
// hostile probe's size; it took 2.0 GB) allocates a bounded number of
// bytes a node, whatever the machine's load (runtime.MemStats.TotalAlloc
// is deterministic, unlike a peak RSS): the node arrays, the dependency
// graph and the times, no decoded messages. The package doc states the
// bound this checks.
func TestDecodeAllocationBound(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 4M-node ET (-short)")
	}
	const n = 4_000_000
	var b []byte
	add := func(m proto.Message) {
		raw, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = append(protowire.AppendVarint(b, uint64(len(raw))), raw...)
	}
	add(&chakrav1.GlobalMetadata{Version: "0.0.4"})
	for i := 1; i <= n; i++ {
		nd := &chakrav1.Node{Id: uint64(i), Name: "aten::mm", Type: chakrav1.NodeType_COMP_NODE, DurationMicros: 1}
		if i%2 == 0 {
			nd.DataDeps = []uint64{uint64(i - 1)}
		}
		if i%100_000 == 0 {
			nd = coll(uint64(i), chakrav1.CollectiveCommType_ALL_REDUCE, 1<<20, uint64(i-1))
		}
		add(nd)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rk, err := Decode(bytes.NewReader(b), "big.et")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(rk.Collectives) != 40 {
		t.Fatalf("%d collectives", len(rk.Collectives))
	}
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated a node", per)
	if per > 150 {
		t.Errorf("%.0f bytes allocated a node; the bound is 150", per)
	}
}
