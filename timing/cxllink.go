package timing

import (
	"fmt"
	"math"
	"strings"
)

// CXLConfig describes the two-way CXL link and port of each stack when
// link.model is "cxl" (see CXLPreset). Every message is cut into 16-byte
// slots packed into flits; a flit leaves when the link is free and carries
// whatever slots are waiting then (a partly filled flit is not held back
// for more), and a message is delivered when the flit holding its last
// slot has been received and checked, plus the port latency.
type CXLConfig struct {
	// Preset names the PCIe/CXL generation the fields came from.
	Preset string `yaml:"preset" json:"preset"`
	// TransferGTps and Lanes give the raw rate: GT/s x lanes / 8 bytes per
	// second per direction, times EncodingEfficiency (128b/130b for
	// PCIe 5.0; 1 for PCIe 6.0 FLIT mode, whose FEC and CRC sit inside
	// the 256-byte flit).
	TransferGTps       float64 `yaml:"transfer_gtps" json:"transfer_gtps"`
	Lanes              int     `yaml:"lanes" json:"lanes"`
	EncodingEfficiency float64 `yaml:"encoding_efficiency" json:"encoding_efficiency"`
	// FlitBytes is 68 (CXL 1.1/2.0: four 16-byte slots + 2 B protocol ID
	// + 2 B CRC) or 256 (CXL 3.x: fifteen slots + 2 B header + 8 B CRC +
	// 6 B FEC).
	FlitBytes int `yaml:"flit_bytes" json:"flit_bytes"`
	// HeadersPerSlot is how many CXL.mem request/response headers share a
	// 16-byte slot (M2S Req, S2M DRS and NDR headers are well under 16 B;
	// the M2S RwD header always takes a whole slot). Assumption: 2.
	HeadersPerSlot int `yaml:"headers_per_slot" json:"headers_per_slot"`
	// PortLatencyNS is the one-way latency of the host root port, the
	// device port and any retimer or bridge, paid by every message in each
	// direction on top of its flits. Assumption: 25 ns.
	PortLatencyNS float64 `yaml:"port_latency_ns" json:"port_latency_ns"`
	// RequestCredits is the device's ingress buffer (in requests): the
	// host holds one credit per free entry, sends only with a credit, and
	// gets the credit back (one port latency later) when the request moves
	// on into a DRAM channel queue. Assumption: 128, enough to cover the
	// credit loop's bandwidth-delay product at the default load (about
	// one line per ns over a round trip of two port latencies and flits).
	RequestCredits int `yaml:"request_credits" json:"request_credits"`
	// ResponseQueue is the device's response buffer (in lines): a DRAM read
	// issues only with a free entry, held until the response has left on
	// the link. Assumption: 128.
	ResponseQueue int `yaml:"response_queue" json:"response_queue"`
}

// CXL link preset names.
const (
	PresetPCIe5x16 = "pcie5-x16"
	PresetPCIe6x16 = "pcie6-x16"
)

// CXLPreset returns a named link preset:
//
//   - pcie5-x16: CXL 2.0 on PCIe 5.0 x16, 32 GT/s x 16 lanes with
//     128b/130b encoding (63.0 GB/s per direction), 68-byte flits;
//   - pcie6-x16: CXL 3.x on PCIe 6.0 x16, 64 GT/s PAM4 x 16 lanes in FLIT
//     mode (128 GB/s per direction, 119.2 GiB/s), 256-byte flits.
//
// Both take the assumed port latency, credits and header packing of
// CXLConfig's field docs.
func CXLPreset(name string) (CXLConfig, error) {
	c := CXLConfig{Preset: name, Lanes: 16, HeadersPerSlot: 2, PortLatencyNS: 25, RequestCredits: 128, ResponseQueue: 128}
	switch name {
	case PresetPCIe5x16:
		c.TransferGTps, c.EncodingEfficiency, c.FlitBytes = 32, 128.0/130, 68
	case PresetPCIe6x16:
		c.TransferGTps, c.EncodingEfficiency, c.FlitBytes = 64, 1, 256
	default:
		return CXLConfig{}, fmt.Errorf("unknown CXL link preset %q (want %s)", name, strings.Join(CXLPresets(), ", "))
	}
	return c, nil
}

// CXLPresets lists the link preset names.
func CXLPresets() []string { return []string{PresetPCIe5x16, PresetPCIe6x16} }

// Validate returns an error naming the first invalid field (below
// link.cxl).
func (c CXLConfig) Validate() error {
	if err := checkRange("transfer_gtps", c.TransferGTps, 0.1, 1024); err != nil {
		return err
	}
	if err := checkInt("lanes", c.Lanes, 1, 64); err != nil {
		return err
	}
	if !finite(c.EncodingEfficiency) || c.EncodingEfficiency <= 0 || c.EncodingEfficiency > 1 {
		return fmt.Errorf("encoding_efficiency: must be in (0, 1], got %g", c.EncodingEfficiency)
	}
	if c.FlitBytes != 68 && c.FlitBytes != 256 {
		return fmt.Errorf("flit_bytes: want 68 (CXL 2.0) or 256 (CXL 3.x), got %d", c.FlitBytes)
	}
	if c.HeadersPerSlot != 1 && c.HeadersPerSlot != 2 && c.HeadersPerSlot != 4 {
		return fmt.Errorf("headers_per_slot: want 1, 2 or 4, got %d", c.HeadersPerSlot)
	}
	if err := checkRange("port_latency_ns", c.PortLatencyNS, 0, 1e5); err != nil {
		return err
	}
	if err := checkInt("request_credits", c.RequestCredits, 1, 1<<16); err != nil {
		return err
	}
	return checkInt("response_queue", c.ResponseQueue, 1, 1<<16)
}

// RawBytesPerSec returns the per-direction wire rate after encoding.
func (c CXLConfig) RawBytesPerSec() float64 {
	return c.TransferGTps * 1e9 * float64(c.Lanes) / 8 * c.EncodingEfficiency
}

// SlotsPerFlit returns the 16-byte slots a flit carries (4 or 15).
func (c CXLConfig) SlotsPerFlit() int {
	if c.FlitBytes == 256 {
		return 15
	}
	return 4
}

// Message sizes in quarter slots (4 B units), the granularity at which
// headers share a slot.
func (c CXLConfig) headerQ() int { return 4 / c.HeadersPerSlot }

// ReadRequestQ, ReadResponseQ, WriteRequestQ and WriteAckQ return the
// size of each CXL.mem message in quarter slots: M2S Req is a header; S2M
// DRS a header and four data slots; M2S RwD a whole header slot and four
// data slots; S2M NDR a header.
func (c CXLConfig) ReadRequestQ() int { return c.headerQ() }

// ReadResponseQ is the S2M DRS size (header + 64 B).
func (c CXLConfig) ReadResponseQ() int { return c.headerQ() + 16 }

// WriteRequestQ is the M2S RwD size (one header slot + 64 B).
func (c CXLConfig) WriteRequestQ() int { return 4 + 16 }

// WriteAckQ is the S2M NDR size.
func (c CXLConfig) WriteAckQ() int { return c.headerQ() }

// LineGiBps returns the most line data one direction can carry, in GiB/s,
// when every flit is full of read responses: the protocol efficiency
// (flit framing and headers) applied to the raw rate, times share.
func (c CXLConfig) LineGiBps(share float64) float64 {
	flitSec := float64(c.FlitBytes) / c.RawBytesPerSec() / share
	linesPerFlit := float64(4*c.SlotsPerFlit()) / float64(c.ReadResponseQ())
	return linesPerFlit * LineBytes / flitSec / (1 << 30)
}

// FlitLink is one direction of a CXL link: a FIFO of messages cut into
// quarter-slot units and packed into flits sent back to back. Time is
// kept in femtoseconds inside, so that a flit time such as 1.0791 ns
// (68 B at 63.0 GB/s) accumulates without drift. Messages must be offered
// in nondecreasing time order; one offered earlier than the flit being
// filled joins that flit (in-order service).
type FlitLink struct {
	name   string
	flitFS int64
	cap    int
	ns     int64 // start of the flit being filled, fs
	used   int   // quarters used in it
	// Flits counts flits sent (the one being filled excluded); Messages
	// and Quarters count what was offered.
	Flits, Messages, Quarters int64
}

// FlitLinkBuilder builds one direction of a CXL link, the way the ideal
// gate is built (LinkBuilder): a value whose With methods return a
// modified copy. Start from MakeFlitLinkBuilder; a preset comes from
// CXLPreset and goes in with WithConfig.
type FlitLinkBuilder struct {
	cfg   CXLConfig
	share float64
}

// MakeFlitLinkBuilder returns a builder with DefaultConfig's link (the
// pcie6-x16 preset) at its whole bandwidth.
func MakeFlitLinkBuilder() FlitLinkBuilder {
	return FlitLinkBuilder{cfg: DefaultConfig().Link.CXL, share: 1}
}

// WithConfig returns a copy that builds links of c: a preset (CXLPreset)
// or a decoded link.cxl section.
func (b FlitLinkBuilder) WithConfig(c CXLConfig) FlitLinkBuilder { b.cfg = c; return b }

// WithShare returns a copy whose link keeps share (0, 1] of the raw
// bandwidth for gradient traffic (link.share).
func (b FlitLinkBuilder) WithShare(share float64) FlitLinkBuilder { b.share = share; return b }

// Build returns an idle link direction: a flit takes FlitBytes / (raw
// rate x share). It panics on an invalid configuration or share
// (Config.Validate rejects a user's bad values first).
func (b FlitLinkBuilder) Build(name string) *FlitLink {
	c := b.cfg
	if err := c.Validate(); err != nil {
		panic(fmt.Sprintf("timing: link %s: %v", name, err))
	}
	if !(b.share > 0 && b.share <= 1) {
		panic(fmt.Sprintf("timing: link %s: share %g outside (0, 1]", name, b.share))
	}
	fs := float64(c.FlitBytes) / c.RawBytesPerSec() / b.share * 1e15
	return &FlitLink{name: mustName(name), flitFS: max(int64(math.Round(fs)), 1), cap: 4 * c.SlotsPerFlit()}
}

// Name returns the component's hierarchical name.
func (l *FlitLink) Name() string { return l.name }

// FlitTime returns one flit's time on the wire, rounded to a picosecond.
func (l *FlitLink) FlitTime() Time { return Time((l.flitFS + 500) / 1000) }

// Accept offers a message of q quarter slots at arrive and returns when
// its last flit has been received (port latency not included).
func (l *FlitLink) Accept(arrive Time, q int) Time {
	a := int64(arrive) * 1000
	l.Messages++
	l.Quarters += int64(q)
	if l.used > 0 && a > l.ns {
		// The flit being filled has left: it goes as it is.
		l.ns += l.flitFS
		l.used = 0
		l.Flits++
	}
	if l.used == 0 && a > l.ns {
		l.ns = a // idle link
	}
	for {
		k := min(q, l.cap-l.used)
		l.used += k
		q -= k
		if q == 0 {
			break
		}
		l.ns += l.flitFS
		l.used = 0
		l.Flits++
	}
	end := l.ns + l.flitFS
	if l.used == l.cap {
		l.ns += l.flitFS
		l.used = 0
		l.Flits++
	}
	return Time((end + 999) / 1000)
}

// BusyTime returns the wire time of every flit sent or being filled.
func (l *FlitLink) BusyTime() Time {
	n := l.Flits
	if l.used > 0 {
		n++
	}
	return Time(n * l.flitFS / 1000)
}
