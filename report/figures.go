package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarPlot is a horizontal bar chart: one bar per labelled value, first bar
// on top, each bar labelled at its end with its Text. It suits values that
// are not a trend (one time per path), which a line would wrongly join.
type BarPlot struct {
	Title, XLabel string
	Bars          []Bar
	// Groups name the colours Bar.Group indexes; each named group gets a
	// legend entry.
	Groups []string
	// LogX draws the value axis logarithmically (values must be > 0); bars
	// then start at the decade below the smallest value.
	LogX          bool
	Width, Height float64
}

// Bar is one bar of a BarPlot.
type Bar struct {
	Label string
	Value float64
	// Text is printed at the bar's end, e.g. FormatSeconds of the value.
	Text string
	// Group selects the bar's colour (Color(Group)).
	Group int
}

// SVG renders the bar chart.
func (bp BarPlot) SVG() ([]byte, error) {
	if len(bp.Bars) == 0 {
		return nil, fmt.Errorf("bar plot %q: no bars", bp.Title)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range bp.Bars {
		if !finite(b.Value) || (bp.LogX && b.Value <= 0) || b.Value < 0 {
			return nil, fmt.Errorf("bar plot %q: bar %q value %v is not finite and positive", bp.Title, b.Label, b.Value)
		}
		lo, hi = math.Min(lo, b.Value), math.Max(hi, b.Value)
	}
	p := plot.New()
	p.Title.Text = bp.Title
	p.X.Label.Text = bp.XLabel
	base := 0.0
	if bp.LogX {
		p.X.Scale = plot.LogScale{}
		base = math.Pow(10, math.Floor(math.Log10(lo)))
		// Room for the value labels right of the longest bar.
		p.X.Min, p.X.Max = base, hi*math.Pow(hi/base, 0.3)
	} else {
		p.X.Min, p.X.Max = 0, hi*1.3
	}
	p.X.Tick.Marker = niceTicks{log: bp.LogX}
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)
	n := len(bp.Bars)
	var ticks []plot.Tick
	var labels plotter.XYLabels
	inLegend := map[int]bool{}
	for i, b := range bp.Bars {
		y := float64(n - 1 - i)
		rect, err := plotter.NewPolygon(plotter.XYs{{X: base, Y: y - 0.35}, {X: b.Value, Y: y - 0.35}, {X: b.Value, Y: y + 0.35}, {X: base, Y: y + 0.35}})
		if err != nil {
			return nil, fmt.Errorf("bar plot %q: %w", bp.Title, err)
		}
		rect.Color = Color(b.Group)
		rect.LineStyle.Width = 0
		p.Add(rect)
		if b.Group < len(bp.Groups) && bp.Groups[b.Group] != "" && !inLegend[b.Group] {
			inLegend[b.Group] = true
			p.Legend.Add(bp.Groups[b.Group], rect)
		}
		ticks = append(ticks, plot.Tick{Value: y, Label: b.Label})
		labels.XYs = append(labels.XYs, plotter.XY{X: b.Value, Y: y})
		labels.Labels = append(labels.Labels, b.Text)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("bar plot %q: %w", bp.Title, err)
	}
	l.Offset = vg.Point{X: vg.Points(3)}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(l)
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.Y.Tick.Length = 0
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.Padding = legendPadding
	h := bp.Height
	if h == 0 {
		h = 2.5 + 0.8*float64(n)
	}
	return writeSVG(p, bp.Title, bp.Width, h)
}

// Figure renders bp and wraps it as a Figure with the given file stem.
func (bp BarPlot) Figure(name string) (Figure, error) {
	svg, err := bp.SVG()
	if err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: bp.Title, SVG: svg}, nil
}
