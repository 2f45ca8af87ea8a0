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

// Pressure is UGrad / (1 - UBg): the gradient traffic carried over the
// bandwidth background traffic left (see the package doc). A link fully
// taken by background has pressure UGrad / 1e-3.
func (l LinkLoad) Pressure() float64 { return l.UGrad / math.Max(1-l.UBg, 1e-3) }

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

// Bottleneck returns the index of the link with the highest pressure in
// iv (the first on ties).
func (iv Interval) Bottleneck() int {
	best := 0
	for j, l := range iv.Links {
		if l.Pressure() > iv.Links[best].Pressure() {
			best = j
		}
	}
	return best
}

// Telemetry converts the run into the Commander's telemetry trace, one
// sample per interval from its bottleneck link (the mapping of the
// package doc).
func (r *Result) Telemetry() ([]control.Telemetry, error) {
	loads, err := r.Loads()
	if err != nil {
		return nil, err
	}
	out := make([]control.Telemetry, len(loads))
	for i, iv := range loads {
		l := iv.Links[iv.Bottleneck()]
		demand := l.RateGBps * l.UGrad
		out[i] = control.Telemetry{TimeNS: iv.EndNS, DemandGBps: demand,
			CapacityGBps: l.RateGBps * math.Max(1-l.UBg, 1e-3), LineReads: demand * 1e9 / 64}
		if err := out[i].Validate(); err != nil {
			return nil, fmt.Errorf("netsim: telemetry at %d ns: %w", iv.EndNS, err)
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
	Modes []string `json:"-"`
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
