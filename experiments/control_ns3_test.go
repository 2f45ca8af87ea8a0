package experiments

import (
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/netsim"
)

// Without ns-3 the control block still lays out, with a row that says
// skipped and how to get ns-3.
func TestNS3TableSkipped(t *testing.T) {
	o := PilotDefaults(run.TierQuick, 1)
	n := &NS3Run{Skipped: "skipped: " + netsim.ErrNoNS3.Error()}
	syn := &DelayRun{}
	syn.Result.LowBitSteps, syn.Result.LatchOps = 0.5, 12
	tab := o.ns3Table(n, syn)
	if len(tab.Rows) != 2 {
		t.Fatalf("%d rows; want synthetic and ns-3", len(tab.Rows))
	}
	if got := tab.Rows[1][1]; !strings.HasPrefix(got, "skipped") || !strings.Contains(got, "libns3-dev") {
		t.Errorf("ns-3 row says %q; want skipped naming libns3-dev", got)
	}
	if tab.Rows[0][3] != "50.00" || tab.Rows[0][4] != "12" {
		t.Errorf("synthetic row %v", tab.Rows[0])
	}
	if figs, err := o.ns3Figures(n); err != nil || len(figs) != 0 {
		t.Errorf("figures of a skipped run: %d, %v", len(figs), err)
	}
}
