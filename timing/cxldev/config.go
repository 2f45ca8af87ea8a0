package cxldev

import (
	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/timing/internal/field"
	"github.com/neuronfabric/nfabric/timing/sim"
	"gopkg.in/yaml.v3"
)

// Config is one CXL Type-3 memory device and the host port it hangs
// from, as named pipeline stages (each stage's latency is paid once in
// each direction unless said otherwise):
//
//	host:   LLC miss --FabricNS--> root port --BridgeNS + ProtocolNS--> egress (credits)
//	link:   flits (Link) + PortLatencyNS          (M2S Req / RwD)
//	device: ProtocolNS --> request queue --> Media (DRAM channels, front end)
//	        [aggregation pipeline, low-bit reads] --> ProtocolNS --> response queue
//	link:   flits + PortLatencyNS                 (S2M DRS / NDR)
//	host:   BridgeNS + ProtocolNS + FabricNS --> the requester
//
// The decomposition is the validated gem5 models': CXL-DMSim (Wang et
// al., "CXL-DMSim: A Full-System CXL Disaggregated Memory Simulator With
// Comprehensive Silicon Validation", IEEE TCAD 2025, arXiv:2411.02282;
// 3.4% mean error against an ASIC and an FPGA device) and SimCXL, which
// integrates it: a host CXL bridge of 50 ns plus 12-14 ns of host
// protocol conversion each way (CXLBridge bridge_lat, proto_proc_lat),
// the device's CXL.mem protocol processing each way (CXLMemory
// proto_proc_lat: 15 ns ASIC, 60 ns FPGA) and the device's request and
// response buffers (req_size, rsp_size: 48 ASIC, 36 FPGA; SimCXL's bridge
// FIFOs 52). Devices lists the presets and which measurement set which
// value. YAML keys are the snake_case tags; a block naming a preset starts
// from it (UnmarshalYAML).
type Config struct {
	// Preset names the device preset the fields came from.
	Preset string     `yaml:"preset" json:"preset"`
	Host   HostConfig `yaml:"host" json:"host"`
	Link   LinkConfig `yaml:"link" json:"link"`
	// ProtocolNS is the device controller's CXL.mem protocol processing,
	// paid by a request on arrival and by its response (DRS or NDR)
	// before it leaves.
	ProtocolNS float64 `yaml:"protocol_ns" json:"protocol_ns"`
	// RequestQueue is the device's request buffer in requests: the host
	// holds one credit per free entry, sends only with one, and gets it
	// back one port latency after its request moves on into a DRAM
	// channel queue.
	RequestQueue int `yaml:"request_queue" json:"request_queue"`
	// ResponseQueue is the device's response buffer in requests: a request
	// reserves an entry when the host sends it (a second credit) and frees
	// it when its response (DRS or NDR) has left on the link, so at most
	// ResponseQueue requests are inside the device at once. This is
	// CXL-DMSim's rule (a request is accepted only with room for its
	// response), and with the request queue it sets where the
	// loaded-latency curve turns.
	ResponseQueue int `yaml:"response_queue" json:"response_queue"`
	// Media is the DRAM behind the device's controller.
	Media dram.Spec `yaml:"media" json:"media"`
}

// HostConfig is the host side of the path, each stage paid once per
// direction.
type HostConfig struct {
	// FabricNS is the host's on-chip path between the LLC miss and the
	// CXL root port (mesh, I/O hub): the part of a load's latency that the
	// timing model's LLC lookup does not hold and the published
	// decomposition leaves to its cache hierarchy. Calibrated per host
	// (Devices).
	FabricNS float64 `yaml:"fabric_ns" json:"fabric_ns"`
	// BridgeNS is the host CXL bridge (root port): CXL-DMSim's 50 ns.
	BridgeNS float64 `yaml:"bridge_ns" json:"bridge_ns"`
	// ProtocolNS is the host's CXL.mem protocol conversion: CXL-DMSim's
	// 12 ns (SimCXL's 14 ns).
	ProtocolNS float64 `yaml:"protocol_ns" json:"protocol_ns"`
}

// OneWayNS returns the host stages' latency in one direction.
func (h HostConfig) OneWayNS() float64 { return h.FabricNS + h.BridgeNS + h.ProtocolNS }

// Validate returns a usage error naming the first invalid field (its YAML
// key below the device block).
func (c Config) Validate() error {
	for _, f := range []struct {
		key string
		v   float64
	}{{"host.fabric_ns", c.Host.FabricNS}, {"host.bridge_ns", c.Host.BridgeNS}, {"host.protocol_ns", c.Host.ProtocolNS}, {"protocol_ns", c.ProtocolNS}} {
		if err := field.Float(f.key, f.v, 0, 1e5); err != nil {
			return err
		}
	}
	if err := field.Under("link", c.Link.Validate()); err != nil {
		return err
	}
	if err := field.Int("request_queue", c.RequestQueue, 1, 1<<16); err != nil {
		return err
	}
	if err := field.Int("response_queue", c.ResponseQueue, 1, 1<<16); err != nil {
		return err
	}
	return field.Under("media", c.Media.Validate())
}

// HostOneWay returns the host stages' one-way latency as Time.
func (c Config) HostOneWay() sim.Time { return sim.FromNS(c.Host.OneWayNS()) }

// UnmarshalYAML decodes a device block: a block naming a preset
// ("preset: asic-pcie5-x8") starts from that device (its link and media
// included) and its other keys override it; one naming none overrides
// the device already there. Unknown keys are errors.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	type plain Config
	base, err := field.Preset(n, *c, func(name string) (Config, error) {
		p, err := Lookup(name)
		return p.Config, err
	})
	if err != nil {
		return err
	}
	v := plain(base)
	if err := field.Decode(n, &v); err != nil {
		return err
	}
	*c = Config(v)
	return nil
}

// UnmarshalYAML decodes a link block the same way: a named link preset
// first, then the block's other keys.
func (c *LinkConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain LinkConfig
	base, err := field.Preset(n, *c, LinkPreset)
	if err != nil {
		return err
	}
	v := plain(base)
	if err := field.Decode(n, &v); err != nil {
		return err
	}
	*c = LinkConfig(v)
	return nil
}
