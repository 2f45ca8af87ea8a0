package netsim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Totals summarises a run's bucket All-Reduces.
type Totals struct {
	Released int `json:"released"`
	Finished int `json:"finished"`
	// MeanSeconds is the mean release-to-finish time of finished buckets.
	MeanSeconds float64 `json:"mean_s"`
}

// BucketTotals summarises r's buckets.
func (r *Result) BucketTotals() Totals {
	t := Totals{Released: len(r.Buckets)}
	var sum float64
	for _, b := range r.Buckets {
		if b.FinishNS >= 0 {
			t.Finished++
			sum += float64(b.FinishNS-b.ReleaseNS) * 1e-9
		}
	}
	if t.Finished > 0 {
		t.MeanSeconds = sum / float64(t.Finished)
	}
	return t
}

// FigureHeader is the first line of the figure data WriteLoads writes.
const FigureHeader = "t_ns,link,rate_gbps,u_grad,u_bg,grad_gbps,bg_gbps,queue_bytes,queue_max_bytes,bottleneck,demand_gbps,capacity_gbps,mode"

// WriteLoads writes the data of the telemetry figure: for every interval
// and link, its unscaled rate, its gradient and background utilization
// (shares of the interval) and the traffic they carried (grad_gbps = rate
// u_grad, bg_gbps = rate u_bg), its queue occupancy, whether it was the
// interval's bottleneck (the link of samples[i], whose capacity the
// telemetry sample reports), on that row the sample's offered gradient
// load and the capacity background left (demand_gbps, capacity_gbps, the
// telemetry CSV's columns; empty on the other rows), and the Commander's
// mode after that sample (modes[i], from Judge; empty when modes is nil).
// Plot u_grad + u_bg and queue_bytes over t_ns per link, and shade the
// low-bit intervals.
func WriteLoads(w io.Writer, loads []Interval, samples []Sample, modes []string) error {
	if (modes != nil && len(modes) != len(loads)) || len(samples) != len(loads) {
		return fmt.Errorf("netsim: %d modes and %d samples for %d intervals", len(modes), len(samples), len(loads))
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, FigureHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	for i, iv := range loads {
		b := samples[i].Link
		m := ""
		if modes != nil {
			m = modes[i]
		}
		for j, l := range iv.Links {
			dem, capy := "", ""
			if j == b {
				dem, capy = f(samples[i].DemandGBps), f(samples[i].CapacityGBps)
			}
			fmt.Fprintf(bw, "%d,%s,%s,%s,%s,%s,%s,%d,%d,%t,%s,%s,%s\n", iv.EndNS, l.Link, f(l.RateGBps), f(l.UGrad), f(l.UBg),
				f(l.RateGBps*l.UGrad), f(l.RateGBps*l.UBg), l.QueueBytes, l.QueueMaxBytes, j == b, dem, capy, m)
		}
	}
	return bw.Flush()
}

// Series is one line of the telemetry figure.
type Series struct {
	Name string `json:"name"`
	// X is time in ms, Y the value.
	X []float64 `json:"x"`
	Y []float64 `json:"y"`
}

// FigureSeries returns the telemetry figure's lines: the bottleneck
// link's utilization (gradient + background) and its gradient share, the
// largest queue occupancy over all links as a share of its maximum over
// the run, the telemetry's pressure (capped at 2 for the plot), and the
// Commander's mode (1 = low-bit relief, 0 = FP32) after each sample.
func FigureSeries(loads []Interval, samples []Sample, modes []string) ([]Series, error) {
	if len(modes) != len(loads) || len(samples) != len(loads) {
		return nil, fmt.Errorf("netsim: %d modes and %d samples for %d intervals", len(modes), len(samples), len(loads))
	}
	util := Series{Name: "bottleneck utilization"}
	grad := Series{Name: "bottleneck gradient share"}
	queue := Series{Name: "largest queue / its peak"}
	press := Series{Name: "pressure (demand / capacity, capped at 2)"}
	mode := Series{Name: "Commander low-bit (1) or FP32 (0)"}
	var peak int64 = 1
	for _, iv := range loads {
		for _, l := range iv.Links {
			peak = max(peak, l.QueueMaxBytes, l.QueueBytes)
		}
	}
	for i, iv := range loads {
		x := float64(iv.EndNS) / 1e6
		l := iv.Links[samples[i].Link]
		var q int64
		for _, k := range iv.Links {
			q = max(q, k.QueueBytes)
		}
		m := 0.0
		if modes[i] == "low-bit" {
			m = 1
		}
		for _, s := range []struct {
			s *Series
			y float64
		}{{&util, l.UGrad + l.UBg}, {&grad, l.UGrad}, {&queue, float64(q) / float64(peak)}, {&press, math.Min(samples[i].Pressure(), 2)}, {&mode, m}} {
			s.s.X = append(s.s.X, x)
			s.s.Y = append(s.s.Y, s.y)
		}
	}
	return []Series{util, grad, queue, press, mode}, nil
}
