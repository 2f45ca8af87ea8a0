package experiments

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/experiments/run"
	"github.com/neuronfabric/nfabric/report"
)

// figResult is a synthetic unit's result.
type figResult struct {
	Key   string    `json:"key"`
	Value float64   `json:"value"`
	Rows  []float64 `json:"rows"`
}

// brokenBlock is a block of two units whose second fails.
func brokenBlock() run.Block {
	return run.NewBlock(run.Spec[figResult]{
		Name: "broken", Title: "synthetic broken", Order: 1,
		Units: func(run.Config) ([]run.Unit[figResult], error) {
			ok := func(context.Context, run.Config) (figResult, error) { return figResult{Key: "u0"}, nil }
			fail := func(context.Context, run.Config) (figResult, error) { return figResult{}, errors.New("boom") }
			return []run.Unit[figResult]{{Key: "u0", Run: ok}, {Key: "u1", Run: fail}}, nil
		},
		Layout: func(run.Config, []figResult) (*report.Result, error) { return &report.Result{}, nil },
	})
}

// figureBlock is a block of one unit whose layout draws every figure kind
// the blocks use: curves with ± bands, bars on a log axis and a labelled
// scatter with error bars.
func figureBlock() run.Block {
	return run.NewBlock(run.Spec[figResult]{
		Name: "figures", Title: "synthetic figures", Order: 2,
		Units: func(run.Config) ([]run.Unit[figResult], error) {
			return []run.Unit[figResult]{{Key: "u0", Run: func(context.Context, run.Config) (figResult, error) {
				return figResult{Key: "u0", Value: 0.5, Rows: []float64{70, 78, 81}}, nil
			}}}, nil
		},
		Layout: func(_ run.Config, rs []figResult) (*report.Result, error) {
			ys := rs[0].Rows
			curve, err := report.LinePlot{Title: "curves", XLabel: "epoch", YLabel: "accuracy (%)",
				Series: []report.Series{{Name: "a", X: []float64{1, 2, 3}, Y: ys, Err: []float64{1, 0.5, 0.4}}}}.Figure("curves")
			if err != nil {
				return nil, err
			}
			bars, err := report.BarPlot{Title: "bars", XLabel: "time (ms)", LogX: true, Groups: []string{"g"},
				Bars: []report.Bar{{Label: "slow", Value: 436, Text: "436 ms"}, {Label: "fast", Value: 2.87, Text: "2.87 ms"}}}.Figure("bars")
			if err != nil {
				return nil, err
			}
			pts, err := report.ScatterPlot{Title: "points", XLabel: "traffic", YLabel: "accuracy (%)", LogX: true,
				Groups: []report.PointGroup{{Name: "study", Points: []report.Point{{Label: "FP32", X: 1, Y: ys[2], YErr: 0.4}, {Label: "G-Binary", X: 1.0 / 32, Y: ys[1], YErr: 0.5}}}}}.Figure("points")
			if err != nil {
				return nil, err
			}
			t := report.Table{Title: "paper comparison", Columns: []string{"row", "measured time", "paper time"},
				Rows: [][]string{{"differs", "2.87 ms", "2.77 ms"}, {"matches", "4.38 ms", "4.38 ms"}}}
			return &report.Result{Tables: []report.Table{t}, Figures: []report.Figure{curve, bars, pts}}, nil
		},
	})
}

// chromiumArgs are the flags that keep headless Chromium off the network
// and out of the user's profile.
func chromiumArgs(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}
}

// TestIndexHTMLInChromium writes index.html for a small run (the payload
// and collective blocks, a block with every figure kind and a failing
// block), loads it in headless Chromium and checks that it loads without
// console errors, that the DOM holds one non-empty <svg> per figure of
// the report and each block's status, and writes a screenshot
// ($NFABRIC_SCREENSHOT if set, else a temporary file, logged).
func TestIndexHTMLInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("headless Chromium not found: install the Debian package chromium (apt-get install chromium) to check index.html in a browser")
	}
	real, err := run.Select([]string{"payload", "collective"})
	if err != nil {
		t.Fatal(err)
	}
	bs := append(real, figureBlock(), brokenBlock())
	dir := t.TempDir()
	outs, err := run.Run(context.Background(), bs, run.Config{Seed: 1}, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("run: %v; want the broken block to fail", err)
	}
	figures := 0
	for _, o := range outs {
		if o.Result != nil {
			figures += len(o.Result.Figures)
		}
	}
	if figures < 4 {
		t.Fatalf("the run drew %d figures; want the collective block's and the three synthetic ones", figures)
	}
	page := "file://" + filepath.Join(dir, "index.html")

	dom, logs := runChromium(t, browser, "--dump-dom", page)
	if n := strings.Count(dom, "<svg"); n != figures {
		t.Errorf("the loaded DOM holds %d <svg> elements; the report has %d figures", n, figures)
	}
	svgs := regexp.MustCompile(`(?s)<svg\b.*?</svg>`).FindAllString(dom, -1)
	for i, s := range svgs {
		if !strings.Contains(s, "<path") || !strings.Contains(s, "<text") {
			t.Errorf("figure %d's SVG has no drawing or no text (%d bytes)", i, len(s))
		}
	}
	for _, o := range outs {
		st, _ := run.BlockStatus(o)
		if want := `data-block="` + o.Block.Name + `" data-status="` + st + `"`; !strings.Contains(dom, want) {
			t.Errorf("DOM lacks the section %s", want)
		}
	}
	if !strings.Contains(dom, `class="differ"`) || !strings.Contains(dom, `class="match"`) {
		t.Error("DOM marks no differing or matching cell")
	}
	for _, ref := range []string{"<script", "<link", " src=", "@import"} {
		if strings.Contains(dom, ref) {
			t.Errorf("DOM holds %q: the page must load nothing", ref)
		}
	}
	for _, line := range consoleLines(logs) {
		t.Errorf("browser console: %s", line)
	}
	// The oracle itself: a page that logs an error must show in the log.
	bad := filepath.Join(t.TempDir(), "bad.html")
	if err := os.WriteFile(bad, []byte(`<!DOCTYPE html><p>x</p><script>console.error("probe"); undefinedProbe();</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, badLogs := runChromium(t, browser, "--dump-dom", "file://"+bad); len(consoleLines(badLogs)) < 2 {
		t.Errorf("the console check does not see a page's errors; log:\n%s", badLogs)
	}

	shot := os.Getenv("NFABRIC_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "index.png")
	}
	runChromium(t, browser, "--screenshot="+shot, "--window-size=1280,2400", page)
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 10_000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot of index.html: %s", shot)
}

// consoleLines are the log lines of messages a page wrote to the console
// (Chromium logs them as CONSOLE at --v=0) or uncaught errors.
func consoleLines(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			out = append(out, line)
		}
	}
	return out
}

// runChromium runs headless Chromium on a page with a fresh profile and
// returns its stdout and stderr (the console log).
func runChromium(t *testing.T, browser string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append(chromiumArgs(t.TempDir()), args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}
