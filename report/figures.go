package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
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

// ScatterPlot places labelled points, each with an optional vertical error
// bar, in named groups (one colour each). Points are not joined: use it
// where each point is its own thing (a rule, a path), not a trend.
type ScatterPlot struct {
	Title, XLabel, YLabel string
	Groups                []PointGroup
	LogX, LogY            bool
	Width, Height         float64
}

// PointGroup is one colour of a ScatterPlot.
type PointGroup struct {
	Name   string
	Points []Point
}

// Point is one labelled point; YErr (>= 0) draws Y ± YErr.
type Point struct {
	Label string
	X, Y  float64
	YErr  float64
}

// SVG renders the scatter plot. Labels sit right of their points; a point
// sharing its x with an earlier one is labelled on the left, so the labels
// of a column of points alternate sides.
func (sp ScatterPlot) SVG() ([]byte, error) {
	p := plot.New()
	p.Title.Text = sp.Title
	p.X.Label.Text, p.Y.Label.Text = sp.XLabel, sp.YLabel
	p.X.Tick.Marker = niceTicks{log: sp.LogX}
	p.Y.Tick.Marker = niceTicks{log: sp.LogY}
	if sp.LogX {
		p.X.Scale = plot.LogScale{}
	}
	if sp.LogY {
		p.Y.Scale = plot.LogScale{}
	}
	p.Add(plotter.NewGrid())
	var seenX []float64
	for gi, g := range sp.Groups {
		if err := sp.addGroup(p, g, Color(gi), &seenX); err != nil {
			return nil, err
		}
	}
	if len(seenX) == 0 {
		return nil, fmt.Errorf("scatter plot %q: no points", sp.Title)
	}
	// Room for the labels on either side of the outermost points.
	if sp.LogX {
		f := math.Pow(p.X.Max/p.X.Min, 0.15)
		p.X.Min, p.X.Max = p.X.Min/f, p.X.Max*f
	} else {
		d := 0.15 * math.Max(p.X.Max-p.X.Min, 1e-9)
		p.X.Min, p.X.Max = p.X.Min-d, p.X.Max+d
	}
	p.Legend.Top = false
	p.Legend.Left = true
	p.Legend.Padding = legendPadding
	return writeSVG(p, sp.Title, sp.Width, sp.Height)
}

// addGroup draws one group's points, error bars and labels.
func (sp ScatterPlot) addGroup(p *plot.Plot, g PointGroup, c color.Color, seenX *[]float64) error {
	var xys plotter.XYs
	var errs plotter.YErrors
	var right, left plotter.XYLabels
	for _, pt := range g.Points {
		if !finite(pt.X) || !finite(pt.Y) || !finite(pt.YErr) || pt.YErr < 0 || (sp.LogX && pt.X <= 0) || (sp.LogY && pt.Y-pt.YErr <= 0) {
			return fmt.Errorf("scatter plot %q: point %q (%v, %v ± %v) cannot be drawn on these axes", sp.Title, pt.Label, pt.X, pt.Y, pt.YErr)
		}
		xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
		errs = append(errs, struct{ Low, High float64 }{pt.YErr, pt.YErr})
		side := &right
		for _, x := range *seenX {
			if math.Abs(x-pt.X) <= 1e-9*math.Max(1, math.Abs(x)) {
				if side == &right {
					side = &left
				} else {
					side = &right
				}
			}
		}
		*seenX = append(*seenX, pt.X)
		side.XYs = append(side.XYs, plotter.XY{X: pt.X, Y: pt.Y})
		side.Labels = append(side.Labels, pt.Label)
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("scatter plot %q: %w", sp.Title, err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{xys, errs})
	if err != nil {
		return fmt.Errorf("scatter plot %q: %w", sp.Title, err)
	}
	eb.LineStyle.Color = c
	eb.LineStyle.Width = vg.Points(1)
	p.Add(eb, sc)
	if g.Name != "" {
		p.Legend.Add(g.Name, sc)
	}
	for _, side := range []struct {
		l     plotter.XYLabels
		dx    vg.Length
		align text.XAlignment
	}{{right, vg.Points(6), draw.XLeft}, {left, vg.Points(-6), draw.XRight}} {
		if len(side.l.XYs) == 0 {
			continue
		}
		l, err := plotter.NewLabels(side.l)
		if err != nil {
			return fmt.Errorf("scatter plot %q: %w", sp.Title, err)
		}
		l.Offset = vg.Point{X: side.dx}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = side.align, draw.YCenter
			l.TextStyle[i].Color = c
		}
		p.Add(l)
	}
	return nil
}

// Figure renders sp and wraps it as a Figure with the given file stem.
func (sp ScatterPlot) Figure(name string) (Figure, error) {
	svg, err := sp.SVG()
	if err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: sp.Title, SVG: svg}, nil
}
