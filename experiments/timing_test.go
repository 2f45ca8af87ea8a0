package experiments

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/timing"
)

// smallSetup shrinks the model (0.25 MiB per stream against a 1 MiB LLC,
// the same 2x oversubscription as the paper's anchor) so the test is fast.
func smallSetup() timing.Setup {
	s := timing.DefaultSetup()
	s.Model.Streams.FootprintMiB = 0.25
	s.Model.LLC.SizeMiB = 1
	s.Experiments = timing.QuickExperiments()
	s.Experiments.DelaysMS = []float64{0, 0.05}
	s.Experiments.StepMS = 10
	return s
}

func TestTimingRegistered(t *testing.T) {
	for _, b := range Blocks() {
		if b.Name == "timing" {
			if b.Order != 20 {
				t.Errorf("timing block Order = %d; want 20", b.Order)
			}
			return
		}
	}
	t.Fatal("timing block not registered")
}

// TestTimingTable4 checks the table's shape and that each measured cell
// agrees with the closed form for the regime the row is in.
func TestTimingTable4(t *testing.T) {
	s := smallSetup()
	res, err := TimingTable4(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	tab := res.Tables[0]
	if len(tab.Rows) != len(paperTable4) {
		t.Fatalf("%d rows; want %d", len(tab.Rows), len(paperTable4))
	}
	if !strings.HasPrefix(tab.Columns[3], "paper") || tab.Columns[2] != "measured %" {
		t.Errorf("columns %q: want measured beside a paper column", tab.Columns)
	}
	m := s.Model
	closed := 100 * float64(m.PipelineLatency()) / (1000*(m.LLC.HitLatencyNS+m.Memory.LatencyNS) + m.LinkInterval())
	full := tab.Rows[2][2]
	v, err := strconv.ParseFloat(full, 64)
	if err != nil {
		t.Fatalf("full-LLC-miss cell %q: %v", full, err)
	}
	// Latency-bound and all misses: within 1% (relative) of the closed form.
	if v < closed*0.99 || v > closed*1.01 {
		t.Errorf("full LLC miss measured %v%%; want about %.3f%%", v, closed)
	}
	if got := tab.Rows[4][2]; !strings.HasPrefix(got, "hidden–") {
		t.Errorf("congested scale-out %q; want hidden at N=1, exposed when split", got)
	}
	if n := len(res.Tables[1].Rows); n != 2+len(s.Experiments.StreamCounts)+2*len(s.Experiments.StackCounts) {
		t.Errorf("%d detail rows", n)
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
