package cxldev

import (
	"fmt"
	"math"
	"strings"

	"github.com/neuronfabric/nfabric/timing/internal/field"
	"github.com/neuronfabric/nfabric/timing/sim"
	"github.com/neuronfabric/nfabric/usage"
)

// LinkConfig describes the two-way CXL link between the host's root port
// and the device (see LinkPreset). Every CXL.mem message is cut into
// 16-byte slots packed into flits; a flit leaves when the link is free
// and carries whatever slots are waiting then (a partly filled flit is
// not held back for more), and a message is delivered when the flit
// holding its last slot has been received and checked, plus the port
// latency.
//
// Flit formats. A 68-byte flit (CXL 1.1/2.0) is a header slot and three
// generic slots (CXL 2.0 Sec. 4.2.3): message headers go into the header
// slot while it has room, and otherwise into a generic slot, data only
// into generic slots, so a 64-byte line of data spans four generic slots
// of two flits. The all-data flit (four data slots, no header slot) is
// not modelled. A 256-byte flit (CXL 3.x) is modelled as fifteen generic
// slots that headers and data share.
type LinkConfig struct {
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
	// PortLatencyNS is the one-way latency of the link's ports (PHY,
	// retimers), paid by every message in each direction on top of its
	// flits. The host bridge and the protocol layers are stages of their
	// own (Config.Host, Config.ProtocolNS).
	PortLatencyNS float64 `yaml:"port_latency_ns" json:"port_latency_ns"`
}

// LinkPreset returns a named link:
//
//   - pcie5-x8: CXL 2.0 on PCIe 5.0 x8, 32 GT/s x 8 lanes with 128b/130b
//     encoding (31.5 GB/s per direction), 68-byte flits (the CXL Type-3
//     expanders of 2023-2025: Samsung CMM-D, Micron CZ120, the ASIC of
//     CXL-DMSim's testbed);
//   - pcie5-x16: the same on 16 lanes (63.0 GB/s; Intel Agilex-7
//     R-Tile FPGA devices);
//   - pcie6-x16: CXL 3.x on PCIe 6.0 x16, 64 GT/s PAM4 x 16 lanes in FLIT
//     mode (128 GB/s per direction, 119.2 GiB/s), 256-byte flits.
//
// All take two headers a slot and a 25 ns port latency (assumptions; a
// device preset sets its own).
func LinkPreset(name string) (LinkConfig, error) {
	c := LinkConfig{Preset: name, Lanes: 16, HeadersPerSlot: 2, PortLatencyNS: 25}
	switch name {
	case "pcie5-x8":
		c.TransferGTps, c.EncodingEfficiency, c.FlitBytes, c.Lanes = 32, 128.0/130, 68, 8
	case "pcie5-x16":
		c.TransferGTps, c.EncodingEfficiency, c.FlitBytes = 32, 128.0/130, 68
	case "pcie6-x16":
		c.TransferGTps, c.EncodingEfficiency, c.FlitBytes = 64, 1, 256
	default:
		return LinkConfig{}, usage.Errorf("unknown CXL link preset %q (want %s)", name, strings.Join(LinkPresets(), ", "))
	}
	return c, nil
}

// LinkPresets lists the link preset names.
func LinkPresets() []string { return []string{"pcie5-x8", "pcie5-x16", "pcie6-x16"} }

// Validate returns a usage error naming the first invalid field (its YAML
// key below the link block).
func (c LinkConfig) Validate() error {
	if err := field.Float("transfer_gtps", c.TransferGTps, 0.1, 1024); err != nil {
		return err
	}
	if err := field.Int("lanes", c.Lanes, 1, 64); err != nil {
		return err
	}
	if !field.Finite(c.EncodingEfficiency) || c.EncodingEfficiency <= 0 || c.EncodingEfficiency > 1 {
		return usage.Errorf("encoding_efficiency: must be in (0, 1], got %g", c.EncodingEfficiency)
	}
	if c.FlitBytes != 68 && c.FlitBytes != 256 {
		return usage.Errorf("flit_bytes: want 68 (CXL 2.0) or 256 (CXL 3.x), got %d", c.FlitBytes)
	}
	if c.HeadersPerSlot != 1 && c.HeadersPerSlot != 2 && c.HeadersPerSlot != 4 {
		return usage.Errorf("headers_per_slot: want 1, 2 or 4, got %d", c.HeadersPerSlot)
	}
	return field.Float("port_latency_ns", c.PortLatencyNS, 0, 1e5)
}

// RawBytesPerSec returns the per-direction wire rate after encoding.
func (c LinkConfig) RawBytesPerSec() float64 {
	return c.TransferGTps * 1e9 * float64(c.Lanes) / 8 * c.EncodingEfficiency
}

// Msg is a CXL.mem message kind.
type Msg uint8

// The CXL.mem messages the model sends: M2S Req (a read request, a
// header), M2S RwD (a write: a whole header slot and 64 B of data), S2M
// DRS (read data: a header and 64 B) and S2M NDR (a write's completion,
// a header).
const (
	M2SReq Msg = iota
	M2SRwD
	S2MDRS
	S2MNDR
)

// quarters returns m's header and data sizes in quarter slots (4 B
// units, the granularity at which headers share a slot).
func (c LinkConfig) quarters(m Msg) (hdr, data int) {
	h := 4 / c.HeadersPerSlot
	switch m {
	case M2SRwD:
		return 4, 16
	case S2MDRS:
		return h, 16
	}
	return h, 0
}

// slots returns a flit's header-slot and generic-slot capacities in
// quarters: 4 and 12 for 68-byte flits, 0 and 60 for 256-byte ones.
func (c LinkConfig) slots() (hdr, gen int) {
	if c.FlitBytes == 256 {
		return 0, 60
	}
	return 4, 12
}

// LineGiBps returns the most line data one direction can carry, in GiB/s,
// when every flit is full of read responses (S2M DRS): the flit framing,
// the header slot and the headers applied to the raw rate, times share.
// Lines per flit: data fills the generic slots while the headers fit in
// the header slot, else headers and data share every slot.
func (c LinkConfig) LineGiBps(share float64) float64 {
	flitSec := float64(c.FlitBytes) / c.RawBytesPerSec() / share
	hq, dq := c.quarters(S2MDRS)
	hc, gc := c.slots()
	lines := float64(gc) / float64(dq)
	if float64(hq)*lines > float64(hc) {
		lines = float64(hc+gc) / float64(hq+dq)
	}
	return lines * 64 / flitSec / (1 << 30)
}

// FlitLink is one direction of a CXL link: a FIFO of messages packed into
// flits sent back to back (LinkConfig's flit formats). Time is kept in
// femtoseconds inside, so that a flit time such as 2.158 ns (68 B at
// 31.5 GB/s) accumulates without drift. Messages must be offered in
// nondecreasing time order; one offered no later than the start of the
// flit being filled joins that flit (in-order service).
type FlitLink struct {
	name         string
	flitFS       int64
	size         [4][2]int // each Msg's header and data quarters
	hCap, gCap   int
	start        int64 // start of the flit being filled, fs
	hUsed, gUsed int   // quarters used in it
	// Flits counts flits sent (the one being filled excluded); Messages
	// counts what was offered.
	Flits, Messages int64
}

// FlitLinkBuilder builds one direction of a CXL link: a value whose With
// methods return a modified copy. Start from MakeFlitLinkBuilder; a
// preset comes from LinkPreset and goes in with WithConfig.
type FlitLinkBuilder struct {
	cfg   LinkConfig
	share float64
}

// MakeFlitLinkBuilder returns a builder of the pcie6-x16 preset at its
// whole bandwidth.
func MakeFlitLinkBuilder() FlitLinkBuilder {
	c, _ := LinkPreset("pcie6-x16")
	return FlitLinkBuilder{cfg: c, share: 1}
}

// WithConfig returns a copy that builds links of c.
func (b FlitLinkBuilder) WithConfig(c LinkConfig) FlitLinkBuilder { b.cfg = c; return b }

// WithShare returns a copy whose link keeps share (0, 1] of the raw
// bandwidth for gradient traffic (link.share).
func (b FlitLinkBuilder) WithShare(share float64) FlitLinkBuilder { b.share = share; return b }

// Build returns an idle link direction: a flit takes FlitBytes / (raw
// rate x share). It panics on an invalid configuration or share (the
// model's Validate rejects a user's bad values first).
func (b FlitLinkBuilder) Build(name string) *FlitLink {
	c := b.cfg
	if err := c.Validate(); err != nil {
		panic(fmt.Sprintf("cxldev: link %s: %v", name, err))
	}
	if !(b.share > 0 && b.share <= 1) {
		panic(fmt.Sprintf("cxldev: link %s: share %g outside (0, 1]", name, b.share))
	}
	l := &FlitLink{name: sim.MustName(name), flitFS: c.FlitFS(b.share)}
	l.hCap, l.gCap = c.slots()
	for m := range l.size {
		h, d := c.quarters(Msg(m))
		if l.hCap == 0 {
			h, d = 0, h+d // header and data share the generic slots
		}
		l.size[m] = [2]int{h, d}
	}
	return l
}

// Name returns the component's hierarchical name.
func (l *FlitLink) Name() string { return l.name }

// FlitTime returns one flit's time on the wire, rounded to a picosecond.
func (l *FlitLink) FlitTime() sim.Time { return sim.Time((l.flitFS + 500) / 1000) }

// seal sends the flit being filled and starts the next one right after.
func (l *FlitLink) seal() {
	l.start += l.flitFS
	l.hUsed, l.gUsed = 0, 0
	l.Flits++
}

// Accept offers message m at arrive and returns when its last flit has
// been received (port latency not included).
func (l *FlitLink) Accept(arrive sim.Time, m Msg) sim.Time {
	a := int64(arrive) * 1000
	l.Messages++
	if l.hUsed+l.gUsed > 0 && a > l.start {
		l.seal() // the flit being filled has left: it goes as it is
	}
	if l.hUsed+l.gUsed == 0 && a > l.start {
		l.start = a // idle link
	}
	hq, dq := l.size[m][0], l.size[m][1]
	if hq > 0 {
		// 68-byte flits: the header stays whole, in the header slot, else
		// a generic slot, else the next flit's header slot. (On 256-byte
		// flits size holds the header with the data, which may straddle
		// flits.)
		switch {
		case l.hCap-l.hUsed >= hq:
			l.hUsed += hq
		case l.gCap-l.gUsed >= hq:
			l.gUsed += hq
		default:
			l.seal()
			l.hUsed = hq
		}
	}
	for dq > 0 {
		if l.gUsed == l.gCap {
			l.seal()
		}
		k := min(dq, l.gCap-l.gUsed)
		l.gUsed += k
		dq -= k
	}
	end := l.start + l.flitFS
	if l.gUsed == l.gCap && l.hUsed == l.hCap {
		l.seal()
	}
	return sim.Time((end + 999) / 1000)
}

// BusyTime returns the wire time of every flit sent or being filled.
func (l *FlitLink) BusyTime() sim.Time {
	n := l.Flits
	if l.hUsed+l.gUsed > 0 {
		n++
	}
	return sim.Time(n * l.flitFS / 1000)
}

// IdleFlits returns the flits message m takes on an idle link: on
// 68-byte flits its header rides in the first flit's header slot and its
// data fills three generic slots a flit; on 256-byte flits header and
// data fill the fifteen slots together.
func (c LinkConfig) IdleFlits(m Msg) int {
	hq, dq := c.quarters(m)
	hc, gc := c.slots()
	if hc == 0 {
		dq += hq
	}
	return max(1, (dq+gc-1)/gc)
}

// FlitFS returns one flit's time on the wire at share (0, 1] of the raw
// rate, in femtoseconds, rounded as a FlitLink rounds it.
func (c LinkConfig) FlitFS(share float64) int64 {
	return max(int64(math.Round(float64(c.FlitBytes)/c.RawBytesPerSec()/share*1e15)), 1)
}
