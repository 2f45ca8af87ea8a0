package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
)

// PageBlock is one evidence block on the HTML page.
type PageBlock struct {
	Name, Title string
	// Status is the block's status word as REPORT.md prints it ("ok",
	// "partial", "skipped", "failed"); the page styles it by the word.
	Status string
	// Detail says more about the status: the error of a failed block, the
	// check counts, what a skipped block needs.
	Detail string
	// Result is the block's report; nil when it produced none.
	Result *Result
	// Files are the block's own files (NAME.md, NAME.json), linked
	// relative to the page.
	Files []string
}

// Page is the whole report as one self-contained HTML page: a contents
// list by block with each block's status, then each block's summary,
// tables (differences from the paper's columns marked), notes and figures
// inlined as SVG. It needs no network: no scripts, fonts or style sheets
// are loaded.
type Page struct {
	Title string
	// Intro holds paragraphs printed under the title (the configuration).
	Intro []string
	// Ledger is the claims ledger, the page's first table; each row links
	// to its block's section.
	Ledger []Claim
	Blocks []PageBlock
}

// HTML renders the page. Every string is escaped by html/template; figure
// SVGs are inlined only if they are plain SVG from this package's
// renderers (no scripts, event handlers or foreign objects).
func (p Page) HTML() ([]byte, error) {
	view := pageView{Title: p.Title, Intro: p.Intro, Ledger: p.Ledger, LedgerNote: LedgerRule, SeedsColumn: HasSeedsToDecide(p.Ledger)}
	if view.SeedsColumn {
		view.SeedsNote = SeedsRule
	}
	if len(p.Ledger) > 0 {
		view.LedgerSummary = LedgerSummary(p.Ledger)
	}
	for _, c := range p.Ledger {
		if c.Interval == "" {
			c.Interval = "-"
		}
		if c.SeedsToDecide == "" {
			c.SeedsToDecide = "-"
		}
		view.Claims = append(view.Claims, claimView{Claim: c, BlockID: "block-" + c.Block, Class: verdictClass(c.Verdict)})
	}
	for _, b := range p.Blocks {
		bv := blockView{PageBlock: b, ID: "block-" + b.Name}
		if b.Result != nil {
			for ti, t := range b.Result.Tables {
				bv.Tables = append(bv.Tables, tableViewOf(t, fmt.Sprintf("%s-t%d", b.Name, ti)))
				for _, c := range t.Columns {
					view.PaperLegend = view.PaperLegend || isPaperColumn(c)
				}
			}
			for _, f := range b.Result.Figures {
				bv.Figures = append(bv.Figures, figureViewOf(f))
			}
		}
		view.Blocks = append(view.Blocks, bv)
	}
	if len(p.Blocks) == 1 && p.Blocks[0].Title == p.Title && len(p.Ledger) == 0 {
		view.SoleStatus = p.Blocks[0].Status
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, view); err != nil {
		return nil, fmt.Errorf("render index.html: %w", err)
	}
	return buf.Bytes(), nil
}

type pageView struct {
	// PaperLegend shows the legend of paper columns and marked cells,
	// only when some table has a paper column.
	PaperLegend bool
	// SoleStatus is the status of a page's only block when that block has
	// the page's title and there is no ledger: the page then has no
	// contents and no second heading, its status beside the title.
	SoleStatus                string
	Title                     string
	Intro                     []string
	Ledger                    []Claim
	LedgerSummary, LedgerNote string
	// SeedsColumn shows the ledger's SeedsColumn, explained by SeedsNote.
	SeedsColumn bool
	SeedsNote   string
	Claims      []claimView
	Blocks      []blockView
}

type claimView struct {
	Claim
	BlockID, Class string
}

// verdictClass is the CSS class of a verdict cell.
func verdictClass(v string) string {
	switch v {
	case VerdictHolds:
		return "v-holds"
	case VerdictDoesNotHold:
		return "v-fails"
	case VerdictInconclusive, VerdictIndicative:
		return "v-open"
	}
	return "v-none"
}

type blockView struct {
	PageBlock
	ID      string
	Tables  []tableView
	Figures []figureView
}

type tableView struct {
	ID      string
	Title   string
	Columns []headView
	Rows    [][]cellView
	Notes   []string
	// Differ and Match count the compared cells.
	Differ, Match int
}

type headView struct {
	Text  string
	Class string
}

type cellView struct {
	Text, Class, Tip string
}

type figureView struct {
	Name, Title string
	SVG         template.HTML
	Omitted     string
}

// tableViewOf marks, in each column compared with a paper column, the
// cells that differ from the paper's cell of the same row (class "differ",
// the paper's value as a tooltip) and those that match it (class "match").
func tableViewOf(t Table, id string) tableView {
	v := tableView{ID: id, Title: t.Title, Notes: t.Notes}
	paperOf := map[int]int{}
	isPaper := map[int]bool{}
	for _, c := range ComparedColumns(t) {
		paperOf[c[0]] = c[1]
	}
	for i, c := range t.Columns {
		h := headView{Text: c}
		if isPaperColumn(c) {
			h.Class, isPaper[i] = "paper", true
		} else if _, ok := paperOf[i]; ok {
			h.Class = "compared"
		}
		v.Columns = append(v.Columns, h)
	}
	for ri, r := range t.Rows {
		row := make([]cellView, len(t.Columns))
		for i := range t.Columns {
			if i < len(r) {
				row[i].Text = r[i]
			}
			if isPaper[i] {
				row[i].Class = "paper"
			}
		}
		for i, pi := range paperOf {
			if i >= len(r) || pi >= len(r) {
				continue
			}
			switch compareCells(r[i], r[pi], t.num(ri, i), t.num(ri, pi)) {
			case cellsDiffer:
				row[i].Class, row[i].Tip = "differ", fmt.Sprintf("differs from the paper (%s: %s)", t.Columns[pi], r[pi])
				v.Differ++
			case cellsMatch:
				row[i].Class, row[i].Tip = "match", "matches the paper ("+t.Columns[pi]+")"
				v.Match++
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

func isPaperColumn(name string) bool {
	return strings.HasPrefix(strings.ToLower(name), "paper")
}

// ComparedColumns pairs measured columns with the paper columns they are
// compared with, as [measured, paper] column indices: Table.Compare's
// pairs where it is set, otherwise each column "paper X" with the column
// named "X" or "measured X", and a column named "paper" with one named
// "measured".
func ComparedColumns(t Table) [][2]int {
	at := map[string]int{}
	for i, c := range t.Columns {
		at[c] = i
	}
	var out [][2]int
	if len(t.Compare) > 0 {
		for _, c := range t.Compare {
			m, ok1 := at[c.Measured]
			p, ok2 := at[c.Paper]
			if ok1 && ok2 {
				out = append(out, [2]int{m, p})
			}
		}
		return out
	}
	for i, c := range t.Columns {
		if !isPaperColumn(c) {
			continue
		}
		rest := strings.TrimSpace(c[len("paper"):])
		for _, name := range []string{rest, "measured " + rest, strings.TrimSpace("measured " + rest)} {
			if m, ok := at[name]; ok && name != "" && !isPaperColumn(name) {
				out = append(out, [2]int{m, i})
				break
			}
		}
	}
	return out
}

// cellComparison is how a measured cell compares with the paper's.
type cellComparison int

// The outcomes of compareCells.
const (
	cellsNotCompared cellComparison = iota
	cellsMatch
	cellsDiffer
)

// compareCells compares a measured cell with the paper's cell of the same
// row. It computes nothing beyond comparing what the table holds and
// parses nothing: an empty or "-" cell on either side is not compared; two
// cells that both show a number (AddRow's floats, integers and Nums) with
// the same unit compare by that number (1 equals 1.0000); anything else
// compares as text.
func compareCells(ours, paper string, on, pn cellNum) cellComparison {
	ours, paper = strings.TrimSpace(ours), strings.TrimSpace(paper)
	for _, none := range []string{"", "-", "—", "–", "n/a"} {
		if ours == none || paper == none {
			return cellsNotCompared
		}
	}
	if on.ok && pn.ok && on.unit == pn.unit {
		if on.value == pn.value {
			return cellsMatch
		}
		return cellsDiffer
	}
	if ours == paper {
		return cellsMatch
	}
	return cellsDiffer
}

// figureViewOf inlines f's SVG without its XML prolog, or says why not.
func figureViewOf(f Figure) figureView {
	v := figureView{Name: f.Name, Title: f.Title}
	svg := string(f.SVG)
	if i := strings.Index(svg, "<svg"); i >= 0 {
		svg = svg[i:]
	} else {
		v.Omitted = "figure has no SVG"
		return v
	}
	low := strings.ToLower(svg)
	for _, bad := range []string{"<script", "javascript:", "<foreignobject", "<iframe", "href=\"http"} {
		if strings.Contains(low, bad) {
			v.Omitted = "figure SVG holds " + bad + "; not inlined"
			return v
		}
	}
	if eventHandler(low) {
		v.Omitted = "figure SVG holds an event handler; not inlined"
		return v
	}
	v.SVG = template.HTML(svg) // #nosec: checked above, produced by this package
	return v
}

// eventHandler reports an attribute like onload= in lower-cased markup.
func eventHandler(low string) bool {
	for i := 0; ; {
		j := strings.Index(low[i:], "on")
		if j < 0 {
			return false
		}
		start := i + j
		k := start + 2
		for k < len(low) && low[k] >= 'a' && low[k] <= 'z' {
			k++
		}
		before := start == 0 || strings.ContainsRune(" \t\n\r/\"'", rune(low[start-1]))
		if before && k > start+2 && k < len(low) && low[k] == '=' {
			return true
		}
		i = start + 2
	}
}

var pageTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:72rem;padding:1rem 2rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.3rem;border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2.5rem}h3{font-size:1.05rem;margin-bottom:.3rem}
nav ol{padding-left:1.4rem}nav li{margin:.15rem 0}
.status{display:inline-block;font-size:.8rem;font-weight:600;padding:0 .45rem;border-radius:.6rem;margin-left:.4rem;vertical-align:middle}
.status-ok{background:#dff3e3;color:#135c24}.status-skipped,.status-partial{background:#fff1c9;color:#6b4e00}.status-failed{background:#fbdada;color:#8a1010}
.detail{color:#555;font-size:.9rem}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0}
th,td{border:1px solid #d0d0d0;padding:.2rem .45rem;text-align:left;vertical-align:top}
th{background:#f2f2f2}th.paper,td.paper{background:#f3f0fa}
th.compared{background:#e8eef8}
td.differ{background:#fde2c4;border-color:#e3a15c}
td.match{background:#e3f4e6}
.legend{font-size:.8rem;color:#555}
.legend span{padding:0 .3rem;margin-right:.4rem;border:1px solid #d0d0d0}
ul.notes{font-size:.85rem;color:#333}
figure{margin:1rem 0}figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#444}
.files{font-size:.85rem}
td.v-holds{background:#dff3e3}td.v-fails{background:#fbdada}td.v-open{background:#fff1c9}td.v-none{background:#eee}
</style>
</head>
<body>
<h1>{{.Title}}{{with .SoleStatus}}<span class="status status-{{.}}">{{.}}</span>{{end}}</h1>
{{range .Intro}}<p>{{.}}</p>
{{end}}{{if .Claims}}<section id="ledger">
<h2>Claims ledger</h2>
<p>{{.LedgerSummary}}</p>
<div class="tablewrap"><table>
<thead><tr><th>block</th><th>section</th><th>claim</th><th class="paper">paper</th><th>ours</th><th>interval</th><th>criterion</th><th>verdict</th>{{if .SeedsColumn}}<th>seeds to decide</th>{{end}}<th>tier</th><th>convergence</th></tr></thead>
<tbody>
{{range .Claims}}<tr><td><a href="#{{.BlockID}}">{{.Block}}</a></td><td>{{.Section}}</td><td>{{.Name}}</td><td class="paper">{{.Paper}}</td><td>{{.Ours}}</td><td>{{.Interval}}</td><td>{{.Criterion}}</td><td class="{{.Class}}">{{.Verdict}}</td>{{if $.SeedsColumn}}<td>{{.SeedsToDecide}}</td>{{end}}<td>{{.Tier}}</td><td>{{.Convergence}}</td></tr>
{{end}}</tbody></table></div>
<p class="detail">{{.LedgerNote}}</p>
{{if .SeedsColumn}}<p class="detail">{{.SeedsNote}}</p>
{{end}}</section>
{{end}}<nav>{{if not .SoleStatus}}<h2 id="contents">Contents</h2>
<ol>
{{range .Blocks}}<li><a href="#{{.ID}}">{{.Title}}</a> <code>{{.Name}}</code><span class="status status-{{.Status}}">{{.Status}}</span>{{if .Detail}} <span class="detail">{{.Detail}}</span>{{end}}</li>
{{end}}</ol>
{{end}}{{if .PaperLegend}}<p class="legend">In tables: <span class="paper">paper column</span> <span class="differ" style="background:#fde2c4">differs from the paper</span> <span style="background:#e3f4e6">matches the paper</span> (hover a marked cell for the paper's value).</p>
{{end}}
</nav>
{{range .Blocks}}<section id="{{.ID}}" data-block="{{.Name}}" data-status="{{.Status}}">
{{if not $.SoleStatus}}<h2>{{.Title}}<span class="status status-{{.Status}}">{{.Status}}</span></h2>
{{end}}
{{if .Detail}}<p class="detail">{{.Detail}}</p>
{{end}}{{if .Files}}<p class="files">Files: {{range $i, $f := .Files}}{{if $i}}, {{end}}<a href="{{$f}}">{{$f}}</a>{{end}}</p>
{{end}}{{with .Result}}{{range .Summary}}<p>{{.}}</p>
{{end}}{{end}}{{range .Tables}}<h3 id="{{.ID}}">{{.Title}}</h3>
<div class="tablewrap"><table>
<thead><tr>{{range .Columns}}<th{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if .Tip}} title="{{.Tip}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{if or .Differ .Match}}<p class="detail">Compared with the paper: {{.Differ}} cell(s) differ, {{.Match}} match.</p>
{{end}}{{if .Notes}}<ul class="notes">
{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{end}}{{range .Figures}}<figure id="fig-{{.Name}}" data-figure="{{.Name}}">
{{if .SVG}}{{.SVG}}{{else}}<p class="detail">{{.Omitted}}</p>{{end}}
<figcaption>{{.Title}} ({{.Name}}.svg)</figcaption>
</figure>
{{end}}</section>
{{end}}</body>
</html>
`))
