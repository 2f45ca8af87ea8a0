package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/report"
)

// meter records what the units of a pool test do: how many slots are in
// use at once (the most ever), and each unit's start and end in one
// sequence of events.
type meter struct {
	mu     sync.Mutex
	inUse  int
	peak   int
	events []string
}

func (m *meter) enter(key string, slots int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inUse += slots
	m.peak = max(m.peak, m.inUse)
	m.events = append(m.events, "start "+key)
}

func (m *meter) leave(key string, slots int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inUse -= slots
	m.events = append(m.events, "end "+key)
}

// poolUnits makes one pool unit per entry of cores; unit i records itself
// in m, under the slots the test expects it to take for jobs, and runs
// body (nil: returns at once).
func poolUnits(m *meter, jobs int, cores []int, body func(i int)) []poolUnit {
	b := Block{Name: "pool"}
	var us []poolUnit
	for i, c := range cores {
		key := fmt.Sprintf("u%d", i)
		want := c
		if c == AllCores || c > jobs {
			want = jobs
		}
		us = append(us, poolUnit{block: b, unit: plannedUnit{key: key, cores: c, run: func(ctx context.Context, _ Config) (json.RawMessage, error) {
			m.enter(key, want)
			defer m.leave(key, want)
			if body != nil {
				body(i)
			}
			return json.RawMessage(fmt.Sprintf("%d", i)), ctx.Err()
		}}})
	}
	return us
}

// collect runs us on jobs slots and returns the results by index and the
// units in the order the pool started them.
func collect(t *testing.T, ctx context.Context, us []poolUnit, jobs int) ([]string, []int, error) {
	t.Helper()
	got := make([]string, len(us))
	var order []int
	err := runPool(ctx, us, jobs, poolEvents{start: func(i int) { order = append(order, i) }, done: func(i int, r unitResult, _ measure) {
		got[i] = string(r.Result)
	}})
	return got, order, err
}

// TestPoolOneJobRunsInOrder: with one slot every unit, whatever it
// declares, runs alone and in the order given.
func TestPoolOneJobRunsInOrder(t *testing.T) {
	m := &meter{}
	cores := []int{1, AllCores, 1, 2, 1}
	if _, _, err := collect(t, context.Background(), poolUnits(m, 1, cores, nil), 1); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range cores {
		want = append(want, fmt.Sprintf("start u%d", i), fmt.Sprintf("end u%d", i))
	}
	if got := strings.Join(m.events, ","); got != strings.Join(want, ",") {
		t.Errorf("events %s, want %s", got, strings.Join(want, ","))
	}
}

// TestPoolOverlapsSingleCoreUnits: single-core units run side by side (each
// of the first two waits until the other has started, so the test fails,
// after a timeout, if they ran one after another), slots in use never
// exceed the jobs, and a unit taking every core never overlaps another.
func TestPoolOverlapsSingleCoreUnits(t *testing.T) {
	const jobs = 3
	m := &meter{}
	var started [2]chan struct{}
	for i := range started {
		started[i] = make(chan struct{})
	}
	overlapped := make([]bool, 2)
	cores := []int{1, 1, AllCores, 2, 1, 1, AllCores, 1, 5}
	body := func(i int) {
		if i < 2 {
			close(started[i])
			select {
			case <-started[1-i]:
				overlapped[i] = true
			case <-time.After(10 * time.Second):
			}
		}
		time.Sleep(time.Millisecond)
	}
	got, _, err := collect(t, context.Background(), poolUnits(m, jobs, cores, body), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g != fmt.Sprint(i) {
			t.Errorf("result %d = %q, want %d", i, g, i)
		}
	}
	if !overlapped[0] || !overlapped[1] {
		t.Errorf("the two single-core units did not run at the same time: %v", m.events)
	}
	if m.peak > jobs {
		t.Errorf("%d slots in use at once, more than the %d jobs", m.peak, jobs)
	}
	// A unit taking every slot runs alone: between its start and its end
	// there is no other event.
	for i, c := range cores {
		if c != AllCores && c <= jobs {
			continue
		}
		s := indexOf(m.events, fmt.Sprintf("start u%d", i))
		if s < 0 || s+1 >= len(m.events) || m.events[s+1] != fmt.Sprintf("end u%d", i) {
			t.Errorf("u%d (cores %d) did not run alone: %v", i, c, m.events)
		}
	}
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

// TestPoolCancel: a cancelled context starts no more units and the pool
// returns the context's error after the running units end.
func TestPoolCancel(t *testing.T) {
	m := &meter{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// u0 and u1 fill the two slots; u1 cancels and every other unit
	// returns only once the cancel has happened, so no slot frees before
	// it (u2 could otherwise start, finish and free its slot while u1 was
	// still to be scheduled, which is what the race detector's scheduling
	// once showed).
	body := func(i int) {
		if i == 1 {
			cancel()
			return
		}
		<-ctx.Done()
	}
	_, _, err := collect(t, ctx, poolUnits(m, 2, []int{1, 1, 1, 1, 1, 1}, body), 2)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	for _, e := range m.events {
		if e == "start u2" || e == "start u3" || e == "start u4" || e == "start u5" {
			t.Errorf("%s after the cancel: %v", e, m.events)
		}
	}
	if m.inUse != 0 {
		t.Errorf("runPool returned with %d slots still in use", m.inUse)
	}
}

// orderBlock is a block whose units finish in reverse order when run side
// by side (unit i sleeps longer the smaller i is) and log a line each; its
// layout lists the results in unit order.
func orderBlock(name string, order, n, cores int) Block {
	return NewBlock(Spec[synthResult]{
		Name: name, Title: "ordering " + name, Order: order,
		Units: func(cfg Config) ([]Unit[synthResult], error) {
			var us []Unit[synthResult]
			for i := range n {
				key := fmt.Sprintf("u%d", i)
				us = append(us, Unit[synthResult]{Key: key, Cores: cores, Run: func(_ context.Context, cfg Config) (synthResult, error) {
					time.Sleep(time.Duration(n-i) * 3 * time.Millisecond)
					cfg.Progressf("unit %d of %d", i, n)
					return synthResult{Key: key, Value: float64(i*i) / 7, Rows: []float64{float64(i)}}, nil
				}})
			}
			return us, nil
		},
		Layout: func(_ Config, rs []synthResult) (*report.Result, error) {
			t := report.Table{Name: name, Columns: []string{"key", "value"}}
			for _, r := range rs {
				t.AddRow(r.Key, r.Value)
			}
			return &report.Result{Tables: []report.Table{t}, Data: rs}, nil
		},
	})
}

// TestRunJobsSameBytes runs blocks of single-core and whole-machine units
// (and one failing block) with 1, 2 and 5 jobs and compares every file
// written, byte for byte; with more than one job the single-core units
// finish out of order. The progress lines name their unit.
func TestRunJobsSameBytes(t *testing.T) {
	bs := []Block{orderBlock("first", 1, 6, 1), synthBlock("beta", 2, 1), orderBlock("second", 2, 4, AllCores), orderBlock("third", 3, 5, 1)}
	run := func(jobs int) (map[string][]byte, string) {
		dir := t.TempDir()
		var progress bytes.Buffer
		_, err := Run(context.Background(), bs, Config{Seed: 3, Jobs: jobs}, dir, &progress)
		if err == nil || !strings.Contains(err.Error(), "beta") {
			t.Fatalf("jobs %d: error %v, want beta's failure", jobs, err)
		}
		return readDir(t, dir), progress.String()
	}
	want, progress := run(1)
	if len(want) < 8 {
		t.Fatalf("only %d files written", len(want))
	}
	for _, line := range []string{"    [first/u3] unit 3 of 6\n", "[1/4] first: ordering first ...\n", "[2/4] beta: FAILED: seed3/u1: boom\n"} {
		if !strings.Contains(progress, line) {
			t.Errorf("progress lacks %q:\n%s", line, progress)
		}
	}
	for _, jobs := range []int{2, 5} {
		got, _ := run(jobs)
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Errorf("jobs %d: %s differs from one job", jobs, name)
			}
		}
		if len(got) != len(want) {
			t.Errorf("jobs %d wrote %d files, one job %d", jobs, len(got), len(want))
		}
	}
}

// TestPoolStartsLongUnitsFirst: with more than one slot a Long unit starts
// before the units listed ahead of it; with one slot the order stays.
func TestPoolStartsLongUnitsFirst(t *testing.T) {
	for _, c := range []struct {
		jobs int
		want []int
	}{{2, []int{3, 0, 1, 2, 4}}, {1, []int{0, 1, 2, 3, 4}}} {
		us := poolUnits(&meter{}, c.jobs, []int{1, 1, 1, 1, 1}, nil)
		us[3].unit.long = true
		_, order, err := collect(t, context.Background(), us, c.jobs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(order, c.want) {
			t.Errorf("jobs %d: started %v, want %v", c.jobs, order, c.want)
		}
	}
}
