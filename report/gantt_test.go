package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestGanttLegendBelowBars: every legend swatch lies below the lowest
// bar, so no legend hides a bar or a lane label; bars that touch within
// half a pixel merge, so a million slivers draw as a few rectangles.
func TestGanttLegendBelowBars(t *testing.T) {
	g := Gantt{Title: "t", XLabel: "ms", Lanes: []string{"a", "b"}, Classes: []string{"x", "y", "z", "w"},
		Bars: []GanttBar{{0, 0, 0, 1}, {1, 1, 0.5, 2}, {1, 2, 2, 3}}}
	for i := range 100000 {
		g.Bars = append(g.Bars, GanttBar{Lane: 0, Class: 3, Start: 1 + float64(i)*1e-5, End: 1 + float64(i+1)*1e-5})
	}
	svg, err := g.SVG()
	if err != nil {
		t.Fatal(err)
	}
	rects := regexp.MustCompile(`<rect x="[0-9.]+" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)" fill="#`).FindAllStringSubmatch(string(svg), -1)
	var barBottom, legendTop = 0.0, math.Inf(1)
	bars := 0
	for _, r := range rects {
		y, _ := strconv.ParseFloat(r[1], 64)
		h, _ := strconv.ParseFloat(r[3], 64)
		if h == 12 { // a legend swatch
			legendTop = math.Min(legendTop, y)
			continue
		}
		if h != ganttLaneH { // not a lane background
			bars++
			barBottom = math.Max(barBottom, y+h)
		}
	}
	if !(legendTop > barBottom) {
		t.Errorf("legend at y %v, bars down to %v: the legend overlaps the plot", legendTop, barBottom)
	}
	if bars > 10 {
		t.Errorf("%d bar rectangles for 4 runs of bars; slivers were not merged", bars)
	}
	// The legend names the classes drawn, each in its bars' colour.
	g.Classes = append(g.Classes, "unused")
	g.Bars = append(g.Bars, GanttBar{Lane: 1, Class: 4, Start: 2, End: 2})
	svg, _ = g.SVG()
	for i, c := range g.Classes {
		swatch := `fill="` + hexColor(i) + `"/><text x="[0-9.]+" y="[0-9.]+">` + c + `</text>`
		if got := regexp.MustCompile(swatch).Match(svg); got != (c != "unused") {
			t.Errorf("legend entry %q in its colour: %v", c, got)
		}
	}
	for _, bad := range []Gantt{
		{Lanes: []string{"a"}, Classes: []string{"x"}, Bars: []GanttBar{{1, 0, 0, 1}}},
		{Lanes: []string{"a"}, Classes: []string{"x"}, Bars: []GanttBar{{0, 0, 2, 1}}},
		{Lanes: []string{"a"}, Classes: []string{"x"}, Bars: []GanttBar{{0, 0, 0, math.NaN()}}},
		{Classes: []string{"x"}},
	} {
		if _, err := bad.SVG(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestWriteTraceEvents(t *testing.T) {
	var b bytes.Buffer
	evs := []TraceEvent{{Process: "P", Thread: "t", Name: "a", StartUS: 0, DurUS: 2, Args: map[string]any{"k": 1}},
		{Process: "P", Thread: "u", Name: "b", StartUS: 1, DurUS: 1}, {Process: "Q", Thread: "t", Name: "c", StartUS: 3, DurUS: 0.5}}
	if err := WriteTraceEvents(&b, evs, map[string]any{"m": "x"}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OtherData   map[string]any `json:"otherData"`
		TraceEvents []struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Pid  int     `json:"pid"`
			Tid  int     `json:"tid"`
			Ts   float64 `json:"ts"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var xs []string
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			xs = append(xs, e.Name+strconv.Itoa(e.Pid)+strconv.Itoa(e.Tid))
		}
	}
	if strings.Join(xs, ",") != "a11,b12,c23" || doc.OtherData["m"] != "x" {
		t.Errorf("events %v, meta %v", xs, doc.OtherData)
	}
	if err := WriteTraceEvents(&b, []TraceEvent{{DurUS: -1}}, nil); err == nil {
		t.Error("a negative duration was written")
	}
}

// TestPageLegendOnlyWithPaperColumns: the "paper column / differs from
// the paper" legend appears only when a table has a paper column.
func TestPageLegendOnlyWithPaperColumns(t *testing.T) {
	for _, c := range []struct {
		cols []string
		want bool
	}{{[]string{"step", "time"}, false}, {[]string{"step", "time", "paper time"}, true}} {
		tb := Table{Name: "t", Columns: c.cols}
		page := Page{Title: "p", Blocks: []PageBlock{{Name: "b", Title: "b", Status: StatusOK, Result: &Result{Block: "b", Tables: []Table{tb}}}}}
		html, err := page.HTML()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(html), "differs from the paper</span>"); got != c.want {
			t.Errorf("columns %v: legend shown %v; want %v", c.cols, got, c.want)
		}
	}
}

// TestWriteFilesAllOrNothing: figures are written before the Markdown
// that links them, and a write that fails part-way (here the JSON, whose
// name is taken by a directory) or a cancelled context leaves none of the
// call's files behind.
func TestWriteFilesAllOrNothing(t *testing.T) {
	r := &Result{Block: "b", Title: "t", Figures: []Figure{{Name: "f", SVG: []byte("<svg/>")}}}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "b.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.WriteFiles(dir); err == nil {
		t.Fatal("wrote over a directory")
	}
	for _, f := range []string{"f.svg", "b.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s left behind by a failed write", f)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d2 := t.TempDir()
	if _, err := r.WriteFilesContext(ctx, d2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v", err)
	}
	if es, _ := os.ReadDir(d2); len(es) != 0 {
		t.Errorf("cancelled write left %d files", len(es))
	}
	paths, err := r.WriteFiles(t.TempDir())
	if err != nil || len(paths) != 3 || !strings.HasSuffix(paths[0], "f.svg") || !strings.HasSuffix(paths[2], "b.json") {
		t.Errorf("order %v (%v); want the SVG first and the JSON last", paths, err)
	}
}

// TestPageSoleBlock: a page that is one block of its own title (the
// what-if's) has no contents list and no second heading, its status
// beside the title; a page of two blocks keeps both.
func TestPageSoleBlock(t *testing.T) {
	res := &Result{Block: "w", Title: "What if", Summary: []string{"one summary"}}
	one := Page{Title: "What if", Blocks: []PageBlock{{Name: "w", Title: "What if", Status: StatusOK, Result: res}}}
	two := Page{Title: "Report", Blocks: []PageBlock{one.Blocks[0], {Name: "v", Title: "Other", Status: StatusSkipped}}}
	for _, c := range []struct {
		page           Page
		contents, h2s  int
		titleWithState bool
	}{{one, 0, 0, true}, {two, 1, 3, false}} {
		b, err := c.page.HTML()
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if got := strings.Count(s, `id="contents"`); got != c.contents {
			t.Errorf("%s: %d contents lists; want %d", c.page.Title, got, c.contents)
		}
		if got := strings.Count(s, "<h2"); got != c.h2s {
			t.Errorf("%s: %d h2 headings; want %d", c.page.Title, got, c.h2s)
		}
		if got := strings.Contains(s, `<h1>What if<span class="status status-ok">`); got != c.titleWithState {
			t.Errorf("%s: status beside the title %v", c.page.Title, got)
		}
		if strings.Count(s, "one summary") != 1 {
			t.Errorf("%s: the summary appears %d times", c.page.Title, strings.Count(s, "one summary"))
		}
	}
}
