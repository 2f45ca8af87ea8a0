package experiments

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
	return newBlock(Spec[toolResult]{
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
// skipped says "partial"; none, "ok" (issue 15, item 5).
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
