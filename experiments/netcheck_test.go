package experiments

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/collective"
	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/netsim"
	"github.com/neuronfabric/nfabric/report"
)

// TestNetCheck runs the block's units: every ASTRA-sim case must hold (the
// values themselves are checked against ASTRA-sim's in collective), and
// the ns-3 ring either ran, carrying the closed-form payload 2(W-1)S, or
// says skipped with the package to install.
func TestNetCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: the ns-3 ring check takes tens of seconds (-short)")
	}
	units, err := netcheckUnits(run.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var us []NetCheckUnit
	for _, u := range units {
		r, err := u.Run(context.Background(), run.Config{Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", u.Key, err)
		}
		us = append(us, r)
	}
	res := NetCheckLayout(us)
	if res.Passed != 11 || res.Failed != 0 {
		t.Errorf("ASTRA-sim cases: %d passed, %d failed; want 11, 0", res.Passed, res.Failed)
	}
	ring := us[1]
	if netsim.Available() != nil {
		if !strings.Contains(ring.Skipped, "libns3-dev") {
			t.Errorf("without ns-3 the ring unit must say skipped naming libns3-dev: %+v", ring)
		}
		return
	}
	rc := ring.Ring
	if rc == nil {
		t.Fatalf("ring unit: %+v", ring)
	}
	if want := 2 * int64(rc.Workers-1) * rc.Bytes; rc.PayloadBytes != want || rc.WireBytes < want || rc.NS3S <= 0 {
		t.Errorf("ring check %+v; want payload %d", rc, want)
	}
	if !strings.Contains(res.Text(), "ns-3 (TCP over one switch)") {
		t.Errorf("report:\n%s", res.Text())
	}
}

// TestNetCheckPartialWithoutNS3: with the ns-3 ring skipped the block's
// status is partial and names the install command; it reads ok only when
// both halves ran.
func TestNetCheckPartialWithoutNS3(t *testing.T) {
	astra, err := collective.AstraRegressions()
	if err != nil {
		t.Fatal(err)
	}
	us := []NetCheckUnit{{Astra: astra}, {Skipped: "skipped: " + netsim.ErrNoNS3.Error()}}
	res := NetCheckLayout(us)
	run.SetStatus(res, us)
	if res.Status != report.StatusPartial || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "apt-get install libns3-dev") {
		t.Errorf("status %q, skipped %q; want partial naming apt-get install libns3-dev", res.Status, res.Skipped)
	}
	us[1] = NetCheckUnit{Ring: &netsim.RingCheck{Workers: 8, Bytes: 1 << 20, NS3S: 1e-3}}
	res = NetCheckLayout(us)
	run.SetStatus(res, us)
	if res.Status != report.StatusOK {
		t.Errorf("both halves ran: status %q (%q)", res.Status, res.Skipped)
	}
}

// TestNetCheckSameLink: the netcheck's same-link table prices
// rt_template's link through both models of collective.Model.
func TestNetCheckSameLink(t *testing.T) {
	units, err := netcheckUnits(run.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	astra, err := units[0].Run(context.Background(), run.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// rt_template's link: ASTRA-sim prints 117,780 cycles; the alpha-beta
	// ring on 50 GiB/s and 500 ns is 14 x 500 ns + 1.75 x 2^20 B /
	// (50 x 2^30 B/s) = 7000 + 34180.0 ns = 41180 ns.
	s := astra.SameLink
	if s == nil || s.Estimate.Cycles != collective.RTTemplateCycles || math.Abs(s.AlphaBetaS-(7e-6+1.75*(1<<20)/(50.0*(1<<30)))) > 1e-15 {
		t.Errorf("same link %+v; want ASTRA-sim 117780 cycles and the ring 41.18 us", s)
	}
	if text := NetCheckLayout([]NetCheckUnit{astra}).Text(); !strings.Contains(text, "One link, two models") || !strings.Contains(text, "GiB/s = 2^30 bytes/s") {
		t.Error("the same-link table, or its units line, is missing")
	}
}
