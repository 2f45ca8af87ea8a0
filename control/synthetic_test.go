package control_test

import (
	"strings"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/usage"
)

// TestSyntheticUsage: durations that are not positive, an unknown
// scenario and a trace over the sample limit are usage errors naming the
// flag or the limit.
func TestSyntheticUsage(t *testing.T) {
	for _, c := range []struct {
		edit func(s *control.Synthetic)
		msg  string
	}{
		{func(s *control.Synthetic) { s.Duration = 0 }, "--duration"},
		{func(s *control.Synthetic) { s.Interval = -time.Second }, "--interval"},
		{func(s *control.Synthetic) { s.Step = 0 }, "--step"},
		{func(s *control.Synthetic) { s.Episode = 0 }, "--episode"},
		{func(s *control.Synthetic) { s.Scenario = "stormy" }, "--scenario"},
		{func(s *control.Synthetic) { s.Interval = time.Nanosecond }, "limit"},
	} {
		s := control.DefaultSynthetic()
		c.edit(&s)
		if _, err := s.Generate(); !usage.Is(err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v; want a usage error naming %q", s, err, c.msg)
		}
	}
}

// TestSyntheticIsTheScenario: a named scenario is the generator's trace
// at the requested step period, sample for sample; episodes alternate
// the two every episode.
func TestSyntheticIsTheScenario(t *testing.T) {
	s := control.Synthetic{Scenario: "congested", Duration: time.Second, Interval: 10 * time.Millisecond, Step: 50 * time.Millisecond, Episode: time.Second, Seed: 3}
	got, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	c := control.CongestedScenario()
	c.StepNS = 50e6
	want, _ := c.Generate(1e9, 10e6, 3)
	if len(got) != len(want) || len(got) != 101 {
		t.Fatalf("%d samples; want %d (0 to 1 s every 10 ms)", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample %d = %+v; want %+v", i, got[i], want[i])
		}
	}
	s.Scenario, s.Episode, s.Duration = "episodes", 200*time.Millisecond, 400*time.Millisecond
	ep, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	h := control.HealthyScenario()
	h.StepNS = 50e6
	hw, _ := h.Generate(4e8, 10e6, 3)
	cw, _ := c.Generate(4e8, 10e6, 4)
	for i, x := range ep {
		want := hw[i]
		if (x.TimeNS/200e6)%2 == 1 {
			want = cw[i]
		}
		if x != want {
			t.Fatalf("episodes sample %d at %d ns = %+v; want %+v", i, x.TimeNS, x, want)
		}
	}
}
