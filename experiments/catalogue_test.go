package experiments

import (
	"context"
	"slices"
	"testing"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/report"
)

// claimKeys are the claims' sections and names, in order.
func claimKeys(cs []report.Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Section+" | "+c.Name)
	}
	return out
}

// catalogueMatches checks that claims laid out from results are the
// block's declared claim list (run.Block.Claims): the same sections and
// names in the same order, so that the rows a failed block leaves in the
// ledger as not run are the rows a run gives.
func catalogueMatches(t *testing.T, block string, cfg run.Config, got []report.Claim) {
	t.Helper()
	bs, err := run.Select([]string{block})
	if err != nil {
		t.Fatal(err)
	}
	if want := claimKeys(bs[0].Claims(cfg)); !slices.Equal(claimKeys(got), want) {
		t.Errorf("%s: laid-out claims\n%q\ndiffer from the block's claim list\n%q", block, claimKeys(got), want)
	}
}

// TestEveryBlockListsItsClaims: every registered block but netcheck (which
// checks no claim of the paper) declares its claims, each with a section,
// name, paper value and criterion, names unique in the block, in every
// tier.
func TestEveryBlockListsItsClaims(t *testing.T) {
	for _, tier := range []run.Tier{run.TierQuick, run.TierStandard, run.TierFull} {
		cfg := run.Config{Tier: tier, Seed: 1}
		for _, b := range run.Blocks() {
			cs := b.Claims(cfg)
			if (len(cs) == 0) != (b.Name == "netcheck") {
				t.Errorf("%s (%v): %d claims declared", b.Name, tier, len(cs))
			}
			seen := map[string]bool{}
			for _, c := range cs {
				if c.Section == "" || c.Name == "" || c.Paper == "" || c.Criterion == "" || seen[c.Name] {
					t.Errorf("%s (%v): claim %+v incomplete or repeated", b.Name, tier, c)
				}
				seen[c.Name] = true
			}
		}
	}
}

// TestLedgerMatchesClaimLists runs the cheap blocks through the framework
// and checks their ledger rows against their declared claims.
func TestLedgerMatchesClaimLists(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the payload, functional and collective blocks")
	}
	bs, err := run.Select([]string{"payload", "functional", "collective"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := run.Config{Seed: 1}
	outs, err := run.Run(context.Background(), bs, cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		catalogueMatches(t, o.Block.Name, cfg, o.Result.Claims)
		for _, c := range o.Result.Claims {
			if c.Verdict != report.VerdictHolds {
				t.Errorf("%s: %s: %s (%s)", o.Block.Name, c.Name, c.Verdict, c.Ours)
			}
		}
	}
}
