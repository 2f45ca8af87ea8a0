package experiments

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
)

// smallSetup shrinks the model (0.25 MiB per stream against a 1 MiB LLC,
// the same 2x oversubscription as the paper's anchor) so the test is fast.
func smallSetup() TimingSetup {
	s := DefaultTimingSetup()
	s.Model.Streams.FootprintMiB = 0.25
	s.Model.LLC.SizeMiB = 1
	s.Experiments = QuickTimingParams()
	s.Experiments.DelaysMS = []float64{0, 0.05}
	s.Experiments.StepMS = 10
	return s
}

func TestTimingRegistered(t *testing.T) {
	for _, b := range run.Blocks() {
		if b.Name == "timing" {
			if b.Order != 20 {
				t.Errorf("timing block Order = %d; want 20", b.Order)
			}
			return
		}
	}
	t.Fatal("timing block not registered")
}

// TestTimingTable4 checks the measured rows against the closed form for
// the regime each row is in, finding rows by their fields.
func TestTimingTable4(t *testing.T) {
	s := smallSetup()
	rows, err := RunTable4(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows); n != 2+len(s.Experiments.StreamCounts)+2*len(s.Experiments.StackCounts) {
		t.Errorf("%d rows", n)
	}
	closed := s.Model.LatencyBoundExposurePct(s.Model.Controller.Stages)
	var congested1, congestedSplit, full int
	for _, r := range rows {
		switch {
		case r.Group == GroupFullMiss:
			full++
			// Latency-bound and all misses: within 1% (relative) of the closed form.
			if v := r.Pair.OverheadPct; v < closed*0.99 || v > closed*1.01 {
				t.Errorf("full LLC miss measured %v%%; want about %.3f%%", v, closed)
			}
		case r.Group == GroupScaleCongest && r.Stacks == 1:
			if r.Pair.Hidden() {
				congested1++
			}
		case r.Group == GroupScaleCongest:
			if !r.Pair.Hidden() {
				congestedSplit++
			}
		}
	}
	if full != 1 || congested1 != 1 || congestedSplit == 0 {
		t.Errorf("full-miss rows %d, congested N=1 hidden %d, congested split exposed %d; want 1, 1, > 0", full, congested1, congestedSplit)
	}
	res := table4Layout(s, TimingClosedForms(s), rows)
	if tab := res.Tables[0]; len(tab.Rows) != len(paperTable4) || !strings.HasPrefix(tab.Columns[3], "paper") {
		t.Errorf("table 4 has %d rows, columns %q", len(tab.Rows), tab.Columns)
	}
}

func TestTimingEnvelopeFigures(t *testing.T) {
	s := smallSetup()
	res, err := TimingEnvelope(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Figures) != 4 || len(res.Tables) != 4 {
		t.Fatalf("%d figures, %d tables; want 4 and 4", len(res.Figures), len(res.Tables))
	}
	for _, f := range res.Figures {
		if !bytes.HasPrefix(bytes.TrimSpace(f.SVG), []byte("<?xml")) && !bytes.Contains(f.SVG[:min(200, len(f.SVG))], []byte("<svg")) {
			t.Errorf("figure %s is not SVG", f.Name)
		}
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	// Same setup, same bytes.
	res2, err := TimingEnvelope(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	res2.WriteJSON(&buf2)
	if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Error("two runs of the same setup gave different JSON")
	}
}

// TestTable4CongestionFromMeasurement: the reduced-share row is labelled
// congested only where the runs measured a saturated gate. With one
// outstanding line per stream the closed-form offered load on a quarter
// link (W lines per base path, each holding the gate interval / share) is
// far below saturation, so the row and its note must say so.
func TestTable4CongestionFromMeasurement(t *testing.T) {
	for _, tc := range []struct {
		outstanding int
		congested   bool
	}{{16, true}, {1, false}} {
		s := smallSetup()
		s.Model.Streams.Outstanding = tc.outstanding
		s.Experiments.StreamCounts = []int{1}
		s.Experiments.StackCounts = []int{1, 2}
		m := s.Model
		offered := float64(m.Streams.Count*m.Streams.Outstanding) * m.LinkIntervalNS() / s.Experiments.CongestedShare / m.BasePathNS()
		if (offered >= 1) != tc.congested {
			t.Fatalf("outstanding %d: closed-form offered load %.2f of the reduced link; the case assumes congested=%v", tc.outstanding, offered, tc.congested)
		}
		rows, err := RunTable4(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		res := table4Layout(s, TimingClosedForms(s), rows)
		label := fmt.Sprint(res.Tables[0].Rows[len(paperTable4)-1][0])
		notes := strings.Join(res.Tables[0].Notes, "\n")
		if got := label == GroupScaleCongest; got != tc.congested {
			t.Errorf("outstanding %d (offered %.2f): row label %q; want congested=%v", tc.outstanding, offered, label, tc.congested)
		}
		if got := strings.Contains(notes, "did not congest"); got == tc.congested {
			t.Errorf("outstanding %d: notes %q; want 'did not congest' only when not congested", tc.outstanding, notes)
		}
		if tc.congested && !strings.Contains(notes, "oversubscribed a stack's gate at N=1") {
			t.Errorf("outstanding %d: notes do not name N=1 as congested: %q", tc.outstanding, notes)
		}
	}
}

// TestTable4FullMissLabelFromMeasurement: the full-LLC-miss row keeps its
// label only when its run missed; a footprint that fits the LLC hits on
// every pass after the first, (passes-1)/passes of the reads, and the row
// says so instead.
func TestTable4FullMissLabelFromMeasurement(t *testing.T) {
	for _, tc := range []struct {
		footprintMiB float64
		full         bool
	}{{0.25, true}, {0.0625, false}} {
		s := smallSetup()
		s.Model.Streams.FootprintMiB = tc.footprintMiB
		s.Experiments.StreamCounts = []int{1}
		s.Experiments.StackCounts = []int{1}
		fits := float64(s.Model.Streams.Count)*tc.footprintMiB <= s.Model.LLC.SizeMiB
		if fits == tc.full {
			t.Fatalf("footprint %g MiB: case assumes full=%v", tc.footprintMiB, tc.full)
		}
		rows, err := RunTable4(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		res := table4Layout(s, TimingClosedForms(s), rows)
		label := fmt.Sprint(res.Tables[0].Rows[2][0])
		want := "full LLC-miss overhead"
		if !tc.full {
			want = fmt.Sprintf("LLC-resident overhead (not a full miss: %.1f%% hits)", 100*float64(s.Model.Streams.Passes-1)/float64(s.Model.Streams.Passes))
		}
		if label != want {
			t.Errorf("footprint %g MiB: label %q; want %q", tc.footprintMiB, label, want)
		}
	}
}
