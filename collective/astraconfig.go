package collective

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/neuronfabric/nfabric/strictjson"
	"github.com/neuronfabric/nfabric/usage"
	"gopkg.in/yaml.v3"
)

// ParseAstraNetworkYAML reads an ASTRA-sim analytical network file (its
// examples/network/analytical/*.yml and tests/rt_template/inputs
// network_cfg.yml), one list entry per dimension:
//
//	topology: [ Ring ]      # Ring, FullyConnected or Switch
//	npus_count: [ 8 ]       # an integer > 1
//	bandwidth: [ 50.0 ]     # "GB/s", which ASTRA-sim converts as GiB/s
//	latency: [ 500.0 ]      # ns, >= 0
//
// as astra-network-analytical's NetworkParser reads it: the four lists
// must have one entry per dimension. A key it does not read is an error
// (a misspelt key would otherwise be ignored); errors name the file and
// line.
func ParseAstraNetworkYAML(data []byte, name string) ([]AstraDim, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("astra network %s: %w", name, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("astra network %s: empty file (want topology, npus_count, bandwidth and latency lists)", name)
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("astra network %s:%d: want a mapping of topology, npus_count, bandwidth and latency", name, m.Line)
	}
	lists := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if lists[k.Value] != nil {
			return nil, fmt.Errorf("astra network %s:%d: key %q given twice", name, k.Line, k.Value)
		}
		switch k.Value {
		case "topology", "npus_count", "bandwidth", "latency":
		default:
			return nil, fmt.Errorf("astra network %s:%d: unknown key %q (ASTRA-sim's analytical network reads topology, npus_count, bandwidth, latency)", name, k.Line, k.Value)
		}
		if v.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("astra network %s:%d: %s must be a list, one entry per dimension (e.g. [ %s ])", name, v.Line, k.Value, v.Value)
		}
		lists[k.Value] = v
	}
	for _, k := range []string{"topology", "npus_count", "bandwidth", "latency"} {
		if lists[k] == nil {
			return nil, fmt.Errorf("astra network %s: missing %s", name, k)
		}
	}
	n := len(lists["topology"].Content)
	if n == 0 {
		return nil, fmt.Errorf("astra network %s:%d: topology lists no dimension", name, lists["topology"].Line)
	}
	for _, k := range []string{"npus_count", "bandwidth", "latency"} {
		if got := len(lists[k].Content); got != n {
			return nil, fmt.Errorf("astra network %s:%d: %s has %d entries, topology %d (one per dimension)", name, lists[k].Line, k, got, n)
		}
	}
	dims := make([]AstraDim, n)
	total := 1
	for i := range dims {
		d, err := astraDim(lists, i, name)
		if err != nil {
			return nil, err
		}
		if total *= d.NPUs; total > 1<<20 {
			return nil, fmt.Errorf("astra network %s: more than %d NPUs in all", name, 1<<20)
		}
		dims[i] = d
	}
	return dims, nil
}

// astraDim reads dimension i of the network's lists.
func astraDim(lists map[string]*yaml.Node, i int, name string) (AstraDim, error) {
	var d AstraDim
	t := lists["topology"].Content[i]
	switch t.Value {
	case "Ring":
		d.Topology = AstraRing
	case "FullyConnected":
		d.Topology = AstraFullyConnected
	case "Switch":
		d.Topology = AstraSwitch
	default:
		return d, fmt.Errorf("astra network %s:%d: topology %q (want Ring, FullyConnected or Switch, as ASTRA-sim spells them)", name, t.Line, t.Value)
	}
	num := func(key string) (float64, *yaml.Node, error) {
		v := lists[key].Content[i]
		var f float64
		if v.Kind != yaml.ScalarNode || v.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, v, fmt.Errorf("astra network %s:%d: %s[%d] %q is not a finite number", name, v.Line, key, i, v.Value)
		}
		return f, v, nil
	}
	npus, v, err := num("npus_count")
	if err != nil {
		return d, err
	}
	if npus != math.Trunc(npus) || npus < 2 || npus > 1<<20 {
		return d, fmt.Errorf("astra network %s:%d: npus_count[%d] %v must be a whole number from 2 to %d", name, v.Line, i, v.Value, 1<<20)
	}
	d.NPUs = int(npus)
	if d.BandwidthGBps, v, err = num("bandwidth"); err != nil {
		return d, err
	}
	if !(d.BandwidthGBps > 0) || d.BandwidthGBps > 1e9 {
		return d, fmt.Errorf("astra network %s:%d: bandwidth[%d] %v GB/s must be > 0 and at most 1e9", name, v.Line, i, v.Value)
	}
	if d.LatencyNS, v, err = num("latency"); err != nil {
		return d, err
	}
	if d.LatencyNS < 0 || d.LatencyNS > 1e15 {
		return d, fmt.Errorf("astra network %s:%d: latency[%d] %v ns must be in [0, 1e15]", name, v.Line, i, v.Value)
	}
	return d, nil
}

// astraSystemKeys are the keys of ASTRA-sim's system JSON (Sys.cc's
// initialize_sys, CollectiveImplLookup), with what this model does with
// each: "" for the keys it reads, otherwise why the key does not change a
// collective's time here.
var astraSystemKeys = map[string]string{
	"preferred-dataset-splits":      "",
	"active-chunks-per-dimension":   "",
	"local-mem-bw":                  "",
	"endpoint-delay":                "",
	"model-shared-bus":              "",
	"replay-only":                   "",
	"all-reduce-implementation":     "",
	"reduce-scatter-implementation": "",
	"all-gather-implementation":     "",
	"all-to-all-implementation":     "",
	"scheduling-policy":             "orders collectives that run at the same time; here one runs at a time",
	"collective-optimization":       "changes only multi-dimensional all-reduces",
	"boost-mode":                    "ASTRA-sim itself does not read it",
	"roofline-enabled":              "sets compute times; the what-if takes them from the trace",
	"peak-perf":                     "sets compute times; the what-if takes them from the trace",
	"local-reduction-delay":         "used only with model-shared-bus 1",
	"L":                             "used only with model-shared-bus 1",
	"o":                             "used only with model-shared-bus 1",
	"g":                             "used only with model-shared-bus 1",
	"G":                             "used only with model-shared-bus 1",
	"trace-enabled":                 "a logging switch",
	"track-local-mem":               "a logging switch",
	"local-mem-trace-filename":      "a logging switch",
	"intra-dimension-scheduling":    "orders chunks within a dimension; one chunk is active at a time here",
	"inter-dimension-scheduling":    "orders dimensions; one dimension is modelled",
}

// AstraSystemFile is a parsed ASTRA-sim system JSON: the settings the
// model uses and the keys it accepted without using, each with why.
type AstraSystemFile struct {
	System AstraSystem
	// Ignored lists "key: why" for every key given that does not change
	// a collective's time here, sorted by key.
	Ignored []string
}

// ParseAstraSystemJSON reads an ASTRA-sim system configuration (its
// examples/system/native_collectives/*.json and tests/rt_template/inputs
// system_cfg.json). preferred-dataset-splits and local-mem-bw are
// required (ASTRA-sim divides by both); endpoint-delay defaults to 10 and
// active-chunks-per-dimension to 1, as in ASTRA-sim. Settings this model
// does not reproduce are errors that say so: model-shared-bus 1,
// replay-only 1, the custom collectives (*-implementation-custom).
// Unknown keys and keys given twice are errors; errors name the file and
// line:column.
func ParseAstraSystemJSON(data []byte, name string) (AstraSystemFile, error) {
	var out AstraSystemFile
	where := "astra system " + name
	if err := strictjson.CheckDuplicates(data); err != nil {
		return out, strictjson.Wrap(err, data, where)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return out, fmt.Errorf("%s: empty file", where)
		}
		return out, strictjson.Wrap(err, data, where)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return out, fmt.Errorf("%s: unexpected data after the JSON object", where)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := AstraSystem{ActiveChunks: 1, EndpointDelay: 10, Impl: map[Op][]string{}}
	for _, k := range keys {
		why, known := astraSystemKeys[k]
		switch {
		case strings.HasSuffix(k, "-implementation-custom"):
			return out, fmt.Errorf("%s: %s: ASTRA-sim's custom collectives (Chakra ETs of the algorithm) are not modelled", where, k)
		case !known:
			return out, fmt.Errorf("%s: unknown key %q (ASTRA-sim's system file keys: %s)", where, k, strings.Join(slices.Sorted(maps.Keys(astraSystemKeys)), ", "))
		case why != "":
			out.Ignored = append(out.Ignored, k+": "+why)
			continue
		}
		if err := s.set(k, raw[k]); err != nil {
			return out, fmt.Errorf("%s: %s: %w", where, k, err)
		}
	}
	if _, ok := raw["preferred-dataset-splits"]; !ok {
		return out, fmt.Errorf("%s: missing preferred-dataset-splits (ASTRA-sim divides a collective by it)", where)
	}
	if _, ok := raw["local-mem-bw"]; !ok {
		return out, fmt.Errorf("%s: missing local-mem-bw (ASTRA-sim's reductions run at it)", where)
	}
	out.System = s
	return out, nil
}

// set reads one key the model uses.
func (s *AstraSystem) set(k string, v json.RawMessage) error {
	integer := func(lo, hi int64) (int64, error) {
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return 0, fmt.Errorf("%s is not a number", v)
		}
		i, err := n.Int64()
		if err != nil || i < lo || i > hi {
			return 0, fmt.Errorf("%s must be a whole number from %d to %d", n, lo, hi)
		}
		return i, nil
	}
	switch k {
	case "preferred-dataset-splits":
		i, err := integer(1, 1<<20)
		s.DatasetSplits = int(i)
		return err
	case "active-chunks-per-dimension":
		i, err := integer(1, 1<<20)
		s.ActiveChunks = int(i)
		return err
	case "endpoint-delay":
		i, err := integer(0, 1e12)
		s.EndpointDelay = i
		return err
	case "model-shared-bus", "replay-only":
		i, err := integer(0, 1)
		if err == nil && i == 1 {
			err = fmt.Errorf("1 is not modelled (only 0, ASTRA-sim's default)")
		}
		return err
	case "local-mem-bw":
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || !(f > 0) || f > 1e12 {
			return fmt.Errorf("%s GB/s must be a number > 0 and at most 1e12", v)
		}
		s.LocalMemBWGBps = f
		return nil
	}
	op, err := ParseOp(strings.TrimSuffix(k, "-implementation"))
	if err != nil {
		return err
	}
	var names []string
	if err := json.Unmarshal(v, &names); err != nil || len(names) == 0 {
		return fmt.Errorf("%s: want a list of implementation names, one per dimension", v)
	}
	for _, n := range names {
		switch {
		case n == "ring" || n == "oneRing" || n == "doubleBinaryTree" || n == "halvingDoubling" || n == "oneHalvingDoubling",
			strings.HasPrefix(n, "direct") || strings.HasPrefix(n, "oneDirect"):
		default:
			return fmt.Errorf("unknown implementation %q (ASTRA-sim's: ring, oneRing, direct, oneDirect, halvingDoubling, oneHalvingDoubling, doubleBinaryTree)", n)
		}
	}
	s.Impl[op] = names
	return nil
}

// AstraConfig is ASTRA-sim's analytical mode as a command loads it: the
// model and where it came from.
type AstraConfig struct {
	Model                   Astra
	NetworkFile, SystemFile string
	// Ignored lists the system file's keys that do not change a
	// collective's time here, "key: why".
	Ignored []string
}

// LoadAstra reads an ASTRA-sim network YAML and system JSON (both, or
// neither: nil) and builds the model. Giving one without the other, or a
// configuration the model does not reproduce, is a usage error; a file
// that cannot be read or parsed is an error naming it.
func LoadAstra(networkFile, systemFile string) (*AstraConfig, error) {
	if networkFile == "" && systemFile == "" {
		return nil, nil
	}
	if networkFile == "" || systemFile == "" {
		return nil, usage.Errorf("ASTRA-sim's analytical mode needs its network file (--astra-network FILE.yml) and its system file (--astra-system FILE.json) together")
	}
	nd, err := os.ReadFile(networkFile)
	if err != nil {
		return nil, fmt.Errorf("read astra network: %w", err)
	}
	dims, err := ParseAstraNetworkYAML(nd, networkFile)
	if err != nil {
		return nil, err
	}
	sd, err := os.ReadFile(systemFile)
	if err != nil {
		return nil, fmt.Errorf("read astra system: %w", err)
	}
	sf, err := ParseAstraSystemJSON(sd, systemFile)
	if err != nil {
		return nil, err
	}
	m, err := NewAstra(sf.System, dims)
	if err != nil {
		return nil, usage.Errorf("%s with %s: %w", networkFile, systemFile, err)
	}
	return &AstraConfig{Model: m, NetworkFile: networkFile, SystemFile: systemFile, Ignored: sf.Ignored}, nil
}

// Assumptions are the lines an output prints about the ASTRA-sim mode:
// the model with its units, the files, and the settings not used.
func (c *AstraConfig) Assumptions() []string {
	a := []string{fmt.Sprintf("network collectives: %v (from %s and %s); its network \"GB/s\" is converted as GiB/s, as ASTRA-sim does", c.Model, c.NetworkFile, c.SystemFile)}
	for _, k := range c.Ignored {
		a = append(a, "ASTRA-sim system setting not used: "+k)
	}
	return a
}
