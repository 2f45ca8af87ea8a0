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
func (lp LinePlot) SVG() ([]byte, error) {
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
	p.X.Tick.Marker = niceTicks{log: lp.LogX}
	p.Y.Tick.Marker = niceTicks{log: lp.LogY}
	if lp.LogX {
		p.X.Scale = plot.LogScale{}
	}
	if lp.LogY {
		p.Y.Scale = plot.LogScale{}
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

// addSeries draws every series and returns the x range they span.
func (lp LinePlot) addSeries(p *plot.Plot) (xmin, xmax float64, err error) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i, s := range lp.Series {
		if len(s.X) != len(s.Y) {
			return 0, 0, fmt.Errorf("plot %q: series %q has %d x and %d y values", lp.Title, s.Name, len(s.X), len(s.Y))
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
				return 0, 0, fmt.Errorf("plot %q: series %q point %d is not finite", lp.Title, s.Name, j)
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
		frac := 0.075 * float64(n)
		if lp.LogY && p.Y.Min > 0 {
			p.Y.Max = p.Y.Max * math.Pow(p.Y.Max/p.Y.Min, frac)
		} else {
			p.Y.Max += (p.Y.Max - p.Y.Min) * frac
		}
	}
	if len(lp.XCategories) > 0 {
		p.X.Min, p.X.Max = -0.5, float64(len(lp.XCategories))-0.5
	}
	w, hgt := lp.Width, lp.Height
	if w == 0 {
		w = 16
	}
	if hgt == 0 {
		hgt = 10
	}
	wt, err := p.WriterTo(vg.Length(w)*vg.Centimeter, vg.Length(hgt)*vg.Centimeter, "svg")
	if err != nil {
		return nil, fmt.Errorf("plot %q: %w", lp.Title, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot %q: %w", lp.Title, err)
	}
	return buf.Bytes(), nil
}

// Figure renders lp and wraps it as a Figure with the given file stem.
func (lp LinePlot) Figure(name string) (Figure, error) {
	svg, err := lp.SVG()
	if err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: lp.Title, SVG: svg}, nil
}

// niceTicks puts major ticks at 1, 2 and 5 times a power of ten: about five
// on a linear axis, and every such value within range on a log axis (with
// labels only on a readable subset).
type niceTicks struct{ log bool }

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
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
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
