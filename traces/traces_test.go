package traces

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
)

// ev is one complete event of a profile.
func ev(name, cat string, ts, dur float64, args map[string]any) map[string]any {
	e := map[string]any{"name": name, "ph": "X", "cat": cat, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
	if args != nil {
		e["args"] = args
	}
	return e
}

func profileJSON(t *testing.T, events []map[string]any, extra map[string]any) []byte {
	t.Helper()
	doc := map[string]any{"schemaVersion": 1, "traceEvents": events}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rpc(name string, ts float64, nelems int64, dtype string, group int) map[string]any {
	return ev("record_param_comms", "cpu_op", ts, 5, map[string]any{"Collective name": name, "In msg nelems": nelems,
		"Out msg nelems": nelems, "dtype": dtype, "Group size": group})
}

// TestTorchRecordParamComms: the NCCL form (record_param_comms events),
// two profiler steps. Step 1 (ProfilerStep#4, 1000-2000 us): backward
// from 1300 to 1700, optimizer 50 us at 1800; an all-reduce of 1000
// floats launched at 1400 (ready 100 us into backward), an all-gather of
// 10 BFloat16 at 1500 (ready 200), a broadcast in forward at 1100 (ready
// at backward's start, counted); the c10d:: events beside them are not
// counted twice.
func TestTorchRecordParamComms(t *testing.T) {
	events := []map[string]any{
		ev("ProfilerStep#4", "user_annotation", 1000, 1000, nil),
		rpc("broadcast", 1100, 16, "Float", 4),
		ev("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 1300, 100, nil),
		rpc("allreduce", 1400, 1000, "Float", 4),
		ev("c10d::allreduce_", "cpu_op", 1399, 10, map[string]any{"Input Dims": []any{[]any{1000}}}),
		rpc("_allgather_base", 1500, 10, "BFloat16", 4),
		ev("autograd::engine::evaluate_function: TBackward0", "cpu_op", 1600, 100, nil),
		ev("Optimizer.step#SGD.step", "user_annotation", 1800, 50, nil),
		ev("ProfilerStep#5", "user_annotation", 2000, 500, nil),
		ev("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 2100, 100, nil),
		rpc("reduce_scatter_tensor_coalesced", 2150, 400, "Float", 4),
		rpc("send", 2160, 4, "Float", 4),
	}
	tr, err := ReadTorchProfile(profileJSON(t, events, nil), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Workers != 4 || len(tr.Steps) != 2 || tr.Steps[0].Step != 4 || tr.Steps[1].Step != 5 {
		t.Fatalf("workers %d, steps %d", tr.Workers, len(tr.Steps))
	}
	s := tr.Steps[0]
	if s.ForwardPS != 300e6 || s.BackwardPS != 400e6 || s.OptimizerPS != 50e6 {
		t.Errorf("step 4: forward %d backward %d optimizer %d ps", s.ForwardPS, s.BackwardPS, s.OptimizerPS)
	}
	want := []struct {
		op    collective.Op
		bytes int64
		ready int64
	}{{collective.Broadcast, 64, 0}, {collective.AllReduce, 4000, 100e6}, {collective.AllGather, 20, 200e6}}
	for i, w := range want {
		if b := s.Buckets[i]; b.Op != w.op || b.Bytes != w.bytes || b.ReadyPS != w.ready || b.RecordedPS != 5e6 {
			t.Errorf("bucket %d: %v %d B ready %d; want %+v", i, b.Op, b.Bytes, b.ReadyPS, w)
		}
	}
	if b := tr.Steps[1].Buckets[0]; b.Op != collective.ReduceScatter || b.Bytes != 1600 || b.ReadyPS != 50e6 {
		t.Errorf("step 5: %+v", b)
	}
	lines := strings.Join(tr.Source.Lines(), "\n")
	for _, w := range []string{"4 collectives (record_param_comms)", "1 c10d:: dispatcher events: the record_param_comms events describe the same collectives",
		"1 collectives launched before their step's backward", "1 record_param_comms events that are not collectives"} {
		if !strings.Contains(lines, w) {
			t.Errorf("provenance lacks %q:\n%s", w, lines)
		}
	}
}

// TestTorchGloo: the gloo form (no record_param_comms; c10d:: events with
// record_shapes' Input Dims, element types from the gloo: annotations in
// launch order), steps cut by Optimizer.step, the world size from
// distributedInfo.
func TestTorchGloo(t *testing.T) {
	dims := func(d ...any) map[string]any {
		return map[string]any{"Input Dims": d, "Input type": []any{"TensorList"}}
	}
	events := []map[string]any{
		ev("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 100, 50, nil),
		ev("c10d::allreduce_", "cpu_op", 120, 10, dims([]any{[]any{9610}})),
		ev("gloo:all_reduce", "user_annotation", 125, 300, map[string]any{"Input type": []any{"float"}, "Input Dims": []any{[]any{9610}}}),
		ev("c10d::_allgather_base_", "cpu_op", 140, 10, map[string]any{"Input Dims": []any{[]any{2000}, []any{1000}}, "Input type": []any{"float", "float"}}),
		ev("Optimizer.step#SGD.step", "user_annotation", 500, 20, nil),
		ev("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 600, 50, nil),
		ev("c10d::allreduce_", "cpu_op", 610, 10, dims([]any{[]any{9610}})),
		ev("gloo:all_reduce", "user_annotation", 612, 300, map[string]any{"Input type": []any{"float"}}),
		ev("Optimizer.step#SGD.step", "user_annotation", 900, 20, nil),
	}
	tr, err := ReadTorchProfile(profileJSON(t, events, map[string]any{"distributedInfo": map[string]any{"world_size": 2}}), "g.json")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Workers != 2 || len(tr.Steps) != 2 {
		t.Fatalf("workers %d, %d steps", tr.Workers, len(tr.Steps))
	}
	s := tr.Steps[0]
	// Step 1 runs from the first event (100) to the optimizer's end (520).
	if s.ForwardPS != 0 || s.Buckets[0].Bytes != 38440 || s.Buckets[0].ReadyPS != 20e6 || s.Buckets[1].Op != collective.AllGather || s.Buckets[1].Bytes != 4000 {
		t.Errorf("step 1 %+v", s)
	}
	if b := tr.Steps[1].Buckets[0]; b.Bytes != 38440 || b.ReadyPS != 10e6 || tr.Steps[1].ForwardPS != 80e6 {
		t.Errorf("step 2 %+v forward %d", b, tr.Steps[1].ForwardPS)
	}
}

func TestTorchErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		events []map[string]any
		want   string
	}{
		{"no shapes", []map[string]any{ev("c10d::allreduce_", "cpu_op", 1, 1, nil)}, "carries no Input Dims: profile with record_shapes=True"},
		{"bf16 gradients", []map[string]any{rpc("allreduce", 1, 10, "BFloat16", 2)}, "prices FP32 gradients"},
		{"groups", []map[string]any{rpc("allreduce", 1, 10, "Float", 2), rpc("allreduce", 2, 10, "Float", 4)}, "groups of 2 and 4 ranks"},
		{"dtype", []map[string]any{rpc("broadcast", 1, 10, "Quaternion", 2)}, `unknown element type "Quaternion"`},
		{"nothing", []map[string]any{ev("aten::mm", "cpu_op", 1, 1, nil)}, "no collective events"},
		{"negative time", []map[string]any{rpc("allreduce", -5, 10, "Float", 2)}, "must be finite, >= 0"},
	} {
		_, err := ReadTorchProfile(profileJSON(t, c.events, nil), "bad.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%s: %v; want %q naming bad.json", c.name, err, c.want)
		}
	}
	if _, err := ReadTorchProfile([]byte(`{"traceEvents":[],"traceEvents":[]}`), "dup.json"); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate key: %v", err)
	}
}

// TestLoadKinds: Load tells every kind apart by name and content.
func TestLoadKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	for _, c := range []struct {
		path, format string
	}{
		{write("n.json", `{"buckets":[{"bytes":4,"ready_us":0}]}`), "nfabric bucket trace (JSON, version 1)"},
		{write("n.csv", "bytes,ready_us\n4,0\n"), "nfabric bucket trace (CSV)"},
		{write("p.json", string(profileJSON(t, []map[string]any{rpc("allreduce", 1, 10, "Float", 2)}, nil))), "torch.profiler Chrome trace"},
		{write("a.json", `[{"name":"record_param_comms","ph":"X","cat":"cpu_op","ts":1,"dur":1,"args":{"Collective name":"allreduce","In msg nelems":4,"dtype":"Float","Group size":2}}]`), "torch.profiler Chrome trace"},
		{write("c.json", `{"workload_graph":[{"Id":1,"NodeType":7,"comm_type":0,"comm_size":64}]}`), "Chakra ET (JSON feeder form)"},
	} {
		tr, err := Load(c.path)
		if err != nil || tr.Source == nil || tr.Source.Format != c.format {
			t.Errorf("Load(%s) = %v, %+v; want format %q", c.path, err, tr, c.format)
		}
	}
	for _, c := range []struct{ path, want string }{
		{write("h.json", `{"schema":"1.0.2-chakra.0.0.4","nodes":[]}`), "PyTorch execution trace"},
		{write("x.txt", "hi"), "unknown kind"},
		{filepath.Join(dir, "nothing"), "no " + filepath.Join(dir, "nothing") + ".0.et"},
		{dir, "is a directory"},
	} {
		if _, err := Load(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s) = %v; want %q", c.path, err, c.want)
		}
	}
}

// FuzzReadTorchProfile: the profile reader never panics, names the file
// in its errors, and what it accepts has ordered buckets in every step.
func FuzzReadTorchProfile(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":100},{"name":"record_param_comms","ph":"X","cat":"cpu_op","ts":5,"dur":1,"args":{"Collective name":"allreduce","In msg nelems":8,"dtype":"Float","Group size":2}}]}`))
	f.Add([]byte(`[{"name":"c10d::allreduce_","ph":"X","cat":"cpu_op","ts":1,"dur":1,"args":{"Input Dims":[[[4]]]}},{"name":"gloo:all_reduce","ph":"X","ts":2,"dur":1,"args":{"Input type":["float"]}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTorchProfile(data, "f.json")
		if err != nil {
			if !strings.Contains(err.Error(), "f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		steps := tr.Steps
		if len(steps) == 0 {
			steps = append(steps, tr)
		}
		for _, s := range steps {
			for i := 1; i < len(s.Buckets); i++ {
				if s.Buckets[i].ReadyPS < s.Buckets[i-1].ReadyPS {
					t.Fatalf("step %d: buckets out of order", s.Step)
				}
			}
		}
	})
}

// readGz reads a gzipped fixture of testdata.
func readGz(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The two recorded fixtures are rank 0's torch.profiler Chrome traces of
// one 2-rank gloo DDP job on the CPU, two steps of
// Linear(64,128)-ReLU-Linear(128,10) (SGD, batch 16), profiled with
// torch.profiler.profile(activities=[CPU], record_shapes=True) and
// export_chrome_trace: ddp-gloo-mlp.0.json.gz by a PyTorch built with
// Kineto (the object form, distributedInfo), ddp-gloo-mlp-legacy.0.json.gz
// by Debian's python3-torch 1.13, built without Kineto (a bare list of
// events without args).

// TestTorchRecordedGloo: the Kineto trace of a real 2-rank job prices to
// the model's gradient bytes each step: 4 bytes x its 64*128+128 +
// 128*10+10 = 9,610 parameters, one all-reduce a step (DDP's single
// bucket), 2 workers from distributedInfo; DDP's buffer broadcasts are
// read as broadcasts, not gradients.
func TestTorchRecordedGloo(t *testing.T) {
	tr, err := ReadTorchProfile(readGz(t, "ddp-gloo-mlp.0.json.gz"), "ddp.json")
	if err != nil {
		t.Fatal(err)
	}
	const params = 64*128 + 128 + 128*10 + 10
	if tr.Workers != 2 || len(tr.Steps) != 2 {
		t.Fatalf("%d workers, %d steps; want 2 and 2", tr.Workers, len(tr.Steps))
	}
	for _, s := range tr.Steps {
		var grad int64
		for _, b := range s.Buckets {
			switch b.Op {
			case collective.AllReduce:
				grad += b.Bytes
			case collective.Broadcast:
			default:
				t.Errorf("step %d: a %v", s.Step, b.Op)
			}
		}
		if grad != 4*params {
			t.Errorf("step %d: all-reduce bytes %d; want 4 x %d", s.Step, grad, params)
		}
		if s.BackwardPS <= 0 || s.ForwardPS <= 0 {
			t.Errorf("step %d: forward %d ps, backward %d ps", s.Step, s.ForwardPS, s.BackwardPS)
		}
	}
}

// TestTorchLegacyRefused: the legacy profiler's trace of the same job
// holds the c10d:: collectives without shapes; the refusal names the file
// and says which torch to profile with.
func TestTorchLegacyRefused(t *testing.T) {
	_, err := ReadTorchProfile(readGz(t, "ddp-gloo-mlp-legacy.0.json.gz"), "legacy.json")
	if err == nil || !strings.Contains(err.Error(), "legacy.json") || !strings.Contains(err.Error(), "built without Kineto") {
		t.Fatalf("err %v; want the legacy profiler named", err)
	}
}
