package report

import (
	"strings"
	"testing"
)

func TestCompareCells(t *testing.T) {
	for _, c := range []struct {
		ours, paper string
		want        CellComparison
	}{
		{"0.0313", "0.0313", CellsMatch},
		{"1", "1.0000", CellsMatch}, // numbers, not strings
		{"2.87 ms", "2.77 ms", CellsDiffer},
		{"2.77 ms", "2.77 ms", CellsMatch},
		{"2.77 µs", "2.77 ms", CellsDiffer}, // units differ: compared as text
		{"1.61%", "1.67%", CellsDiffer},
		{"60.12 ± 0.40", "62.33 ± 0.31", CellsDiffer},
		{"62.33 ± 0.31", "62.33 ± 0.31", CellsMatch},
		{"0.9956", "-", CellsNotCompared},
		{"", "0.5", CellsNotCompared},
		{"yes", "yes", CellsMatch},
		{"87.3 ms – 498 ms", "87.31–228.00 ms", CellsDiffer},
	} {
		if got := CompareCells(c.ours, c.paper); got != c.want {
			t.Errorf("CompareCells(%q, %q) = %d; want %d", c.ours, c.paper, got, c.want)
		}
	}
}

func TestComparedColumns(t *testing.T) {
	for _, c := range []struct {
		name string
		t    Table
		want [][2]int
	}{
		{"measured X / paper X", Table{Columns: []string{"path", "measured time", "paper time"}}, [][2]int{{1, 2}}},
		{"X / paper X", Table{Columns: []string{"stages", "registers", "paper registers"}}, [][2]int{{1, 2}}},
		{"measured / paper", Table{Columns: []string{"metric", "measured", "paper"}}, [][2]int{{1, 2}}},
		{"prose paper column", Table{Columns: []string{"delay", "steps", "paper"}}, nil},
		{"explicit", Table{Columns: []string{"acc", "paper CIFAR acc", "paper acc"}, Compare: []ColumnPair{{"acc", "paper CIFAR acc"}, {"nope", "paper acc"}}}, [][2]int{{0, 1}}},
	} {
		got := ComparedColumns(c.t)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: %v; want %v", c.name, got, c.want)
			}
		}
	}
}

func TestPageHTML(t *testing.T) {
	fig, err := LinePlot{Title: "curve <1>", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1, 2}}}}.Figure("f1")
	if err != nil {
		t.Fatal(err)
	}
	evil := Figure{Name: "evil", Title: "evil", SVG: []byte(`<svg onload="alert(1)"></svg>`)}
	res := &Result{Block: "b", Title: "Block <b>", Summary: []string{"sum & more"},
		Tables: []Table{{Title: "T", Columns: []string{"x", "measured time", "paper time"},
			Rows:  [][]string{{"<script>alert(1)</script>", "2.87 ms", "2.77 ms"}, {"y", "4.38 ms", "4.38 ms"}, {"z", "1 ms"}},
			Notes: []string{"note <i>"}}},
		Figures: []Figure{fig, evil}}
	page, err := Page{Title: "R", Intro: []string{"intro"}, Blocks: []PageBlock{
		{Name: "b", Title: "Block <b>", Status: "ok", Result: res, Files: []string{"b.md"}},
		{Name: "c", Title: "Broken", Status: "failed", Detail: "unit x: boom <!>"},
	}}.HTML()
	if err != nil {
		t.Fatal(err)
	}
	h := string(page)
	for _, want := range []string{
		`<a href="#block-b">Block &lt;b&gt;</a>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`<td class="differ" title="differs from the paper (paper time: 2.77 ms)">2.87 ms</td>`,
		`<td class="match" title="matches the paper (paper time)">4.38 ms</td>`,
		`<td>1 ms</td>`, // a short row: nothing to compare
		`1 cell(s) differ, 1 match`,
		`class="status status-failed">failed</span> <span class="detail">unit x: boom &lt;!&gt;</span>`,
		`note &lt;i&gt;`, `sum &amp; more`,
		`figure SVG holds an event handler; not inlined`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(h, "<svg"); n != 1 {
		t.Errorf("page inlines %d SVGs; want 1 (the plot, not the one with a handler)", n)
	}
	// The SVG namespaces are names, not requests; nothing else may point
	// off the page.
	bare := strings.NewReplacer(`"http://www.w3.org/2000/svg"`, "", `"http://www.w3.org/1999/xlink"`, "").Replace(h)
	for _, bad := range []string{"<script", "<?xml", "onload=", "http://", "https://", "<link"} {
		if strings.Contains(bare, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
}

// CompareCells is symmetric, a cell always matches itself (or is not
// compared), and no cell text makes it panic.
func FuzzCompareCells(f *testing.F) {
	for _, s := range [][2]string{{"1", "1.0000"}, {"2.87 ms", "2.77 ms"}, {"-", "x"}, {"1e", "1e5"}, {"+.", "-"}, {"62.33 ± 0.31", "62.33"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if CompareCells(a, b) != CompareCells(b, a) {
			t.Errorf("CompareCells(%q, %q) is not symmetric", a, b)
		}
		if c := CompareCells(a, a); c == CellsDiffer {
			t.Errorf("CompareCells(%q, itself) = differ", a)
		}
	})
}
