package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one named line of (X, Y) points.
type Series struct {
	Name string
	X, Y []float64
	// Err, when set, holds one spread per point (e.g. the standard
	// deviation over seeds of a mean); the plot shades Y ± Err as a band.
	Err []float64
	// Dashed draws the line dashed (useful for thresholds and references).
	Dashed bool
}

// LinePlot describes a line chart.
type LinePlot struct {
	Title, XLabel, YLabel string
	Series                []Series
	// LogX and LogY select logarithmic axes; all values must then be > 0.
	LogX, LogY bool
	// HLines are horizontal reference lines, e.g. a 2% gate or 500 ps.
	HLines []HLine
	// TicksAtX puts the x ticks at the series' x values (e.g. line widths
	// 64, 128, ... 1024 on a log axis) instead of at 1, 2 and 5 times a
	// power of ten.
	TicksAtX bool
	// XCategories, when set, makes the x axis categorical: series X values
	// are indices into it (0, 1, ...) and the ticks carry its labels.
	XCategories []string
	// Width and Height in centimetres; zero means 16 x 10.
	Width, Height float64
}

// HLine is a labelled horizontal reference line.
type HLine struct {
	Y     float64
	Label string
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff},
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff},
	color.RGBA{0x94, 0x67, 0xbd, 0xff},
	color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff},
	color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// Color returns the i-th colour of the report palette.
func Color(i int) color.Color { return palette[i%len(palette)] }

// SVG renders the plot as SVG bytes.
func (lp LinePlot) SVG() (svg []byte, err error) {
	// gonum/plot panics on ranges it cannot scale (a log axis whose
	// padded range leaves float64); that is bad input, not a crash.
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("plot %q: values cannot be drawn (%v)", lp.Title, r)
		}
	}()
	p := lp.axes()
	xmin, xmax, err := lp.addSeries(p)
	if err != nil {
		return nil, err
	}
	if err := lp.addHLines(p, xmin, xmax); err != nil {
		return nil, err
	}
	return lp.render(p)
}

// axes makes the plot with its title, labels, scales, ticks and grid.
func (lp LinePlot) axes() *plot.Plot {
	p := plot.New()
	p.Title.Text = lp.Title
	p.X.Label.Text = lp.XLabel
	p.Y.Label.Text = lp.YLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = vg.Points(-4)
	p.Legend.Padding = legendPadding
	p.X.Tick.Marker = niceTicks{log: lp.LogX, integer: lp.allIntegers(func(s Series) []float64 { return s.X })}
	p.Y.Tick.Marker = niceTicks{log: lp.LogY, integer: lp.allIntegers(func(s Series) []float64 { return s.Y }) && !lp.hasErr()}
	if lp.LogX {
		p.X.Scale = plot.LogScale{}
	}
	if lp.LogY {
		p.Y.Scale = plot.LogScale{}
	}
	if lp.TicksAtX {
		var ticks []plot.Tick
		seen := map[float64]bool{}
		for _, sr := range lp.Series {
			for _, x := range sr.X {
				if !seen[x] {
					seen[x] = true
					ticks = append(ticks, plot.Tick{Value: x, Label: label(x)})
				}
			}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	if len(lp.XCategories) > 0 {
		var ticks []plot.Tick
		for i, c := range lp.XCategories {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: c})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	p.Add(plotter.NewGrid())
	return p
}

// allIntegers reports whether every value the series hold on one axis is a
// whole number (epochs, counts), so that axis gets integer ticks only.
func (lp LinePlot) allIntegers(axis func(Series) []float64) bool {
	n := 0
	for _, s := range lp.Series {
		for _, v := range axis(s) {
			if v != math.Trunc(v) {
				return false
			}
			n++
		}
	}
	return n > 0
}

func (lp LinePlot) hasErr() bool {
	for _, s := range lp.Series {
		if len(s.Err) > 0 {
			return true
		}
	}
	return false
}

// band shades Y ± Err of s under its line, in the series' colour.
func band(s Series, pts plotter.XYs, c color.Color, logY bool) (*plotter.Polygon, error) {
	ring := make(plotter.XYs, 0, 2*len(pts))
	for j, pt := range pts {
		ring = append(ring, plotter.XY{X: pt.X, Y: pt.Y + s.Err[j]})
	}
	for j := len(pts) - 1; j >= 0; j-- {
		lo := pts[j].Y - s.Err[j]
		if logY && lo <= 0 {
			lo = pts[j].Y / 10
		}
		ring = append(ring, plotter.XY{X: pts[j].X, Y: lo})
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil, err
	}
	r, g, b, _ := c.RGBA()
	poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x38}
	poly.LineStyle.Width = 0
	return poly, nil
}

// addSeries draws every series and returns the x range they span.
func (lp LinePlot) addSeries(p *plot.Plot) (xmin, xmax float64, err error) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i, s := range lp.Series {
		if len(s.X) != len(s.Y) || (s.Err != nil && len(s.Err) != len(s.Y)) {
			return 0, 0, fmt.Errorf("plot %q: series %q has %d x, %d y and %d spread values", lp.Title, s.Name, len(s.X), len(s.Y), len(s.Err))
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if !finite(x) || !finite(y) || (s.Err != nil && (!finite(s.Err[j]) || s.Err[j] < 0)) {
				return 0, 0, fmt.Errorf("plot %q: series %q point %d is not finite (or its spread is negative)", lp.Title, s.Name, j)
			}
			if (lp.LogX && x <= 0) || (lp.LogY && y <= 0) {
				return 0, 0, fmt.Errorf("plot %q: series %q point %d is not positive on a log axis", lp.Title, s.Name, j)
			}
			pts[j] = plotter.XY{X: x, Y: y}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return 0, 0, fmt.Errorf("plot %q: %w", lp.Title, err)
		}
		c := Color(i)
		if s.Err != nil {
			poly, err := band(s, pts, c, lp.LogY)
			if err != nil {
				return 0, 0, fmt.Errorf("plot %q: %w", lp.Title, err)
			}
			p.Add(poly)
		}
		line.Color = c
		line.Width = vg.Points(1.5)
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		points.Color = c
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(2)
		p.Add(line, points)
		if s.Name != "" {
			p.Legend.Add(s.Name, line, points)
		}
	}
	return xmin, xmax, nil
}

// addHLines draws the reference lines across [xmin, xmax].
func (lp LinePlot) addHLines(p *plot.Plot, xmin, xmax float64) error {
	for _, h := range lp.HLines {
		if math.IsInf(xmin, 0) {
			break
		}
		ref, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: h.Y}, {X: xmax, Y: h.Y}})
		if err != nil {
			return fmt.Errorf("plot %q: %w", lp.Title, err)
		}
		ref.Color = color.Gray{Y: 0x55}
		ref.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(ref)
		if h.Label != "" {
			p.Legend.Add(h.Label, ref)
		}
	}
	return nil
}

// render leaves headroom for the legend, sizes the canvas and writes SVG.
func (lp LinePlot) render(p *plot.Plot) ([]byte, error) {
	// Leave headroom above the data for the legend, which sits top left.
	if n := legendEntries(lp); n > 0 {
		frac := 0.09 * float64(n)
		if lp.LogY && p.Y.Min > 0 {
			p.Y.Max = p.Y.Max * math.Pow(p.Y.Max/p.Y.Min, frac)
		} else {
			p.Y.Max += (p.Y.Max - p.Y.Min) * frac
		}
	}
	if len(lp.XCategories) > 0 {
		p.X.Min, p.X.Max = -0.5, float64(len(lp.XCategories))-0.5
	}
	return writeSVG(p, lp.Title, lp.Width, lp.Height)
}

// writeSVG renders p at w x h centimetres (zero: 16 x 10) as SVG.
func writeSVG(p *plot.Plot, title string, w, hgt float64) ([]byte, error) {
	if w == 0 {
		w = 16
	}
	if hgt == 0 {
		hgt = 10
	}
	fitTitle(p, vg.Length(w)*vg.Centimeter)
	wt, err := p.WriterTo(vg.Length(w)*vg.Centimeter, vg.Length(hgt)*vg.Centimeter, "svg")
	if err != nil {
		return nil, fmt.Errorf("plot %q: %w", title, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot %q: %w", title, err)
	}
	return buf.Bytes(), nil
}

// fitTitle keeps p's title inside a canvas w wide: a title too long for
// one line is broken at the separator (": ", ", ", " ") nearest its middle,
// and a line still too long is set in a smaller font.
func fitTitle(p *plot.Plot, w vg.Length) {
	sty := &p.Title.TextStyle
	room := w - vg.Points(8)
	if p.Title.Text == "" || sty.Width(p.Title.Text) <= room {
		return
	}
	t := p.Title.Text
	best := -1
	for _, sep := range []string{": ", ", ", " "} {
		for i := 0; i+len(sep) <= len(t); i++ {
			if t[i:i+len(sep)] == sep && (best < 0 || math.Abs(float64(i-len(t)/2)) < math.Abs(float64(best-len(t)/2))) {
				best = i + len(sep) - 1
			}
		}
		if best >= 0 {
			break
		}
	}
	if best > 0 {
		p.Title.Text = t[:best] + "\n" + t[best+1:]
	}
	if tw := sty.Width(p.Title.Text); tw > room {
		sty.Font.Size = vg.Length(math.Max(7, float64(sty.Font.Size)*float64(room/tw)))
	}
}

// legendPadding separates legend entries, which touch at gonum's default.
var legendPadding = vg.Points(2)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Figure renders lp and wraps it as a Figure with the given file stem.
func (lp LinePlot) Figure(name string) (Figure, error) {
	svg, err := lp.SVG()
	if err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: lp.Title, SVG: svg}, nil
}

// niceTicks puts major ticks at 1, 2 and 5 times a power of ten: four to
// seven on a linear axis, and every such value within range on a log axis (with
// labels only on a readable subset). An integer axis (epochs, counts) never
// gets a step below 1.
type niceTicks struct{ log, integer bool }

func (t niceTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: label(min)}}
	}
	var ticks []plot.Tick
	if t.log && min > 0 {
		for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, e)
				if v >= min*(1-1e-9) && v <= max*(1+1e-9) {
					ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
				}
			}
		}
		if len(ticks) >= 2 {
			return ticks
		}
		// Less than a decade: fall through to linear ticks.
	}
	raw := (max - min) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	// The 1-2-5 step nearest (in ratio) to a fifth of the range: four to
	// seven ticks.
	step, best := mag, math.Inf(1)
	for _, m := range []float64{1, 2, 5, 10} {
		if d := math.Abs(math.Log(m * mag / raw)); d < best {
			step, best = m*mag, d
		}
	}
	if t.integer && step < 1 {
		step = 1
	}
	for v := math.Ceil(min/step) * step; v <= max+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
	}
	return ticks
}

func label(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func legendEntries(lp LinePlot) int {
	n := 0
	for _, s := range lp.Series {
		if s.Name != "" {
			n++
		}
	}
	for _, h := range lp.HLines {
		if h.Label != "" {
			n++
		}
	}
	return n
}
