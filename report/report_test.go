package report

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
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

func TestIntegerTicks(t *testing.T) {
	for _, c := range []struct {
		ticks    niceTicks
		min, max float64
		want     []float64
	}{
		{niceTicks{integer: true}, 1, 3, []float64{1, 2, 3}},
		{niceTicks{}, 1, 3, []float64{1, 1.5, 2, 2.5, 3}},
		{niceTicks{integer: true}, 0, 100, []float64{0, 20, 40, 60, 80, 100}},
		{niceTicks{}, 118, 380, []float64{150, 200, 250, 300, 350}}, // step 50, not 100 (two ticks)
		{niceTicks{}, 0, 125, []float64{0, 20, 40, 60, 80, 100, 120}},
	} {
		var got []float64
		for _, tk := range c.ticks.Ticks(c.min, c.max) {
			got = append(got, tk.Value)
		}
		if len(got) != len(c.want) {
			t.Errorf("%+v.Ticks(%g, %g) = %v; want %v", c.ticks, c.min, c.max, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("%+v.Ticks(%g, %g) = %v; want %v", c.ticks, c.min, c.max, got, c.want)
				break
			}
		}
	}
	epochs := LinePlot{Series: []Series{{X: []float64{1, 2, 3}, Y: []float64{50.5, 60, 61}}}}
	if !epochs.allIntegers(func(s Series) []float64 { return s.X }) || epochs.allIntegers(func(s Series) []float64 { return s.Y }) {
		t.Error("epochs 1..3 should get integer ticks and accuracies 50.5.. should not")
	}
}

func TestPlotKindsRejectBadData(t *testing.T) {
	for name, f := range map[string]func() ([]byte, error){
		"negative spread": LinePlot{Series: []Series{{X: []float64{1}, Y: []float64{1}, Err: []float64{-1}}}}.SVG,
		"spread count":    LinePlot{Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}, Err: []float64{1}}}}.SVG,
		"no bars":         BarPlot{}.SVG,
		"zero bar on log": BarPlot{LogX: true, Bars: []Bar{{Label: "a", Value: 0}}}.SVG,
		"NaN bar":         BarPlot{Bars: []Bar{{Label: "a", Value: math.NaN()}}}.SVG,
		"no points":       ScatterPlot{}.SVG,
		"zero x on log":   ScatterPlot{LogX: true, Groups: []PointGroup{{Points: []Point{{X: 0, Y: 1}}}}}.SVG,
		"negative err":    ScatterPlot{Groups: []PointGroup{{Points: []Point{{X: 1, Y: 1, YErr: -1}}}}}.SVG,
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPlotKindsDrawTheirLabels(t *testing.T) {
	band, err := LinePlot{Title: "curve", Series: []Series{{Name: "s", X: []float64{1, 2, 3}, Y: []float64{1, 2, 3}, Err: []float64{0.1, 0.2, 0.3}}}}.SVG()
	if err != nil {
		t.Fatal(err)
	}
	bars, err := BarPlot{Title: "bars", LogX: true, Groups: []string{"fam"}, Bars: []Bar{{Label: "path a", Value: 2.77, Text: "2.77 ms"}, {Label: "path <b>", Value: 436, Text: "436 ms"}}}.SVG()
	if err != nil {
		t.Fatal(err)
	}
	pts, err := ScatterPlot{Title: "pts", LogX: true, Groups: []PointGroup{{Name: "g", Points: []Point{{Label: "FP32", X: 1, Y: 80, YErr: 1}, {Label: "G-Binary", X: 0.03125, Y: 79, YErr: 0.5}}}}}.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		svg  []byte
		want []string
	}{
		{band, []string{"fill-opacity:0.2"}}, // the ± band is a translucent polygon
		{bars, []string{">2.77 ms<", ">436 ms<", ">path &lt;b&gt;<", ">fam<"}},
		{pts, []string{">FP32<", ">G-Binary<", ">g<"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(string(c.svg), w) {
				t.Errorf("SVG lacks %q", w)
			}
		}
	}
}

func TestTicksAtX(t *testing.T) {
	svg, err := LinePlot{LogX: true, TicksAtX: true, Series: []Series{{X: []float64{64, 512}, Y: []float64{1, 2}}, {X: []float64{64, 128}, Y: []float64{3, 4}}}}.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">64<", ">128<", ">512<"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("x ticks lack %s", want)
		}
	}
	if strings.Contains(string(svg), ">100<") {
		t.Error("x ticks at powers of ten despite TicksAtX")
	}
}

func TestLongTitleIsBroken(t *testing.T) {
	long := "ns-3 gpt2-xl, background onoff=8@0.9,on=5000us,off=0us: link utilization, queue, pressure and the Commander's mode"
	p := LinePlot{Title: long, Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}}}}.axes()
	fitTitle(p, 16*vg.Centimeter)
	lines := strings.Split(p.Title.Text, "\n")
	if len(lines) != 2 || lines[0] != "ns-3 gpt2-xl, background onoff=8@0.9,on=5000us,off=0us:" {
		t.Errorf("title broken as %q", lines)
	}
	for _, l := range lines {
		if w := p.Title.TextStyle.Width(l); w > 16*vg.Centimeter {
			t.Errorf("title line %q is %v wide", l, w)
		}
	}
	short := LinePlot{Title: "short"}.axes()
	fitTitle(short, 16*vg.Centimeter)
	if short.Title.Text != "short" {
		t.Errorf("short title changed to %q", short.Title.Text)
	}
}
