package timing

import (
	"github.com/neuronfabric/nfabric/timing/sim"

	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"testing"
)

func smallDDR5(t *testing.T, pattern string) Config {
	cfg, err := PresetConfig(projection)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Streams.FootprintMiB, cfg.LLC.SizeMiB, cfg.Streams.Pattern = 0.25, 1, pattern
	return cfg
}

// Same configuration, same bytes: results and traces of two runs agree
// exactly.
func TestDDR5Deterministic(t *testing.T) {
	for _, pat := range []string{"read", "write-read"} {
		cfg := smallDDR5(t, pat)
		var outs [2][]byte
		var res [2]Result
		for i := range outs {
			tr, _ := sim.NewTracer(0, 2*sim.Microsecond, 1<<20)
			r, err := SimulateTraced(cfg, nil, All, tr)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := tr.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			outs[i], res[i] = b.Bytes(), r
		}
		if !bytes.Equal(outs[0], outs[1]) || !reflect.DeepEqual(res[0], res[1]) {
			t.Errorf("%s: two runs differ", pat)
		}
	}
}

// The trace is valid trace-event JSON whose lanes never overlap, and it
// has a track per stage of the path.
func TestTraceJSON(t *testing.T) {
	tr, _ := sim.NewTracer(0, 3*sim.Microsecond, 1<<20)
	if _, err := SimulateTraced(smallDDR5(t, "read"), nil, All, tr); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tr.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name, Ph string
			Pid, Tid int
			Ts, Dur  float64
			Args     map[string]any
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	names := map[string]bool{}
	end := map[[2]int]float64{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "process_name" {
				names[e.Args["name"].(string)] = true
			}
		case "X":
			k := [2]int{e.Pid, e.Tid}
			if e.Ts < end[k]-1e-9 {
				t.Fatalf("overlapping slices on pid %d lane %d at %g", e.Pid, e.Tid, e.Ts)
			}
			end[k] = e.Ts + e.Dur
		}
	}
	for _, want := range []string{"Host[0].LLC", "Device[0].Ctrl.ReqLink", "Device[0].Ctrl.RespLink", "Device[0].Ctrl.Pipe",
		"Device[0].Ctrl.DRAM.Ch[0]", "Device[0].Ctrl.DRAM.Ch[0].Queue"} {
		if !names[want] {
			t.Errorf("no track %s (have %v)", want, names)
		}
	}
}

// Memory does not grow with the lines simulated: four passes allocate
// about what one pass does.
func TestDDR5MemoryBounded(t *testing.T) {
	alloc := func(passes int) uint64 {
		cfg := smallDDR5(t, "write-read")
		cfg.Streams.Passes = passes
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		if _, err := Simulate(cfg, nil, All); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	one, four := alloc(1), alloc(4)
	if float64(four) > 1.5*float64(one) {
		t.Errorf("1 pass allocated %d B, 4 passes %d B: memory grows with lines", one, four)
	}
}

// Writes reach the DRAM under the detailed model: the write-read pattern's
// dirty evictions are timed writebacks, and they slow the reads down
// (bus turnaround, shared queues and link) against the read-only run.
func TestDDR5WritebacksTimed(t *testing.T) {
	r, err := Simulate(smallDDR5(t, "write-read"), nil, None)
	if err != nil {
		t.Fatal(err)
	}
	if r.Detail.DRAMWrites == 0 || r.Detail.DRAMWrites != r.Writebacks {
		t.Errorf("%d DRAM writes for %d writebacks", r.Detail.DRAMWrites, r.Writebacks)
	}
}
