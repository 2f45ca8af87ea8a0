// Package report formats results that other packages computed: tables with a
// "paper" column beside the measured one, Markdown and plain-text renderings,
// JSON, and SVG line plots. It computes no experiment figures of its own.
//
// Files are written atomically (a temporary file in the same directory, then a
// rename), so an interrupted run never leaves a half-written output file.
package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Table is one result table. Columns whose name starts with "paper" hold the
// paper's own figures, which the software never computes; every other cell is
// computed by the software.
type Table struct {
	// Name is the file stem used when the table is written on its own.
	Name string `json:"name"`
	// Title is a one-line caption, e.g. "Table 4 analogue: G-Binary exposure".
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Notes are printed under the table: assumptions and differences.
	Notes []string `json:"notes,omitempty"`
	// Compare pairs measured columns with the paper columns index.html
	// compares them with; when empty, ComparedColumns pairs them by name.
	Compare []ColumnPair `json:"compare,omitempty"`
	// nums holds, by row and column, the number each cell AddRow was given
	// shows (see Num); a cell without one compares as text. It does not
	// travel in JSON: a merged run lays its tables out again.
	nums [][]cellNum
}

// Num is a table cell that shows a number in a form of its own: Text, the
// number Value it shows and its Unit ("%", " ms", ... or ""). AddRow prints
// Text and keeps Value and Unit, so that index.html compares the cell with
// the paper's by the number it shows (a paper's "1.0000" matches a
// measured 1) instead of by its text.
type Num struct {
	Value float64
	Unit  string
	Text  string
}

// cellNum is the number a cell shows, when it shows one.
type cellNum struct {
	ok    bool
	value float64
	unit  string
}

// shown is the number FormatFloat(v) prints: v rounded to four decimals
// (NaN shows no number).
func shown(v float64) cellNum {
	if math.IsNaN(v) {
		return cellNum{}
	}
	if r := math.Round(v * 1e4); !math.IsInf(r, 0) && math.Abs(v) < 1e12 {
		v = r / 1e4
	}
	return cellNum{ok: true, value: v}
}

// num returns the number cell (r, c) shows, if AddRow recorded one.
func (t Table) num(r, c int) cellNum {
	if r < len(t.nums) && c < len(t.nums[r]) {
		return t.nums[r][c]
	}
	return cellNum{}
}

// AppendRows appends o's rows to t, with the numbers they show.
func (t *Table) AppendRows(o Table) {
	for r, row := range o.Rows {
		t.appendRow(row, o.nums[r:min(r+1, len(o.nums))])
	}
}

// appendRow appends row with nums (its numbers, or nothing), keeping
// t.nums aligned with t.Rows.
func (t *Table) appendRow(row []string, nums [][]cellNum) {
	for len(t.nums) < len(t.Rows) {
		t.nums = append(t.nums, nil)
	}
	t.Rows = append(t.Rows, row)
	var n []cellNum
	if len(nums) > 0 {
		n = nums[0]
	}
	t.nums = append(t.nums, n)
}

// ColumnPair names a measured column and the paper column it reproduces.
type ColumnPair struct {
	Measured string `json:"measured"`
	Paper    string `json:"paper"`
}

// AddRow appends a row. A float prints with FormatFloat, a Num as its
// Text, anything else with fmt.Sprint; floats, integers and Nums keep the
// number they show for index.html's comparison with the paper's cells.
func (t *Table) AddRow(cells ...any) {
	row := make([]string, len(cells))
	nums := make([]cellNum, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case string:
			row[i] = v
		case float64:
			row[i], nums[i] = FormatFloat(v), shown(v)
		case float32:
			row[i], nums[i] = FormatFloat(float64(v)), shown(float64(v))
		case Num:
			row[i], nums[i] = v.Text, cellNum{ok: !math.IsNaN(v.Value), value: v.Value, unit: v.Unit}
		case int:
			row[i], nums[i] = fmt.Sprint(v), cellNum{ok: true, value: float64(v)}
		case int64:
			row[i], nums[i] = fmt.Sprint(v), cellNum{ok: true, value: float64(v)}
		case int32:
			row[i], nums[i] = fmt.Sprint(v), cellNum{ok: true, value: float64(v)}
		case uint64:
			row[i], nums[i] = fmt.Sprint(v), cellNum{ok: true, value: float64(v)}
		default:
			row[i] = fmt.Sprint(v)
		}
	}
	t.appendRow(row, [][]cellNum{nums})
}

// FormatFloat prints v with up to four decimals, rounding half away from
// zero (as the paper's tables do: 1/32 prints as 0.0313), trimming zeros.
func FormatFloat(v float64) string {
	if r := math.Round(v * 1e4); !math.IsInf(r, 0) && math.Abs(v) < 1e12 {
		v = r / 1e4
	}
	s := fmt.Sprintf("%.4f", v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// Markdown renders t as a GitHub-flavoured Markdown table with its title as a
// heading and notes as a list.
func (t Table) Markdown() string {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "### %s\n\n", EscapeMarkdown(t.Title))
	}
	esc := func(s string) string { return strings.ReplaceAll(EscapeMarkdown(s), "|", `\|`) }
	b.WriteString("|")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, " %s |", esc(c))
	}
	b.WriteString("\n|")
	for range t.Columns {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("|")
		for i := range t.Columns {
			cell := ""
			if i < len(r) {
				cell = r[i]
			}
			fmt.Fprintf(&b, " %s |", esc(cell))
		}
		b.WriteString("\n")
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "- %s\n", EscapeMarkdown(n))
		}
	}
	return b.String()
}

// markdownEscaper writes &, < and > as HTML entities.
var markdownEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// EscapeMarkdown makes text safe to place in Markdown: Markdown passes raw
// HTML through, so a '<script>' in a model's name or a shard's data would
// reach a viewer as markup; &, < and > become entities, which every
// Markdown renderer shows as the characters themselves.
func EscapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// Text renders t as aligned plain text for a terminal.
func (t Table) Text() string {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "%s\n", t.Title)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "  * %s\n", n)
	}
	return b.String()
}

// Figure is a rendered plot.
type Figure struct {
	// Name is the file stem, e.g. "fig3a-bandwidth".
	Name  string `json:"name"`
	Title string `json:"title"`
	// SVG holds the rendered image; it is not part of the JSON output.
	SVG []byte `json:"-"`
}

// Result is what one evidence block or experiment returns: tables, figures,
// and its measured data in a JSON-serialisable form.
type Result struct {
	Block   string   `json:"block"`
	Title   string   `json:"title"`
	Summary []string `json:"summary,omitempty"`
	Tables  []Table  `json:"tables"`
	Figures []Figure `json:"figures,omitempty"`
	// Claims are the block's rows of the claims ledger (see Claim).
	Claims []Claim `json:"claims,omitempty"`
	// Data holds the raw measured values behind the tables.
	Data any `json:"data,omitempty"`
	// Passed and Failed count checks for blocks that run checks.
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	// Status is StatusOK, StatusPartial or StatusSkipped, set by the
	// experiments framework from the units' results ("" outside it).
	Status string `json:"status,omitempty"`
	// Skipped says which parts could not run (or ran on a substitute)
	// and how to get what they need.
	Skipped []string `json:"skipped,omitempty"`
}

// Block statuses. A failed block has no Result; its status is "FAILED"
// with the error.
const (
	StatusOK      = "ok"      // every part ran
	StatusPartial = "partial" // some parts were skipped or substituted
	StatusSkipped = "skipped" // no part ran
)

// StatusLine is the status with what was skipped, e.g. "skipped: yosys
// not found (install ...)"; "ok" when nothing was.
func (r *Result) StatusLine() string {
	st := r.Status
	if st == "" {
		st = StatusOK
		if len(r.Skipped) > 0 {
			st = StatusPartial
		}
	}
	if len(r.Skipped) == 0 {
		return st
	}
	return st + ": " + strings.Join(r.Skipped, "; ")
}

// Markdown renders the whole result; figure links point at files named
// after Figure.Name in the same directory.
func (r *Result) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", EscapeMarkdown(r.Title))
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "Status: **%s**\n\n", EscapeMarkdown(r.StatusLine()))
	}
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "%s\n\n", EscapeMarkdown(s))
	}
	for _, t := range r.Tables {
		b.WriteString(t.Markdown())
		b.WriteString("\n")
	}
	for _, f := range r.Figures {
		fmt.Fprintf(&b, "![%s](%s.svg)\n\n", EscapeMarkdown(f.Title), FileStem(f.Name))
	}
	return b.String()
}

// FileStem maps a name that may come from user data (a figure named after
// a profile's model name) to a file stem that stays inside its directory:
// every byte outside A-Z, a-z, 0-9, '.', '-', '_' and '+' (a '/', a
// control character, a space, any non-ASCII byte) becomes '_', and a stem
// that would be empty or start with '.' ("..", a hidden file) gets a
// leading '_'. WriteFiles and Markdown's figure links both use it, so the
// links match the files.
func FileStem(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_', c == '+':
		default:
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}

// Text renders the result for a terminal.
func (r *Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s ==\n", r.Title)
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "Status: %s\n", r.StatusLine())
	}
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "%s\n", s)
	}
	for _, t := range r.Tables {
		b.WriteString("\n")
		b.WriteString(t.Text())
	}
	return b.String()
}

// WriteJSON writes r as indented JSON to w.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteFiles is WriteFilesContext without a context.
func (r *Result) WriteFiles(dir string) ([]string, error) {
	return r.WriteFilesContext(context.Background(), dir)
}

// WriteFilesContext writes r into dir as one SVG per figure, NAME.md and
// NAME.json, each atomically and in that order (so the Markdown never
// links a figure not yet written), every name mapped by FileStem so that
// none leaves dir. It looks at ctx before each file; when ctx is done, or
// a write fails, it removes the files it wrote in this call and returns
// the error, so an interrupted write leaves no partial set. It returns the
// paths written.
func (r *Result) WriteFilesContext(ctx context.Context, dir string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory %s: %w", dir, err)
	}
	type file struct {
		name string
		data func() ([]byte, error)
	}
	var files []file
	for _, f := range r.Figures {
		svg := f.SVG
		files = append(files, file{FileStem(f.Name) + ".svg", func() ([]byte, error) { return svg, nil }})
	}
	files = append(files,
		file{FileStem(r.Block) + ".md", func() ([]byte, error) { return []byte(r.Markdown()), nil }},
		file{FileStem(r.Block) + ".json", func() ([]byte, error) {
			var js bytes.Buffer
			if err := r.WriteJSON(&js); err != nil {
				return nil, fmt.Errorf("encode %s results: %w", r.Block, err)
			}
			return js.Bytes(), nil
		}})
	var paths []string
	undo := func(err error) ([]string, error) {
		for _, p := range paths {
			os.Remove(p)
		}
		return nil, err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return undo(err)
		}
		data, err := f.data()
		if err != nil {
			return undo(err)
		}
		p := filepath.Join(dir, f.name)
		if err := WriteFileAtomic(p, data); err != nil {
			return undo(err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
