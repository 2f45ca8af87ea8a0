package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/report"
)

// toolResult is a unit result that may say its unit was skipped.
type toolResult struct {
	Key     string `json:"key"`
	Skipped string `json:"skipped,omitempty"`
}

func (r toolResult) SkipReason() string { return r.Skipped }

// toolBlock has n units of which the first skip skip for a missing tool.
func toolBlock(name string, n, skip int) Block {
	return NewBlock(Spec[toolResult]{
		Name: name, Title: "tools " + name, Order: 1,
		Units: func(Config) ([]Unit[toolResult], error) {
			var us []Unit[toolResult]
			for i := range n {
				us = append(us, Unit[toolResult]{Key: fmt.Sprint("u", i), Run: func(context.Context, Config) (toolResult, error) {
					r := toolResult{Key: fmt.Sprint("u", i)}
					if i < skip {
						r.Skipped = "frob not found (install the Debian package frob)"
					}
					return r, nil
				}})
			}
			return us, nil
		},
		Layout: func(_ Config, rs []toolResult) (*report.Result, error) {
			return &report.Result{Tables: []report.Table{{Name: name, Columns: []string{"key"}}}}, nil
		},
	})
}

// TestBlockStatus: a block whose units all skipped says "skipped" and what
// to install in REPORT.md, its JSON and the progress lines; one with some
// skipped says "partial"; none, "ok": a part that did not run is never
// reported as ok.
func TestBlockStatus(t *testing.T) {
	for _, c := range []struct {
		skip int
		want string
	}{{3, report.StatusSkipped}, {1, report.StatusPartial}, {0, report.StatusOK}} {
		dir := t.TempDir()
		var progress strings.Builder
		b := toolBlock("tools", 3, c.skip)
		outs, err := Run(context.Background(), []Block{b}, Config{Seed: 1}, dir, &progress)
		if err != nil {
			t.Fatal(err)
		}
		if got := outs[0].Result.Status; got != c.want {
			t.Errorf("skip %d: status %q, want %q", c.skip, got, c.want)
		}
		md, _ := os.ReadFile(filepath.Join(dir, "REPORT.md"))
		row := ""
		for _, l := range strings.Split(string(md), "\n") {
			if strings.HasPrefix(l, "| tools |") {
				row = l
			}
		}
		if !strings.Contains(row, "| "+c.want) {
			t.Errorf("skip %d: REPORT.md row %q lacks status %q", c.skip, row, c.want)
		}
		if c.skip > 0 && !strings.Contains(row, "install the Debian package frob") {
			t.Errorf("skip %d: REPORT.md row %q does not say what to install", c.skip, row)
		}
		if !strings.Contains(progress.String(), "tools: "+c.want) {
			t.Errorf("skip %d: progress %q lacks %q", c.skip, progress.String(), c.want)
		}
		js, _ := os.ReadFile(filepath.Join(dir, "tools.json"))
		var got struct {
			Status  string   `json:"status"`
			Skipped []string `json:"skipped"`
		}
		json.Unmarshal(js, &got)
		if got.Status != c.want || (c.skip > 0) != (len(got.Skipped) == 1) {
			t.Errorf("skip %d: JSON status %q skipped %q", c.skip, got.Status, got.Skipped)
		}
	}
}

// TestFailedChecksFailTheRun: a block whose layout records failed checks
// says so on its progress line as in REPORT.md (it printed "ok" there), and
// FailedBlocks turns it into the run's error, so reproduce exits 1; a block
// with only passed checks is no failure.
func TestFailedChecksFailTheRun(t *testing.T) {
	checks := func(name string, failed int) Block {
		return NewBlock(Spec[toolResult]{
			Name: name, Title: "checks " + name, Order: 1,
			Units: func(Config) ([]Unit[toolResult], error) {
				return []Unit[toolResult]{{Key: "u", Run: func(context.Context, Config) (toolResult, error) {
					return toolResult{Key: "u"}, nil
				}}}, nil
			},
			Layout: func(_ Config, rs []toolResult) (*report.Result, error) {
				return &report.Result{Passed: 2, Failed: failed}, nil
			},
		})
	}
	dir := t.TempDir()
	var progress strings.Builder
	outs, err := Run(context.Background(), []Block{checks("good", 0), checks("bad", 3)}, Config{Seed: 1, Jobs: 1}, dir, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "bad: 2 passed, 3 failed, done in") {
		t.Errorf("progress does not report the failed checks:\n%s", progress.String())
	}
	if !strings.Contains(progress.String(), "good: ok, done in") {
		t.Errorf("progress does not report the passing block as ok:\n%s", progress.String())
	}
	err = FailedBlocks(outs)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 blocks failed: bad (2 passed, 3 failed)") {
		t.Errorf("FailedBlocks = %v, want the bad block named", err)
	}
	if err := FailedBlocks(outs[:1]); err != nil {
		t.Errorf("FailedBlocks(good) = %v, want nil", err)
	}
}
