package collective

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Link is one direction of a point-to-point link.
type Link struct {
	Name string `json:"name"`
	// Bandwidth in bytes per second.
	Bandwidth float64 `json:"bandwidth"`
	// Latency is the per-message alpha in seconds.
	Latency float64 `json:"latency"`
	// Note says where the figures come from.
	Note string `json:"note,omitempty"`
}

// Validate checks that bandwidth is positive and latency non-negative.
func (l Link) Validate() error {
	if !(l.Bandwidth > 0) || math.IsInf(l.Bandwidth, 0) {
		return fmt.Errorf("link %s: bandwidth %v B/s must be finite and > 0", l.Name, l.Bandwidth)
	}
	if !(l.Latency >= 0) || math.IsInf(l.Latency, 0) {
		return fmt.Errorf("link %s: latency %v s must be finite and >= 0", l.Name, l.Latency)
	}
	return nil
}

// String renders the link as "name (bandwidth, latency)".
func (l Link) String() string {
	return fmt.Sprintf("%s (%s, alpha %s)", l.Name, FormatBandwidth(l.Bandwidth), time.Duration(math.Round(l.Latency*1e9)))
}

// GiB is 2^30 bytes.
const GiB = 1 << 30

// Presets are the built-in links. They are modelling points, not
// measurements; override them with a YAML file or flags.
var Presets = map[string]Link{
	"nvlink": {Name: "nvlink", Bandwidth: 300e9, Latency: 1e-6,
		Note: "NVLink 3 (A100): 12 links x 25 GB/s per direction; alpha 1 us assumed"},
	"pcie": {Name: "pcie", Bandwidth: 31.5e9, Latency: 2e-6,
		Note: "PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s per direction; alpha 2 us assumed"},
	"ib": {Name: "ib", Bandwidth: 25e9, Latency: 5e-6,
		Note: "InfiniBand HDR 200 Gb/s = 25 GB/s per direction; alpha 5 us (NCCL-like per-step cost) assumed"},
	"ib-ndr": {Name: "ib-ndr", Bandwidth: 50e9, Latency: 5e-6,
		Note: "InfiniBand NDR 400 Gb/s = 50 GB/s per direction; alpha 5 us assumed"},
	"cxl": {Name: "cxl", Bandwidth: 128 * GiB, Latency: 200e-9,
		Note: "the paper's CXL service point (Sec. 4): 128 GiB/s, 200 ns fixed access latency"},
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string {
	var out []string
	for k := range Presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LookupLink returns the link called name from extra (user links, which
// win) or the presets.
func LookupLink(name string, extra []Link) (Link, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, l := range extra {
		if strings.ToLower(l.Name) == n {
			return l, nil
		}
	}
	if l, ok := Presets[n]; ok {
		return l, nil
	}
	known := PresetNames()
	for _, l := range extra {
		known = append(known, l.Name)
	}
	return Link{}, fmt.Errorf("unknown link %q (known: %s)", name, strings.Join(known, ", "))
}

var bwUnits = []struct {
	suffix string
	factor float64
}{
	// Longest suffixes first.
	{"tib/s", 1 << 40}, {"gib/s", 1 << 30}, {"mib/s", 1 << 20}, {"kib/s", 1 << 10},
	{"gbit/s", 1e9 / 8}, {"mbit/s", 1e6 / 8},
	{"tb/s", 1e12}, {"gb/s", 1e9}, {"mb/s", 1e6}, {"kb/s", 1e3}, {"b/s", 1},
}

// ParseBandwidth parses a rate such as "128GiB/s", "25 GB/s", "200Gbit/s"
// or "200Gb/s". Units: B/s, kB/s, MB/s, GB/s, TB/s (powers of 1000),
// KiB/s, MiB/s, GiB/s, TiB/s (powers of 1024), and bits with Gbit/s,
// Mbit/s or a lower-case b in Gb/s, Mb/s. A bare number is bytes per second.
func ParseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	num, unit := t, ""
	if i := strings.IndexFunc(t, func(r rune) bool {
		return (r < '0' || r > '9') && r != '.' && r != 'e' && r != 'E' && r != '+' && r != '-'
	}); i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("bandwidth %q: not a number followed by a unit such as GB/s", s)
	}
	factor := 1.0
	if unit != "" {
		switch unit { // case-sensitive bit forms
		case "Gb/s", "Gbps":
			factor = 1e9 / 8
		case "Mb/s", "Mbps":
			factor = 1e6 / 8
		default:
			u, found := strings.ToLower(unit), false
			for _, bu := range bwUnits {
				if u == bu.suffix {
					factor, found = bu.factor, true
					break
				}
			}
			if !found {
				return 0, fmt.Errorf("bandwidth %q: unknown unit %q (want B/s, GB/s, GiB/s, Gb/s, ...)", s, unit)
			}
		}
	}
	bw := v * factor
	if !(bw >= 1) || math.IsInf(bw, 0) {
		return 0, fmt.Errorf("bandwidth %q must be finite and at least 1 B/s", s)
	}
	return bw, nil
}

// UnitsNote is the line every output that prints a bandwidth carries.
const UnitsNote = "bandwidths: GB/s = 10^9 bytes/s, GiB/s = 2^30 bytes/s"

// FormatBandwidth renders bytes per second in GB/s (and GiB/s when that is
// a round number).
func FormatBandwidth(bw float64) string {
	gib := bw / GiB
	if gib == math.Trunc(gib) && gib >= 1 {
		return fmt.Sprintf("%g GiB/s", gib)
	}
	return fmt.Sprintf("%g GB/s", bw/1e9)
}

// ParseLatency parses a Go duration such as "200ns", "1.5us" or "5µs".
func ParseLatency(s string) (float64, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("latency %q: %v", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("latency %q must be >= 0", s)
	}
	return d.Seconds(), nil
}

type yamlLinks struct {
	Links []yamlLink `yaml:"links"`
}

type yamlLink struct {
	Name      string `yaml:"name"`
	Bandwidth string `yaml:"bandwidth"`
	Latency   string `yaml:"latency"`
	Note      string `yaml:"note"`
}

// ParseLinksYAML reads user links:
//
//	links:
//	  - name: roce
//	    bandwidth: 100Gb/s     # see ParseBandwidth
//	    latency: 3us           # a Go duration
//	    note: RoCE v2 NIC
//
// A user link with a preset's name replaces the preset. Unknown fields are
// errors; errors name the file and line.
func ParseLinksYAML(data []byte, name string) ([]Link, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var y yamlLinks
	if err := dec.Decode(&y); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("links %s: empty file", name)
		}
		return nil, fmt.Errorf("links %s: %w", name, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	lines := seqLines(&root, "links")
	where := func(i int) string {
		if i < len(lines) {
			return fmt.Sprintf("%s:%d", name, lines[i])
		}
		return name
	}
	if len(y.Links) == 0 {
		return nil, fmt.Errorf("links %s: no links", name)
	}
	seen := map[string]bool{}
	var out []Link
	for i, yl := range y.Links {
		n := strings.TrimSpace(yl.Name)
		if n == "" {
			return nil, fmt.Errorf("links %s: link without a name", where(i))
		}
		if seen[strings.ToLower(n)] {
			return nil, fmt.Errorf("links %s: duplicate link %q", where(i), n)
		}
		seen[strings.ToLower(n)] = true
		bw, err := ParseBandwidth(yl.Bandwidth)
		if err != nil {
			return nil, fmt.Errorf("links %s: link %s: %w", where(i), n, err)
		}
		lat := 0.0
		if yl.Latency != "" {
			if lat, err = ParseLatency(yl.Latency); err != nil {
				return nil, fmt.Errorf("links %s: link %s: %w", where(i), n, err)
			}
		}
		out = append(out, Link{Name: n, Bandwidth: bw, Latency: lat, Note: yl.Note})
	}
	return out, nil
}

func seqLines(root *yaml.Node, key string) []int {
	if root == nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.SequenceNode {
			var out []int
			for _, n := range m.Content[i+1].Content {
				out = append(out, n.Line)
			}
			return out
		}
	}
	return nil
}
