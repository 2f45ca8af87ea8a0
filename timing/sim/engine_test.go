package sim

import (
	"testing"
)

type recorder struct {
	eng  *Engine
	seen []int64
}

func (r *recorder) Handle(now Time, arg int64) {
	r.seen = append(r.seen, arg)
	if arg == 100 { // schedules a same-time event while running
		r.eng.Schedule(now, r, 101)
	}
}

// TestEngineOrder: events run by time, and events at the same time in the
// order they were scheduled, including one scheduled by a running event.
func TestEngineOrder(t *testing.T) {
	e := NewEngine()
	r := &recorder{eng: e}
	e.Schedule(30, r, 3)
	e.Schedule(10, r, 1)
	e.Schedule(20, r, 100)
	e.Schedule(20, r, 2)
	e.Schedule(10, r, 11)
	if got := e.Run(); got != 30 {
		t.Fatalf("Run() = %v; want 30ps", got)
	}
	want := []int64{1, 11, 100, 2, 101, 3}
	if len(r.seen) != len(want) {
		t.Fatalf("ran %v; want %v", r.seen, want)
	}
	for i := range want {
		if r.seen[i] != want[i] {
			t.Fatalf("ran %v; want %v", r.seen, want)
		}
	}
}

func TestEngineSchedulePastPanics(t *testing.T) {
	e := NewEngine()
	e.Schedule(10, HandlerFunc(func(now Time, _ int64) {
		defer func() {
			if recover() == nil {
				t.Error("scheduling in the past did not panic")
			}
		}()
		e.Schedule(now-1, HandlerFunc(func(Time, int64) {}), 0)
	}), 0)
	e.Run()
}

// TestEngineNoAllocs: once the pool is warm, scheduling and running
// events allocates nothing.
func TestEngineNoAllocs(t *testing.T) {
	e := NewEngine()
	var h countHandler
	for i := range 64 {
		e.Schedule(Time(i), &h, 0)
	}
	e.Run()
	allocs := testing.AllocsPerRun(100, func() {
		base := e.Now()
		for i := range 64 {
			e.Schedule(base+Time(64-i), &h, int64(i))
		}
		e.Run()
	})
	if allocs != 0 {
		t.Errorf("schedule+run of 64 events: %v allocs; want 0", allocs)
	}
}

type countHandler struct{ n int }

func (c *countHandler) Handle(Time, int64) { c.n++ }

func TestTimeString(t *testing.T) {
	for _, c := range []struct {
		t    Time
		want string
	}{
		{465, "465ps"}, {2500, "2.5ns"}, {212966, "212.966ns"}, {1500 * Microsecond, "1.5ms"}, {-3 * Nanosecond, "-3ns"}, {2 * Second, "2s"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("Time(%d).String() = %q; want %q", int64(c.t), got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"Host[0].Stream[3]", "Device[12].Ctrl.Pipe", "LLC"} {
		MustName(ok)
	}
	for _, bad := range []string{"", "0Host", "Host[x]", "Host..LLC", "Host[0]."} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MustName(%q) did not panic", bad)
				}
			}()
			MustName(bad)
		}()
	}
}
