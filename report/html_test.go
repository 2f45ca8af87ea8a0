package report

import (
	"strings"
	"testing"
)

// TestCompareCells builds rows the way the blocks do (AddRow with floats,
// integers, Nums and strings) and checks each compared cell's class on
// the page: typed numbers compare by the number they show, text by text.
func TestCompareCells(t *testing.T) {
	for _, c := range []struct {
		ours, paper any
		want        string
	}{
		{0.0313, "0.0313", "match"},                             // text: FormatFloat prints 0.0313
		{1.0 / 32, Num{Value: 0.0313, Text: "0.0313"}, "match"}, // shown values: 0.03125 shows as 0.0313
		{1.0, Num{Value: 1, Text: "1.0000"}, "match"},           // numbers, not strings
		{1.0, "1.0000", "differ"},                               // an untyped paper cell compares as text
		{"1", "1.0000", "differ"},                               // two strings: text
		{3, Num{Value: 3, Text: "3.0"}, "match"},                // an integer shows itself
		{Num{Value: 2.87, Unit: " ms", Text: "2.87 ms"}, Num{Value: 2.77, Unit: " ms", Text: "2.77 ms"}, "differ"},
		{Num{Value: 2.77, Unit: " ms", Text: "2.77 ms"}, Num{Value: 2.77, Unit: " ms", Text: "2.770 ms"}, "match"},
		{Num{Value: 2.77, Unit: " µs", Text: "2.77 µs"}, Num{Value: 2.77, Unit: " ms", Text: "2.77 ms"}, "differ"}, // units differ: text
		{"2.77 ms", "2.77 ms", "match"},
		{"1.61%", "1.67%", "differ"},
		{"60.12 ± 0.40", "62.33 ± 0.31", "differ"},
		{"62.33 ± 0.31", "62.33 ± 0.31", "match"},
		{0.9956, "-", ""},
		{"", 0.5, ""},
		{"yes", "yes", "match"},
		{"87.3 ms – 498 ms", "87.31–228.00 ms", "differ"},
	} {
		tb := Table{Columns: []string{"x", "paper x"}}
		tb.AddRow(c.ours, c.paper)
		v := tableViewOf(tb, "t")
		if got := v.Rows[0][0].Class; got != c.want {
			t.Errorf("%#v against %#v: class %q; want %q", c.ours, c.paper, got, c.want)
		}
	}
}

// TestAppendRowsKeepsNumbers: rows moved with AppendRows keep the numbers
// they show, after rows written without AddRow (which have none).
func TestAppendRowsKeepsNumbers(t *testing.T) {
	a := Table{Columns: []string{"x", "paper x"}, Rows: [][]string{{"1", "1.0000"}}}
	b := Table{Columns: a.Columns}
	b.AddRow(1.0, Num{Value: 1, Text: "1.0000"})
	a.AppendRows(b)
	a.AddRow(2.0, Num{Value: 2, Text: "2.0"})
	v := tableViewOf(a, "t")
	for i, want := range []string{"differ", "match", "match"} {
		if got := v.Rows[i][0].Class; got != want {
			t.Errorf("row %d: class %q; want %q", i, got, want)
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

// compareCells is symmetric, a cell always matches itself (or is not
// compared), and no cell text or number makes it panic.
func FuzzCompareCells(f *testing.F) {
	for _, s := range [][2]string{{"1", "1.0000"}, {"2.87 ms", "2.77 ms"}, {"-", "x"}, {"1e", "1e5"}, {"+.", "-"}, {"62.33 ± 0.31", "62.33"}} {
		f.Add(s[0], s[1], 1.0, 1.0, true, false)
	}
	f.Fuzz(func(t *testing.T, a, b string, x, y float64, okA, okB bool) {
		na, nb := cellNum{ok: okA, value: x}, cellNum{ok: okB, value: y}
		if compareCells(a, b, na, nb) != compareCells(b, a, nb, na) {
			t.Errorf("compareCells(%q, %q, %v, %v) is not symmetric", a, b, na, nb)
		}
		if c := compareCells(a, a, na, na); c == cellsDiffer && x == x {
			t.Errorf("compareCells(%q, itself) = differ", a)
		}
	})
}
