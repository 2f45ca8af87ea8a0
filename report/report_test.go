package report

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0.03125, "0.0313"}, {1, "1"}, {0.99565, "0.9957"}, {-0.00001, "0"}, {12.5, "12.5"}, {1e13, "10000000000000"}} {
		if got := FormatFloat(c.v); got != c.want {
			t.Errorf("FormatFloat(%v) = %q; want %q", c.v, got, c.want)
		}
	}
}

func TestMarkdownEscapesAndPads(t *testing.T) {
	tb := Table{Title: "T", Columns: []string{"a", "b"}, Rows: [][]string{{"x|y"}}, Notes: []string{"n"}}
	md := tb.Markdown()
	for _, want := range []string{"### T", `| x\|y |  |`, "- n"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown() lacks %q:\n%s", want, md)
		}
	}
}

func TestWriteFileAtomicLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.txt")
	if err := WriteFileAtomic(p, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(filepath.Join(dir, "y.txt"), func(w io.Writer) error { return errors.New("boom") }); err == nil {
		t.Fatal("WriteAtomic ignored the writer's error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "x.txt" {
		t.Fatalf("directory holds %v; want only x.txt", ents)
	}
	if b, _ := os.ReadFile(p); string(b) != "hello" {
		t.Fatalf("content %q", b)
	}
}

func TestLinePlotSVG(t *testing.T) {
	lp := LinePlot{Title: "t", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{3, 4}}}, HLines: []HLine{{Y: 3.5, Label: "gate"}}}
	svg, err := lp.SVG()
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("SVG() = %.40q, %v", svg, err)
	}
	svg2, _ := lp.SVG()
	if string(svg) != string(svg2) {
		t.Error("SVG output is not deterministic")
	}
	bad := LinePlot{Series: []Series{{X: []float64{1}, Y: []float64{math.NaN()}}}}
	if _, err := bad.SVG(); err == nil {
		t.Error("NaN point accepted")
	}
}
