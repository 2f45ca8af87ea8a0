package netsim

import (
	"fmt"
	"math"

	"github.com/neuronfabric/nfabric/control"
)

// LinkLoad is one link direction over one interval, in utilization terms.
type LinkLoad struct {
	Link string `json:"link"`
	// UGrad and UBg are the shares of the interval the link spent sending
	// gradient and background packets (UGrad + UBg <= 1).
	UGrad float64 `json:"u_grad"`
	UBg   float64 `json:"u_bg"`
	// QueueBytes is the queue at the end of the interval, QueueMaxBytes its
	// maximum during it.
	QueueBytes    int64 `json:"queue_bytes"`
	QueueMaxBytes int64 `json:"queue_max_bytes"`
	// RateGBps is the unscaled link rate in GB/s.
	RateGBps float64 `json:"rate_gbps"`
}

// Interval is every link in one sampling interval.
type Interval struct {
	// EndNS is the end of the interval.
	EndNS int64      `json:"end_ns"`
	Links []LinkLoad `json:"links"`
}

// Loads groups the run's link samples by interval, checking that every
// interval lists the same links in the same order and that busy times fit
// the interval.
func (r *Result) Loads() ([]Interval, error) {
	var out []Interval
	s := r.Config.scale()
	for i := 0; i < len(r.Links); {
		t := r.Links[i].TNS
		iv := Interval{EndNS: t}
		for ; i < len(r.Links) && r.Links[i].TNS == t; i++ {
			ls := r.Links[i]
			if ls.BusyGradNS+ls.BusyBgNS > r.Interval {
				return nil, fmt.Errorf("netsim: link %s at %d ns: busy %d ns exceeds the %d ns interval", ls.Link, t, ls.BusyGradNS+ls.BusyBgNS, r.Interval)
			}
			iv.Links = append(iv.Links, LinkLoad{Link: ls.Link, UGrad: float64(ls.BusyGradNS) / float64(r.Interval),
				UBg: float64(ls.BusyBgNS) / float64(r.Interval), QueueBytes: ls.QueueBytes, QueueMaxBytes: ls.QueueMaxBytes,
				RateGBps: float64(ls.RateBps) / 8 * s / 1e9})
		}
		if len(out) > 0 {
			prev := out[0].Links
			if len(prev) != len(iv.Links) {
				return nil, fmt.Errorf("netsim: interval at %d ns has %d links, the first had %d", t, len(iv.Links), len(prev))
			}
			for j := range prev {
				if prev[j].Link != iv.Links[j].Link {
					return nil, fmt.Errorf("netsim: interval at %d ns lists link %s where the first listed %s", t, iv.Links[j].Link, prev[j].Link)
				}
			}
		}
		out = append(out, iv)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("netsim: ns-3 reported no link samples")
	}
	return out, nil
}

// RingSendBytes is the bytes worker i of a w-worker ring sends for an
// All-Reduce of S bytes: the 2(w-1) chunks of its steps, chunk j being
// S/w bytes plus one for j < S mod w (the ns-3 program's chunking).
func RingSendBytes(i, w int, S int64) int64 {
	chunk := func(j int) int64 {
		n := S / int64(w)
		if int64(j) < S%int64(w) {
			n++
		}
		return n
	}
	mod := func(a int) int { return ((a % w) + w) % w }
	var n int64
	for k := 0; k < w-1; k++ {
		n += chunk(mod(i-k)) + chunk(mod(i+1-k))
	}
	return n
}

// Sample is one telemetry sample with where it came from.
type Sample struct {
	EndNS int64 `json:"end_ns"`
	// Host is the worker whose ring hop (to its successor) is the
	// bottleneck; Link the index, in the interval's links, of that hop's
	// link with the least capacity left.
	Host int `json:"host"`
	Link int `json:"link"`
	// NeedBytes is the unscaled gradient bytes the host had to deliver in
	// the interval: its backlog at the start plus what was released.
	NeedBytes float64 `json:"need_bytes"`
	// DemandGBps is the gradient load the host offered its hop in the
	// interval: NeedBytes over the interval, but no more than the hop's
	// line rate (the least rate of its links), since a sender cannot put
	// more than that on the wire in one interval; a backlog larger than
	// that is still offered in the next interval. CapacityGBps is the
	// least bandwidth background left on the hop's links, rate(1 - u_bg).
	// Demand against capacity is the Commander's question: does the
	// gradient traffic fit what background leaves?
	DemandGBps   float64 `json:"demand_gbps"`
	CapacityGBps float64 `json:"capacity_gbps"`
	// CarriedGBps is the gradient traffic the bottleneck link (Link)
	// carried in the interval, rate x u_grad: what TCP got through, at
	// most CapacityGBps.
	CarriedGBps float64 `json:"carried_gbps"`
}

// Pressure is DemandGBps / CapacityGBps.
func (s Sample) Pressure() float64 { return s.DemandGBps / s.CapacityGBps }

// capacity is the bandwidth background left on l, in GB/s.
func (l LinkLoad) capacity() float64 { return l.RateGBps * math.Max(1-l.UBg, 1e-3) }

// hop returns the links of host h's ring hop: its uplink, the fabric (the
// leaf-spine pair with the most capacity left, when the successor is on
// another leaf) and the successor's downlink.
func (c Config) hop(h int, byName map[string]int, links []LinkLoad) ([]int, error) {
	w := c.Workers
	next := (h + 1) % w
	sw := func(x int) string {
		if c.Topology == LeafSpine {
			return fmt.Sprintf("leaf%d", x/(w/c.Leaves))
		}
		return "s0"
	}
	var out []int
	for _, n := range []string{fmt.Sprintf("h%d>%s", h, sw(h)), fmt.Sprintf("%s>h%d", sw(next), next)} {
		i, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("netsim: the ns-3 run reported no link %s", n)
		}
		out = append(out, i)
	}
	if c.Topology == LeafSpine && sw(h) != sw(next) {
		best, bestCap := []int(nil), -1.0
		for s := 0; s < c.Spines; s++ {
			up, ok1 := byName[fmt.Sprintf("%s>spine%d", sw(h), s)]
			down, ok2 := byName[fmt.Sprintf("spine%d>%s", s, sw(next))]
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("netsim: the ns-3 run reported no link between %s, spine%d and %s", sw(h), s, sw(next))
			}
			if cp := math.Min(links[up].capacity(), links[down].capacity()); cp > bestCap {
				best, bestCap = []int{up, down}, cp
			}
		}
		out = append(out, best...)
	}
	return out, nil
}

// Samples maps the run onto telemetry samples (the package doc's mapping),
// one per interval, and returns them with the link loads they came from.
func (r *Result) Samples() ([]Sample, []Interval, error) {
	loads, err := r.Loads()
	if err != nil {
		return nil, nil, err
	}
	w := r.Config.Workers
	if len(r.Hosts) != len(loads)*w {
		return nil, nil, fmt.Errorf("netsim: %d host samples for %d intervals of %d hosts", len(r.Hosts), len(loads), w)
	}
	if r.Schedule == nil {
		return nil, nil, fmt.Errorf("netsim: result without its schedule")
	}
	byName := map[string]int{}
	for i, l := range loads[0].Links {
		byName[l.Link] = i
	}
	scale := r.Config.scale()
	owed := make([]int64, w) // scaled bytes released so far, per host
	next := 0                // next release not yet counted
	prev := make([]int64, w) // delivered by the previous interval's end
	out := make([]Sample, len(loads))
	for k, iv := range loads {
		for ; next < len(r.Schedule.Releases) && r.Schedule.Releases[next].AtNS < iv.EndNS; next++ {
			for h := range owed {
				owed[h] += RingSendBytes(h, w, r.Schedule.Releases[next].Bytes)
			}
		}
		best := Sample{EndNS: iv.EndNS, Host: -1}
		for h := 0; h < w; h++ {
			hs := r.Hosts[k*w+h]
			if hs.TNS != iv.EndNS || hs.Host != fmt.Sprintf("h%d", h) {
				return nil, nil, fmt.Errorf("netsim: host sample %s at %d ns where h%d at %d ns was expected", hs.Host, hs.TNS, h, iv.EndNS)
			}
			path, err := r.Config.hop(h, byName, iv.Links)
			if err != nil {
				return nil, nil, err
			}
			s := Sample{EndNS: iv.EndNS, Host: h, Link: path[0], NeedBytes: float64(max(owed[h]-prev[h], 0)) * scale}
			s.CapacityGBps = iv.Links[path[0]].capacity()
			line := iv.Links[path[0]].RateGBps
			for _, i := range path[1:] {
				if cp := iv.Links[i].capacity(); cp < s.CapacityGBps {
					s.Link, s.CapacityGBps = i, cp
				}
				line = math.Min(line, iv.Links[i].RateGBps)
			}
			// bytes per ns = GB/s, offered at most at the line rate
			s.DemandGBps = math.Min(s.NeedBytes/float64(r.Interval), line)
			s.CarriedGBps = iv.Links[s.Link].UGrad * iv.Links[s.Link].RateGBps
			if best.Host < 0 || s.Pressure() > best.Pressure() {
				best = s
			}
			prev[h] = hs.Delivered
		}
		out[k] = best
	}
	return out, loads, nil
}

// Telemetry converts the run into the Commander's telemetry trace: one
// sample per interval, line reads following demand at 64 bytes per line.
func (r *Result) Telemetry() ([]control.Telemetry, error) {
	ss, _, err := r.Samples()
	if err != nil {
		return nil, err
	}
	out := make([]control.Telemetry, len(ss))
	for i, s := range ss {
		out[i] = control.Telemetry{TimeNS: s.EndNS, DemandGBps: s.DemandGBps, CapacityGBps: s.CapacityGBps, LineReads: s.DemandGBps * 1e9 / 64}
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("netsim: telemetry at %d ns: %w", s.EndNS, err)
		}
	}
	return out, nil
}

// Verdict is how the Commander judges a telemetry trace.
type Verdict struct {
	// Label is "healthy" when the Commander never granted relief,
	// "congested" when it granted relief on at least half the samples, and
	// "mixed" otherwise.
	Label string `json:"label"`
	// Relief is the share of samples after which relief was granted.
	Relief float64 `json:"relief"`
	// MeanPressure and PeakPressure are over the raw samples.
	MeanPressure float64 `json:"mean_pressure"`
	PeakPressure float64 `json:"peak_pressure"`
	// Modes is the mode after each sample: "low-bit" (relief) or "fp32".
	Modes []string `json:"modes,omitempty"`
}

// Judge replays tel through control.Plane's own Commander with thresholds
// cc (Enabled is forced on) on a group that runs low-bit whenever relief is
// granted (LowBitDefault, no warm-up), and reports what it chose.
func Judge(tel []control.Telemetry, cc control.CommanderConfig) (Verdict, error) {
	cfg := control.DefaultConfig("gradients")
	cfg.Default, cfg.WarmupSteps = control.LowBitDefault, 0
	cfg.Commander = cc
	cfg.Commander.Enabled = true
	p, err := control.New(cfg)
	if err != nil {
		return Verdict{}, fmt.Errorf("netsim: judge: %w", err)
	}
	if len(tel) == 0 {
		return Verdict{}, fmt.Errorf("netsim: judge: empty telemetry trace")
	}
	v := Verdict{Modes: make([]string, len(tel))}
	relief := 0
	for i, t := range tel {
		if _, err := p.Step(control.Event{Type: control.EvTelemetry, Telemetry: t}); err != nil {
			return Verdict{}, fmt.Errorf("netsim: judge: sample %d: %w", i, err)
		}
		if _, err := p.Step(control.Event{Type: control.EvStep, Step: int64(i), TimeNS: t.TimeNS}); err != nil {
			return Verdict{}, fmt.Errorf("netsim: judge: %w", err)
		}
		m, _ := p.Mode("gradients")
		v.Modes[i] = "fp32"
		if m.LowBit() {
			relief++
			v.Modes[i] = "low-bit"
		}
		pr := t.Pressure()
		v.MeanPressure += pr / float64(len(tel))
		v.PeakPressure = math.Max(v.PeakPressure, pr)
	}
	v.Relief = float64(relief) / float64(len(tel))
	switch {
	case relief == 0:
		v.Label = "healthy"
	case v.Relief >= 0.5:
		v.Label = "congested"
	default:
		v.Label = "mixed"
	}
	return v, nil
}
