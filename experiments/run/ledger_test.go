package run

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/report"
)

// TestLedgerOpensTheReport runs two synthetic blocks and checks that the
// claims ledger is the first table of REPORT.md and index.html, that its
// rows come in block order with the framework's defaults filled in (block,
// tier, convergence), that each row links to its block, and that
// ledger.json carries the same rows.
func TestLedgerOpensTheReport(t *testing.T) {
	bs := []Block{synthBlock("alpha", 3, -1), synthBlock("gamma", 2, -1)}
	out := t.TempDir()
	if _, err := Run(context.Background(), bs, Config{Seed: 1}, out, nil); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	// alpha's units have values 1/3, 1/4, 1/5 (sum 0.7833), gamma's 1/3, 1/4.
	s := string(md)
	ledger := strings.Index(s, "## Claims ledger")
	blocks := strings.Index(s, "| block | evidence | status | files |")
	firstTable := strings.Index(s, "\n|")
	if ledger < 0 || blocks < 0 || ledger > blocks || firstTable < ledger {
		t.Fatalf("the ledger is not the first table of REPORT.md:\n%s", s)
	}
	for _, row := range []string{
		"| [alpha](alpha.md) | Sec. 0 | alpha sums its units | - | 0.7833 | - | sum &gt; 0 | holds | quick | n/a |",
		"| [gamma](gamma.md) | Sec. 0 | gamma sums its units | - | 0.5833 | - | sum &gt; 0 | holds | quick | n/a |",
	} {
		if !strings.Contains(s[ledger:blocks], row) {
			t.Errorf("REPORT.md ledger lacks row\n%s\nin\n%s", row, s[ledger:blocks])
		}
	}
	if strings.Index(s, "[alpha](alpha.md) | Sec. 0") > strings.Index(s, "[gamma](gamma.md) | Sec. 0") {
		t.Error("ledger rows are not in block order")
	}
	if !strings.Contains(s, "2 claims: 2 hold.") {
		t.Errorf("REPORT.md lacks the ledger summary")
	}

	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	h := string(page)
	li, ti := strings.Index(h, `<section id="ledger">`), strings.Index(h, "<table")
	if li < 0 || ti < li || strings.Index(h, `<nav>`) < li {
		t.Fatal("the ledger is not the first table of index.html")
	}
	if !strings.Contains(h, `<td><a href="#block-alpha">alpha</a></td>`) || !strings.Contains(h, `id="block-alpha"`) {
		t.Error("index.html ledger rows do not link to their block's section")
	}

	js, err := os.ReadFile(filepath.Join(out, "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Claims []report.Claim }
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Claims) != 2 || got.Claims[0].Block != "alpha" || got.Claims[1].Block != "gamma" ||
		got.Claims[0].Ours != "0.7833" || got.Claims[0].Tier != "quick" || got.Claims[0].Convergence != "n/a" {
		t.Errorf("ledger.json rows: %+v", got.Claims)
	}
	// Each block's own JSON carries its rows too.
	alpha, err := os.ReadFile(filepath.Join(out, "alpha.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(alpha, []byte(`"claim": "alpha sums its units"`)) {
		t.Error("alpha.json lacks its claims")
	}
}

// TestLedgerSummary counts verdicts by hand-made rows.
func TestLedgerSummary(t *testing.T) {
	rows := func(vs ...string) []report.Claim {
		var cs []report.Claim
		for _, v := range vs {
			cs = append(cs, report.Claim{Verdict: v})
		}
		return cs
	}
	for _, tt := range []struct {
		in   []report.Claim
		want string
	}{
		{nil, "0 claims."},
		{rows(report.VerdictHolds), "1 claim: 1 holds."},
		{rows(report.VerdictDoesNotHold, report.VerdictHolds, report.VerdictHolds, report.VerdictInconclusive, report.VerdictDoesNotHold),
			"5 claims: 2 hold, 2 do not hold, 1 inconclusive."},
		{rows(report.VerdictIndicative, report.VerdictSkipped, "odd"), "3 claims: 1 indicative (not converged), 1 skipped, 1 odd."},
	} {
		if got := report.LedgerSummary(tt.in); got != tt.want {
			t.Errorf("LedgerSummary(%v) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// claimedBlock is synthBlock with its claim list declared: two claims, of
// which the layout judges both.
func claimedBlock(name string, n, fail int) Block {
	b := synthBlock(name, n, fail)
	b.claims = func(cfg Config) []report.Claim {
		return []report.Claim{
			{Section: "Sec. 0", Name: name + " sums its units", Paper: "-", Criterion: "sum > 0"},
			{Section: "Sec. 0", Name: name + " has units", Paper: "-", Criterion: "n > 0"},
		}
	}
	return b
}

// TestFailedBlockClaimsNotRun: a block whose unit fails contributes each
// of its declared claims to the ledger as not run with the failure as the
// reason, in a single run and in merged shards alike, and the count line
// counts them; before, its claims vanished and the ledger read rosier.
func TestFailedBlockClaimsNotRun(t *testing.T) {
	bs := []Block{synthBlock("alpha", 2, -1), claimedBlock("beta", 3, 1)}
	lookup := func([]string) ([]Block, error) { return bs, nil }
	single := t.TempDir()
	if _, err := Run(context.Background(), bs, Config{Seed: 1}, single, nil); err == nil || !strings.Contains(err.Error(), "beta") {
		t.Fatalf("run with a failing block: %v", err)
	}
	shards := t.TempDir()
	for i := range 2 {
		if _, err := RunShard(context.Background(), bs, Config{Seed: 1}, Shard{i, 2}, shards, nil); err != nil {
			t.Fatal(err)
		}
	}
	merged := t.TempDir()
	if _, err := merge([]string{shards}, merged, nil, lookup); err == nil {
		t.Fatal("merge of a failing block succeeded")
	}
	for _, dir := range []string{single, merged} {
		raw, err := os.ReadFile(filepath.Join(dir, "ledger.json"))
		if err != nil {
			t.Fatal(err)
		}
		var l struct{ Claims []report.Claim }
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Claims) != 3 {
			t.Fatalf("%s: %d ledger rows, want alpha's 1 and beta's 2: %+v", dir, len(l.Claims), l.Claims)
		}
		for _, c := range l.Claims[1:] {
			if c.Block != "beta" || c.Verdict != report.VerdictNotRun || c.Tier != "quick" ||
				c.Ours != "not run: the block failed: seed1/u1: boom" {
				t.Errorf("%s: failed block's row %+v", dir, c)
			}
		}
		md, _ := os.ReadFile(filepath.Join(dir, "REPORT.md"))
		if !strings.Contains(string(md), "3 claims: 1 holds, 2 not run.") {
			t.Errorf("%s: REPORT.md's count line does not count the claims not run", dir)
		}
	}
}
