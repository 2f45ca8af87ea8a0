package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"sort"
)

// Gantt is a timeline figure: one row (lane) per activity, bars of time on
// a shared axis, a legend of bar classes under the plot (never over the
// bars). It renders what the caller computed; it computes nothing.
type Gantt struct {
	Title  string
	XLabel string
	// Lanes are the row labels, top to bottom.
	Lanes []string
	// Classes name the bar kinds for the legend; a bar's Class indexes it
	// and picks its colour. The legend lists the classes that have a bar
	// of some length; bars of none are not drawn.
	Classes []string
	Bars    []GanttBar
	// Width is the plot's width in pixels (default 900).
	Width float64
}

// GanttBar is one bar: Lane and Class index Gantt.Lanes and
// Gantt.Classes; Start and End are in the axis unit.
type GanttBar struct {
	Lane, Class int
	Start, End  float64
}

const (
	ganttLabelW  = 260.0
	ganttLaneH   = 22.0
	ganttTop     = 34.0
	ganttAxisH   = 40.0
	ganttLegendH = 20.0
)

// SVG renders the chart. Bars narrower than half a pixel that touch the
// next bar of the same lane and class are merged, so the file's size is
// bounded by the plot's pixels, not by the bar count.
func (g Gantt) SVG() ([]byte, error) {
	if len(g.Lanes) == 0 || len(g.Classes) == 0 {
		return nil, fmt.Errorf("gantt %q: no lanes or no classes", g.Title)
	}
	w := g.Width
	if w <= 0 {
		w = 900
	}
	hi := 0.0
	used := make([]bool, len(g.Classes))
	var legend []int
	for i, b := range g.Bars {
		if b.Lane < 0 || b.Lane >= len(g.Lanes) || b.Class < 0 || b.Class >= len(g.Classes) {
			return nil, fmt.Errorf("gantt %q: bar %d in lane %d, class %d", g.Title, i, b.Lane, b.Class)
		}
		if !finite(b.Start) || !finite(b.End) || b.Start < 0 || b.End < b.Start {
			return nil, fmt.Errorf("gantt %q: bar %d from %v to %v", g.Title, i, b.Start, b.End)
		}
		hi = math.Max(hi, b.End)
		used[b.Class] = used[b.Class] || b.End > b.Start
	}
	for c, u := range used {
		if u {
			legend = append(legend, c)
		}
	}
	if hi == 0 {
		hi = 1
	}
	ticks := niceTicks{}.Ticks(0, hi)
	if n := len(ticks); n > 0 && ticks[n-1].Value > hi {
		hi = ticks[n-1].Value
	}
	plotW := w - ganttLabelW - 20
	x := func(v float64) float64 { return ganttLabelW + v/hi*plotW }
	plotH := float64(len(g.Lanes)) * ganttLaneH
	legendRows := (len(legend) + 1) / 2
	total := ganttTop + plotH + ganttAxisH + float64(legendRows)*ganttLegendH + 10
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`, w, total, w, total)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.1f" y="20" font-size="14">%s</text>`, ganttLabelW, html.EscapeString(g.Title))
	for i, l := range g.Lanes {
		y := ganttTop + float64(i)*ganttLaneH
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f6f6f6"/>`, ganttLabelW, y, plotW, ganttLaneH)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, ganttLabelW-6, y+ganttLaneH*0.7, html.EscapeString(l))
	}
	for _, bar := range mergeBars(g.Bars, hi/plotW/2) {
		if bar.End == bar.Start {
			continue // an empty phase (a trace without forward time) draws nothing
		}
		y := ganttTop + float64(bar.Lane)*ganttLaneH + 3
		fmt.Fprintf(&b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"/>`, x(bar.Start), y, math.Max(x(bar.End)-x(bar.Start), 0.5), ganttLaneH-6, hexColor(bar.Class))
	}
	axisY := ganttTop + plotH
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`, ganttLabelW, axisY, ganttLabelW+plotW, axisY)
	for _, t := range ticks {
		if t.Label == "" || t.Value > hi {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			x(t.Value), axisY, x(t.Value), axisY+4, x(t.Value), axisY+16, html.EscapeString(t.Label))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, ganttLabelW+plotW/2, axisY+32, html.EscapeString(g.XLabel))
	// The legend sits under the axis, two entries a row across the whole
	// width, so it never covers a bar and long names have room.
	for i, c := range legend {
		lx := 10 + float64(i%2)*(w-20)/2
		ly := axisY + ganttAxisH + float64(i/2)*ganttLegendH
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`, lx, ly, hexColor(c), lx+16, ly+10, html.EscapeString(g.Classes[c]))
	}
	b.WriteString(`</svg>`)
	return b.Bytes(), nil
}

// mergeBars merges, per lane and class, bars that overlap or lie within
// eps of each other, and returns them in a fixed order.
func mergeBars(bars []GanttBar, eps float64) []GanttBar {
	s := append([]GanttBar(nil), bars...)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Lane != s[j].Lane {
			return s[i].Lane < s[j].Lane
		}
		if s[i].Class != s[j].Class {
			return s[i].Class < s[j].Class
		}
		return s[i].Start < s[j].Start
	})
	var out []GanttBar
	for _, b := range s {
		if n := len(out); n > 0 && out[n-1].Lane == b.Lane && out[n-1].Class == b.Class && b.Start <= out[n-1].End+eps {
			out[n-1].End = math.Max(out[n-1].End, b.End)
			continue
		}
		out = append(out, b)
	}
	return out
}

// hexColor is the palette's colour i as #rrggbb.
func hexColor(i int) string {
	r, gr, bl, _ := Color(i).RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, gr>>8, bl>>8)
}

// Figure renders the chart as a named figure.
func (g Gantt) Figure(name string) (Figure, error) {
	svg, err := g.SVG()
	if err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: g.Title, SVG: svg}, nil
}
