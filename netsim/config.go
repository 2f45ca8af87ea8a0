package netsim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Topology is the network shape.
type Topology uint8

const (
	// Star joins every host to one switch.
	Star Topology = iota
	// LeafSpine spreads the hosts evenly over Leaves leaf switches, each
	// linked to every one of Spines spine switches.
	LeafSpine
)

func (t Topology) String() string {
	if t == LeafSpine {
		return "leafspine"
	}
	return "star"
}

// ParseTopology accepts star and leafspine (leaf-spine).
func ParseTopology(s string) (Topology, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "star":
		return Star, nil
	case "leafspine", "leaf-spine":
		return LeafSpine, nil
	}
	return 0, fmt.Errorf("unknown topology %q (want star or leafspine)", s)
}

// Background is the other traffic sharing the network.
type Background struct {
	// Bulk is the number of unlimited bulk TCP flows.
	Bulk int `json:"bulk"`
	// OnOff is the number of UDP on/off flows, each sending at Share of the
	// host link rate while on, with exponential on and off times of means
	// OnNS and OffNS (OffNS 0: always on).
	OnOff int     `json:"onoff"`
	Share float64 `json:"share"`
	OnNS  int64   `json:"on_ns"`
	OffNS int64   `json:"off_ns"`
}

// String renders b in the syntax ParseBackground reads.
func (b Background) String() string {
	var parts []string
	if b.Bulk > 0 {
		parts = append(parts, fmt.Sprintf("bulk=%d", b.Bulk))
	}
	if b.OnOff > 0 {
		parts = append(parts, fmt.Sprintf("onoff=%d@%s", b.OnOff, strconv.FormatFloat(b.Share, 'g', -1, 64)))
		if b.OnNS > 0 || b.OffNS > 0 {
			parts = append(parts, fmt.Sprintf("on=%dus", b.OnNS/1000), fmt.Sprintf("off=%dus", b.OffNS/1000))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// ParseBackground reads a background spec: "none", or comma-separated
// items bulk=N (N bulk TCP flows), onoff=N@SHARE (N UDP on/off flows at
// SHARE of the host rate while on, 0 < SHARE <= 1), on=DUR and off=DUR (mean
// on and off times as Go durations, "5ms"; defaults 5ms each; off=0 keeps
// the flows always on). Example: "bulk=2,onoff=8@0.9,off=0".
func ParseBackground(s string) (Background, error) {
	b := Background{Share: 0.5, OnNS: 5e6, OffNS: 5e6}
	t := strings.TrimSpace(s)
	if t == "" || t == "none" {
		return Background{}, nil
	}
	for _, item := range strings.Split(t, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return Background{}, fmt.Errorf("background %q: item %q is not key=value", s, item)
		}
		switch k {
		case "bulk":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 4096 {
				return Background{}, fmt.Errorf("background %q: bulk=%q is not a flow count in 0..4096", s, v)
			}
			b.Bulk = n
		case "onoff":
			ns, share, _ := strings.Cut(v, "@")
			n, err := strconv.Atoi(ns)
			if err != nil || n < 0 || n > 4096 {
				return Background{}, fmt.Errorf("background %q: onoff=%q is not a flow count in 0..4096", s, v)
			}
			b.OnOff = n
			if share != "" {
				f, err := strconv.ParseFloat(share, 64)
				if err != nil || !(f > 0 && f <= 1) {
					return Background{}, fmt.Errorf("background %q: onoff share %q is not in (0, 1]", s, share)
				}
				b.Share = f
			}
		case "on", "off":
			d, err := parseDurationNS(v)
			if err != nil || (k == "on" && d == 0) {
				return Background{}, fmt.Errorf("background %q: %s=%q is not a positive duration such as 5ms", s, k, v)
			}
			if k == "on" {
				b.OnNS = d
			} else {
				b.OffNS = d
			}
		default:
			return Background{}, fmt.Errorf("background %q: unknown item %q (want bulk, onoff, on, off)", s, k)
		}
	}
	if b.OnOff == 0 {
		b.Share, b.OnNS, b.OffNS = 0, 0, 0
	}
	return b, nil
}

// Config is one ns-3 run. Rates are in bytes per second and unscaled; the
// driver divides them by Scale.
type Config struct {
	Workers  int      `json:"workers"`
	Topology Topology `json:"-"`
	// Leaves and Spines shape LeafSpine; Workers must be a multiple of Leaves.
	Leaves int `json:"leaves,omitempty"`
	Spines int `json:"spines,omitempty"`
	// HostRate is each host link's rate; FabricRate the leaf-spine links'
	// (0: HostRate).
	HostRate   float64 `json:"host_rate"`
	FabricRate float64 `json:"fabric_rate,omitempty"`
	// DelayNS is each link's propagation delay.
	DelayNS int64 `json:"delay_ns"`
	// QueuePackets is each device queue's size (drop-tail).
	QueuePackets int        `json:"queue_packets"`
	Background   Background `json:"background"`
	// Steps is the number of training steps simulated.
	Steps int `json:"steps"`
	// IntervalNS is the sampling interval; 0 means a tenth of the step.
	IntervalNS int64 `json:"interval_ns"`
	// Scale divides bucket bytes and link rates (see the package doc); 0
	// means 1.
	Scale float64 `json:"scale"`
	Seed  uint64  `json:"seed"`
}

// MaxSteps bounds Config.Steps: the schedule holds one release per bucket
// per step (a few hundred thousand at the limit), and every step is
// simulated packet by packet.
const MaxSteps = 10_000

// Validate checks the configuration and names the bad field.
func (c Config) Validate() error {
	switch {
	case c.Workers < 2 || c.Workers > 1024:
		return fmt.Errorf("netsim: workers %d not in 2..1024", c.Workers)
	case c.Topology != Star && c.Topology != LeafSpine:
		return fmt.Errorf("netsim: unknown topology %d", c.Topology)
	case c.Topology == LeafSpine && (c.Leaves < 1 || c.Spines < 1 || c.Workers%c.Leaves != 0):
		return fmt.Errorf("netsim: leaf-spine needs leaves >= 1, spines >= 1 and workers (%d) a multiple of leaves (%d)", c.Workers, c.Leaves)
	case !(c.HostRate > 0) || math.IsInf(c.HostRate, 0):
		return fmt.Errorf("netsim: host rate %v B/s must be finite and > 0", c.HostRate)
	case !(c.FabricRate >= 0) || math.IsInf(c.FabricRate, 0):
		return fmt.Errorf("netsim: fabric rate %v B/s must be finite and >= 0", c.FabricRate)
	case c.DelayNS < 0:
		return fmt.Errorf("netsim: link delay %d ns is negative", c.DelayNS)
	case c.QueuePackets < 1:
		return fmt.Errorf("netsim: queue of %d packets; want >= 1", c.QueuePackets)
	case c.Steps < 1 || c.Steps > MaxSteps:
		return fmt.Errorf("netsim: %d steps; want 1 to %d", c.Steps, MaxSteps)
	case c.IntervalNS < 0:
		return fmt.Errorf("netsim: sampling interval %d ns is negative", c.IntervalNS)
	case !(c.Scale == 0 || c.Scale >= 1) || math.IsInf(c.Scale, 0):
		return fmt.Errorf("netsim: scale %v must be >= 1", c.Scale)
	case c.Background.Bulk < 0 || c.Background.OnOff < 0:
		return fmt.Errorf("netsim: negative background flow count")
	case c.Background.OnOff > 0 && (!(c.Background.Share > 0 && c.Background.Share <= 1) || c.Background.OnNS <= 0 || c.Background.OffNS < 0):
		return fmt.Errorf("netsim: on/off background %+v: share must be in (0, 1], on time > 0, off time >= 0", c.Background)
	}
	if bps := c.HostRate * 8 / c.scale(); bps < 1e3 {
		return fmt.Errorf("netsim: host rate %v B/s at scale %v is below 1 kbit/s", c.HostRate, c.scale())
	}
	return nil
}

func (c Config) scale() float64 {
	if c.Scale == 0 {
		return 1
	}
	return c.Scale
}

func parseDurationNS(s string) (int64, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d.Nanoseconds(), nil
}
