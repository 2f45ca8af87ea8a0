package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// ScatterPlot places labelled points, each with an optional vertical error
// bar, in named groups (one colour each). Points are not joined: use it
// where each point is its own thing (a rule, a path), not a trend.
type ScatterPlot struct {
	Title, XLabel, YLabel string
	Groups                []PointGroup
	LogX, LogY            bool
	// Width and Height in centimetres; zero means 16 x 10.
	Width, Height float64
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

// placed is a point as drawn: its group's colour, its label (points of a
// group at the same place share one label) and its error bar.
type placed struct {
	x, y, err float64
	label     string
	c         color.Color
}

// SVG renders the scatter plot. Each label goes to the first of eight
// positions around its point (right, left, then the diagonals, above,
// below) that overlaps no point, error bar, earlier label or the legend,
// or the least overlapping one; the legend takes the emptiest corner.
func (sp ScatterPlot) SVG() ([]byte, error) {
	pts, err := sp.points()
	if err != nil {
		return nil, err
	}
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
	p.Legend.Padding = legendPadding
	p.Legend.TextStyle.Font.Size = plotter.DefaultFontSize
	p.Add(plotter.NewGrid())
	for gi, g := range sp.Groups {
		if err := sp.addGroup(p, g, Color(gi)); err != nil {
			return nil, err
		}
	}
	sp.setRanges(p, pts)
	w, h := sp.Width, sp.Height
	if w == 0 {
		w = 16
	}
	if h == 0 {
		h = 10
	}
	if err := placeLabels(p, pts, vg.Length(w)*vg.Centimeter, vg.Length(h)*vg.Centimeter); err != nil {
		return nil, fmt.Errorf("scatter plot %q: %w", sp.Title, err)
	}
	return writeSVG(p, sp.Title, w, h)
}

// points checks the points and merges, per group, the labels of points at
// the same place (G-Binary and MajoritySignSGD compute the same vote).
func (sp ScatterPlot) points() ([]placed, error) {
	var pts []placed
	for gi, g := range sp.Groups {
		at := map[[3]float64]int{}
		for _, pt := range g.Points {
			if !finite(pt.X) || !finite(pt.Y) || !finite(pt.YErr) || pt.YErr < 0 || (sp.LogX && pt.X <= 0) || (sp.LogY && pt.Y-pt.YErr <= 0) {
				return nil, fmt.Errorf("scatter plot %q: point %q (%v, %v ± %v) cannot be drawn on these axes", sp.Title, pt.Label, pt.X, pt.Y, pt.YErr)
			}
			k := [3]float64{pt.X, pt.Y, pt.YErr}
			if i, ok := at[k]; ok {
				pts[i].label += " / " + pt.Label
				continue
			}
			at[k] = len(pts)
			pts = append(pts, placed{x: pt.X, y: pt.Y, err: pt.YErr, label: pt.Label, c: Color(gi)})
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("scatter plot %q: no points", sp.Title)
	}
	return pts, nil
}

// setRanges fixes the axes to the points and their error bars with room
// for labels on every side.
func (sp ScatterPlot) setRanges(p *plot.Plot, pts []placed) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		xlo, xhi = math.Min(xlo, pt.x), math.Max(xhi, pt.x)
		ylo, yhi = math.Min(ylo, pt.y-pt.err), math.Max(yhi, pt.y+pt.err)
	}
	pad := func(lo, hi float64, log bool, f float64) (float64, float64) {
		if log {
			r := math.Pow(math.Max(hi/lo, 10), f)
			return lo / r, hi * r
		}
		d := f * math.Max(hi-lo, math.Max(math.Abs(hi), 1)*0.1)
		return lo - d, hi + d
	}
	p.X.Min, p.X.Max = pad(xlo, xhi, sp.LogX, 0.3)
	p.Y.Min, p.Y.Max = pad(ylo, yhi, sp.LogY, 0.15)
}

// addGroup draws one group's points and error bars.
func (sp ScatterPlot) addGroup(p *plot.Plot, g PointGroup, c color.Color) error {
	var xys plotter.XYs
	var errs plotter.YErrors
	for _, pt := range g.Points {
		xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
		errs = append(errs, struct{ Low, High float64 }{pt.YErr, pt.YErr})
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
	return nil
}

// labelSpot is one candidate position of a label: the offset from its
// point and the text's alignment there.
type labelSpot struct {
	dx, dy vg.Length
	xAlign text.XAlignment
	yAlign text.YAlignment
}

var labelSpots = []labelSpot{
	{6, 0, draw.XLeft, draw.YCenter}, {-6, 0, draw.XRight, draw.YCenter},
	{4, 4, draw.XLeft, draw.YBottom}, {4, -4, draw.XLeft, draw.YTop},
	{-4, 4, draw.XRight, draw.YBottom}, {-4, -4, draw.XRight, draw.YTop},
	{0, 7, draw.XCenter, draw.YBottom}, {0, -7, draw.XCenter, draw.YTop},
}

// placeLabels lays the plot out on a w x h canvas to learn where the
// points fall, chooses the legend's corner and each label's spot, and adds
// the labels.
func placeLabels(p *plot.Plot, pts []placed, w, h vg.Length) error {
	whole := draw.New(vgsvg.New(w, h))
	dc := p.DataCanvas(whole)
	tx, ty := p.Transforms(&dc)
	var obstacles []vg.Rectangle
	for _, pt := range pts {
		cx, cy := tx(pt.x), ty(pt.y)
		obstacles = append(obstacles, vg.Rectangle{Min: vg.Point{X: cx - 4, Y: cy - 4}, Max: vg.Point{X: cx + 4, Y: cy + 4}})
		if pt.err > 0 {
			obstacles = append(obstacles, vg.Rectangle{Min: vg.Point{X: cx - 3, Y: ty(pt.y - pt.err)}, Max: vg.Point{X: cx + 3, Y: ty(pt.y + pt.err)}})
		}
	}
	obstacles = append(obstacles, placeLegend(p, whole, obstacles))
	for _, pt := range pts {
		sty := text.Style{Font: plotterFont(), Color: pt.c, Handler: p.Title.TextStyle.Handler}
		cx, cy := tx(pt.x), ty(pt.y)
		best, bestCost := labelSpots[0], math.Inf(1)
		var bestBox vg.Rectangle
		for _, s := range labelSpots {
			sty.XAlign, sty.YAlign = s.xAlign, s.yAlign
			r := sty.Rectangle(pt.label)
			at := vg.Point{X: cx + s.dx, Y: cy + s.dy}
			box := vg.Rectangle{Min: at.Add(r.Min), Max: at.Add(r.Max)}
			cost := outside(box, dc.Rectangle) * 4
			for _, o := range obstacles {
				cost += overlap(box, o)
			}
			if cost < bestCost {
				best, bestCost, bestBox = s, cost, box
			}
			if cost == 0 {
				break
			}
		}
		obstacles = append(obstacles, bestBox)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: pt.x, Y: pt.y}}, Labels: []string{pt.label}})
		if err != nil {
			return err
		}
		l.Offset = vg.Point{X: best.dx, Y: best.dy}
		l.TextStyle[0].XAlign, l.TextStyle[0].YAlign, l.TextStyle[0].Color = best.xAlign, best.yAlign, pt.c
		p.Add(l)
	}
	return nil
}

// placeLegend puts the legend in the corner where it covers the least of
// the obstacles and returns the box it takes.
func placeLegend(p *plot.Plot, whole draw.Canvas, obstacles []vg.Rectangle) vg.Rectangle {
	area := p.DataCanvas(whole)
	type corner struct{ top, left bool }
	best, bestCost, bestBox := corner{}, math.Inf(1), vg.Rectangle{}
	for _, c := range []corner{{true, false}, {false, false}, {true, true}, {false, true}} {
		p.Legend.Top, p.Legend.Left = c.top, c.left
		r := p.Legend.Rectangle(area)
		cost := 0.0
		for _, o := range obstacles {
			cost += overlap(r, o)
		}
		if cost < bestCost {
			best, bestCost, bestBox = c, cost, r
		}
	}
	p.Legend.Top, p.Legend.Left = best.top, best.left
	return bestBox
}

func plotterFont() font.Font { return font.From(plotter.DefaultFont, plotter.DefaultFontSize) }

// overlap is the area two rectangles share.
func overlap(a, b vg.Rectangle) float64 {
	w := math.Min(float64(a.Max.X), float64(b.Max.X)) - math.Max(float64(a.Min.X), float64(b.Min.X))
	h := math.Min(float64(a.Max.Y), float64(b.Max.Y)) - math.Max(float64(a.Min.Y), float64(b.Min.Y))
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// outside is the area of a that lies outside b.
func outside(a, b vg.Rectangle) float64 {
	return float64(a.Size().X*a.Size().Y) - overlap(a, b)
}

// Figure renders sp and wraps it as a Figure with the given file stem.
func (sp ScatterPlot) Figure(name string) (Figure, error) {
	svg, err := sp.SVG()
	if err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: sp.Title, SVG: svg}, nil
}
