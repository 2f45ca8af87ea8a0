package cxldev

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/usage"
)

// Profile is a device preset: its configuration, the published figures
// it is checked against, and where every stage parameter came from.
type Profile struct {
	Config Config
	// Class is what the preset stands for: "asic" and "fpga" (shipping
	// silicon, calibrated to a published measurement) or "projection"
	// (no shipping device: a point the paper's numbers are projected
	// onto).
	Class       string
	Description string
	// IdleNS is the published idle load-to-use latency of the device the
	// preset is checked against (0: none), IdleSource where it was
	// published. ReadLoGBps..ReadHiGBps is the published peak read
	// bandwidth (one figure when equal; 0: none), ReadSource its source.
	IdleNS                 float64
	IdleSource             string
	ReadLoGBps, ReadHiGBps float64
	ReadSource             string
	// Parameters lists every stage parameter with its value and what set
	// it: a measurement it was calibrated to, a published model or spec it
	// was taken from, or an assumption. Everything not calibrated is a
	// prediction.
	Parameters []Parameter
}

// Parameter is one preset value and its provenance.
type Parameter struct {
	// Key is the YAML path below the device block (host.fabric_ns).
	Key   string
	Value string
	// SetBy says what set the value; Calibrated marks the values fitted
	// to a measurement (SetBy names it).
	SetBy      string
	Calibrated bool
}

// hostFabricNS is the calibrated host fabric of CXL-DMSim's testbed (one
// way): the ASIC's published idle read minus the closed form of every
// other stage, halved (TestCalibration re-derives it).
const hostFabricNS = 33.82

// cxlDMSimHost is the host side of CXL-DMSim's testbed and gem5 board:
// the CXLBridge's 50 ns and 12 ns of protocol conversion each way, and
// the fabric calibrated to the ASIC's idle read.
var cxlDMSimHost = HostConfig{FabricNS: hostFabricNS, BridgeNS: 50, ProtocolNS: 12}

// devices are the presets, in the order Devices lists them. Adding a
// device is one entry; the table tests of this package and of timing
// check every entry against its published figures.
var devices = []func() Profile{
	func() Profile {
		link, _ := LinkPreset("pcie5-x8")
		link.PortLatencyNS = 0
		media, _ := dram.Preset("ddr5-4800")
		media.Channels = 2
		return Profile{
			Class: "asic", Description: "CXL 2.0 ASIC memory expander on PCIe 5.0 x8 with one DDR5-4800 DIMM (two sub-channels), calibrated to CXL-DMSim's testbed ASIC",
			Config: Config{Preset: "asic-pcie5-x8", Host: cxlDMSimHost, Link: link, ProtocolNS: 15,
				RequestQueue: 48, ResponseQueue: 48, Media: media},
			IdleNS: 284.9, IdleSource: "CXL-DMSim testbed ASIC, lmbench lat_mem_rd idle load-to-use latency (local DDR5 on the same host 131.5 ns: 2.17x)",
			ReadLoGBps: 21.4, ReadHiGBps: 21.4, ReadSource: "CXL-DMSim testbed ASIC, read bandwidth of one device (at about 950 ns loaded latency)",
			Parameters: []Parameter{
				{"host.fabric_ns", fmt.Sprint(hostFabricNS), "the idle read, 284.9 ns (CXL-DMSim ASIC, lmbench): the closed form of the other stages subtracted, halved", true},
				{"host.bridge_ns", "50", "CXL-DMSim gem5 model: CXLBridge bridge_lat", false},
				{"host.protocol_ns", "12", "CXL-DMSim gem5 model: CXLBridge proto_proc_lat on its X86Board (SimCXL: 14)", false},
				{"link", "pcie5-x8, 68-byte flits", "PCIe 5.0 / CXL 2.0 specifications (the flit format sets the read bandwidth: a prediction)", false},
				{"link.port_latency_ns", "0", "folded into the host bridge and the calibrated fabric (the published decomposition has no separate PHY stage)", false},
				{"protocol_ns", "15", "CXL-DMSim gem5 model: CXLMemory proto_proc_lat (ASIC)", false},
				{"request_queue, response_queue", "48, 48", "CXL-DMSim gem5 model: CXLMemory req_size, rsp_size (ASIC)", false},
				{"media", "ddr5-4800 x 2 sub-channels", "JESD79-5 DDR5-4800B; one DIMM (assumption)", false},
			},
		}
	},
	func() Profile {
		link, _ := LinkPreset("pcie5-x16")
		link.PortLatencyNS = 0
		media, _ := dram.Preset("ddr4-3200")
		return Profile{
			Class: "fpga", Description: "CXL 2.0 FPGA memory device (Intel Agilex-7 class) on PCIe 5.0 x16 with one DDR4-3200 channel; host as the ASIC's, nothing calibrated",
			Config: Config{Preset: "fpga-pcie5-x16", Host: cxlDMSimHost, Link: link, ProtocolNS: 60,
				RequestQueue: 36, ResponseQueue: 36, Media: media},
			IdleNS: 2.88 * 131.5, IdleSource: "CXL-DMSim testbed FPGA: 2.88x the host's local DDR (131.5 ns, lmbench) = 378.7 ns; Agilex-7 devices measure 380-430 ns elsewhere",
			ReadLoGBps: 0.45 * 21.4 / 0.825, ReadHiGBps: 0.69 * 21.4 / 0.825, ReadSource: "CXL-DMSim testbed FPGA: 45-69% of local DDR bandwidth, local taken as the ASIC's 21.4 GB/s / 82.5% (its 82-83%): 11.7-17.9 GB/s",
			Parameters: []Parameter{
				{"host", "as asic-pcie5-x8", "the same host (CXL-DMSim's testbed): the ASIC's calibration", false},
				{"link", "pcie5-x16, 68-byte flits", "PCIe 5.0 / CXL 2.0 specifications; Agilex-7 R-Tile is x16", false},
				{"protocol_ns", "60", "CXL-DMSim gem5 model: CXLMemory proto_proc_lat (FPGA)", false},
				{"request_queue, response_queue", "36, 36", "CXL-DMSim gem5 model: CXLMemory req_size, rsp_size (FPGA)", false},
				{"media", "ddr4-3200 x 1 channel", "CXL-DMSim's FPGA board memory (SingleChannelDDR4_3200); JESD79-4B DDR4-3200AA", false},
			},
		}
	},
	func() Profile {
		link, _ := LinkPreset("pcie6-x16")
		media, _ := dram.Preset("ddr5-4800")
		return Profile{
			Class: "projection", Description: "projection: CXL 3.x on PCIe 6.0 x16 (256-byte flits) with eight DDR5-4800 sub-channels; no host bridge or protocol stages; no shipping device",
			Config: Config{Preset: "projection-pcie6-x16", Link: link, RequestQueue: 128, ResponseQueue: 256, Media: media},
			Parameters: []Parameter{
				{"host", "0, 0, 0", "not modelled (the projection's path is the port latency alone)", false},
				{"link", "pcie6-x16, 256-byte flits, 25 ns ports", "PCIe 6.0 / CXL 3.x specifications; port latency an assumption", false},
				{"request_queue, response_queue", "128, 256", "assumption: the response queue holds a request from its send to its response's departure, about 125 ns idle, so 256 entries cover the link's 99 GiB/s (210 lines in that time); 128 request credits cover the default load", false},
				{"media", "ddr5-4800 x 8 sub-channels", "JESD79-5; sized so the DRAM can feed the link (assumption)", false},
			},
		}
	},
}

// Devices returns every device preset, in a fixed order.
func Devices() []Profile {
	out := make([]Profile, len(devices))
	for i, f := range devices {
		out[i] = f()
	}
	return out
}

// Names returns the device presets' names.
func Names() []string {
	var out []string
	for _, p := range Devices() {
		out = append(out, p.Config.Preset)
	}
	return out
}

// Lookup returns the named device preset, or a usage error listing the
// names.
func Lookup(name string) (Profile, error) {
	for _, p := range Devices() {
		if p.Config.Preset == name {
			return p, nil
		}
	}
	return Profile{}, usage.Errorf("unknown CXL device %q (want %s)", name, strings.Join(Names(), ", "))
}
