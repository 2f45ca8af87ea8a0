package chakra

import (
	"bytes"
	"strings"
	"testing"

	chakrav1 "github.com/neuronfabric/nfabric/api/chakra/v1"
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

func coll(id uint64, kind chakrav1.CollectiveCommType, size int64, deps ...uint64) *chakrav1.Node {
	return &chakrav1.Node{Id: id, Name: "coll", Type: chakrav1.NodeType_COMM_COLL_NODE, DataDeps: deps, DurationMicros: 999,
		Attr: []*chakrav1.AttributeProto{
			{Name: "comm_type", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: int64(kind)}},
			{Name: "comm_size", Value: &chakrav1.AttributeProto_Int64Val{Int64Val: size}},
		}}
}

type want struct {
	bytes int64
	ready int64 // us
}

func TestTimelines(t *testing.T) {
	ar := chakrav1.CollectiveCommType_ALL_REDUCE
	for _, c := range []struct {
		name     string
		nodes    []*chakrav1.Node
		buckets  []want
		backward int64
		skipped  int
	}{
		// 1(10) -> 2(20) -> AR3 (ready 30) -> 4(5) -> AR5 (ready 35): the
		// collective takes no time on the compute timeline.
		{"chain", []*chakrav1.Node{comp(1, 10), comp(2, 20, 1), coll(3, ar, 400, 2), comp(4, 5, 3), coll(5, ar, 800, 4)},
			[]want{{400, 30}, {800, 35}}, 35, 0},
		// 1(10) and 2(25) fan in to AR3 (ready 25); 4(7) after 1 ends at
		// 17, AR5 after it: listed by ready time, AR5 first.
		{"fan-in", []*chakrav1.Node{comp(1, 10), comp(2, 25), coll(3, ar, 64, 1, 2), comp(4, 7, 1), coll(5, ar, 128, 4)},
			[]want{{128, 17}, {64, 25}}, 25, 0},
		// A step with three all-reduces and an all-gather (skipped); node 6
		// waits on 5 by a control dependency; nodes listed out of order.
		{"step", []*chakrav1.Node{
			coll(10, ar, 4096, 3), comp(3, 40, 2), comp(2, 30, 1), comp(1, 100),
			coll(11, ar, 8192, 2), coll(12, chakrav1.CollectiveCommType_ALL_GATHER, 4, 1),
			comp(5, 50, 3), {Id: 6, Type: chakrav1.NodeType_COMP_NODE, DurationMicros: 1, CtrlDeps: []uint64{5}}, coll(13, ar, 16, 6)},
			// 1: 0-100, 2: 100-130, 3: 130-170, 5: 170-220, 6: 220-221.
			[]want{{8192, 130}, {4096, 170}, {16, 221}}, 221, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Read(bytes.NewReader(et(t, c.nodes...)), c.name)
			if err != nil {
				t.Fatal(err)
			}
			tr, skipped, err := e.Trace(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if skipped != c.skipped || len(tr.Buckets) != len(c.buckets) || tr.BackwardPS != c.backward*1e6 || tr.ForwardPS != 0 {
				t.Fatalf("skipped %d, %d buckets, backward %d", skipped, len(tr.Buckets), tr.BackwardPS)
			}
			for i, w := range c.buckets {
				b := tr.Buckets[i]
				if b.Bytes != w.bytes || b.ReadyPS != w.ready*1e6 || b.Elements != w.bytes/4 {
					t.Fatalf("bucket %d: %+v, want %+v", i, b, w)
				}
			}
		})
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
		{"unknown dep", et(t, coll(2, ar, 4, 7)), "node 7, which the trace does not have"},
		{"cycle", et(t, comp(1, 1, 2), comp(2, 1, 1), coll(3, ar, 4)), "cycle"},
		{"self", et(t, comp(1, 1, 1)), "itself"},
		{"duplicate", et(t, comp(1, 1), comp(1, 2)), "twice"},
		{"size", et(t, coll(1, ar, 6)), "multiple of 4"},
		{"no all-reduce", et(t, comp(1, 1)), "no ALL_REDUCE"},
		{"no comm_type", et(t, &chakrav1.Node{Id: 1, Type: chakrav1.NodeType_COMM_COLL_NODE}), "without a comm_type"},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, "global metadata: length"},
		{"garbage", []byte{3, 0xff, 0xff, 0xff}, "global metadata: decode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Read(bytes.NewReader(c.data), "bad.et")
			if err == nil {
				_, _, err = e.Trace("bad.et")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// FuzzRead: the reader and the timeline never panic; an accepted trace
// has ordered buckets within its backward time.
func FuzzRead(f *testing.F) {
	ar := chakrav1.CollectiveCommType_ALL_REDUCE
	f.Add(et(f, comp(1, 10), comp(2, 20, 1), coll(3, ar, 400, 2), comp(4, 5, 3), coll(5, ar, 800, 4)))
	f.Add(et(f, comp(1, 1, 2), comp(2, 1, 1)))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Read(bytes.NewReader(data), "f.et")
		if err != nil {
			if !strings.Contains(err.Error(), "f.et") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		tr, _, err := e.Trace("f.et")
		if err != nil {
			return
		}
		var prev int64
		for _, b := range tr.Buckets {
			if b.ReadyPS < prev || b.ReadyPS > tr.BackwardPS || b.Bytes <= 0 {
				t.Fatalf("bad bucket %+v (backward %d)", b, tr.BackwardPS)
			}
			prev = b.ReadyPS
		}
	})
}
