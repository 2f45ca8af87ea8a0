package collective

import (
	"fmt"
	"math"
)

// This file is an analytical mode with ASTRA-sim's own terms, read from its
// source (astra-sim/astra-sim: system/astraccl/.../Ring.cc, PacketBundle.cc,
// MemBus.cc, Sys.cc; astra-sim/astra-network-analytical: NetworkFunction.cpp,
// congestion_aware/network/Link.cpp, congestion_unaware/basic-topology/*)
// and checked against the cycle counts of its published regression cases
// (astra_test.go names them). Nothing is copied: the closed forms below are
// derived from the event sequence that source produces.
//
// # Conventions
//
//   - Time is in cycles of 1 ns (the analytical backend's EventTime).
//   - Network bandwidth is written "GB/s" but converted as GiB/s:
//     bw_Bpns = bw * 2^30 / 1e9 (NetworkFunction.cpp). The system layer's
//     local-mem-bw, also written "GB/s", is decimal: bw * 1e9 B/s (Sys.cc).
//   - Every delay is truncated to an integer number of cycles where the
//     source casts it (static_cast<EventTime>, static_cast<uint64_t>).
//
// # Network backend
//
// Congestion-unaware: a message of m bytes over h hops of one dimension
// takes trunc(h*L + m/bw) (store-and-forward ignored; only the dimension
// in which the two addresses differ is used). Congestion-aware: a chunk is
// forwarded link by link, each link taking trunc(L + m/bw) to deliver it and
// trunc(m/bw) before it is free again, so an uncontended chunk over h hops
// takes h*trunc(L + m/bw). Hops: ring, min(clockwise, anticlockwise) when
// bidirectional (the default); switch, 2; fully connected, 1.
//
// # Ring collectives (system layer, one dimension)
//
// Chunking (Sys::generate_collective, Sys::determine_chunk_size): the
// collective of S bytes has a chunk size c = floor(S/P), P =
// preferred-dataset-splits. If c is smaller than the node count n (every
// operation but the all-gather), c is raised to n and S to P*c. The system
// layer then generates ceil(S/c) chunks and gives each of them c bytes:
// the loop subtracts c from the remaining size (clamping at zero) but
// hands every chunk the full c, so when P does not divide S there are more
// than P chunks, the last one carrying c bytes although fewer remain
// (1,000,000 B in 3 splits: c = 333,333, 4 chunks of 333,333 B). With
// active-chunks-per-dimension 1 the chunks run one after another.
//
// Endpoint delay (GeneralComplexTopology, Ring, MemBus): every dimension
// of a Ring/Direct/HalvingDoubling collective is built as a RingTopology of
// dimension NA, never Local, so Ring picks MemBus's Usual transmission,
// whose delay (with model-shared-bus 0, the default and the only case
// modelled) is communication_delay: the system JSON's endpoint-delay
// times injection_scale (1 in the analytical frontend), 10 cycles when the
// JSON has none. MemBus's fixed 10-cycle Fast path belongs to the Local
// dimension, which this construction never produces; so d_bus =
// endpoint-delay.
//
// A chunk's ring (Ring.cc) sends K messages of m bytes, each waiting for
// the previous one to arrive from the ring predecessor:
//
//	operation        K           m          reduced messages R
//	all-reduce       2(n-1)      floor(c/n) n-1 (the reduce-scatter half)
//	reduce-scatter   n-1         floor(c/n) n-1
//	all-gather       n-1         c          0
//	all-to-all       n(n-1)/2    floor(c/n) 0   (stream_count; one packet in flight)
//
// Every message first crosses the NPU-memory bus (d_bus); a reduced one
// also pays the local-memory reduction, three passes over m bytes (write,
// read, read) at local-mem-bw: d_red = 3*trunc(m/B_mem). Reaching the ring
// neighbour costs d_net = h*trunc(L + m/bw) on the congestion-aware
// backend (h = 1 on a ring, 2 through a switch, which stores and forwards
// the whole message). Summing the event chain,
//
//	T_chunk = d_bus + K (d_net + d_bus) + R d_red
//	T       = ceil(S/c) * T_chunk
//
// (the first message pays only the bus, each later one the hop before it,
// and the last arrival pays the bus once more before the chunk retires).
// The published rt_template case (an all-reduce, endpoint-delay 10, P = 4
// dividing 1 MiB) gives 117,780 cycles; it cannot tell d_bus =
// endpoint-delay from a fixed 10 cycles, nor ceil(S/c) from P, and
// ASTRA-sim publishes no cycle count for the other three operations, so
// astra_test.go checks every row on event chains worked by hand from
// Ring.cc. A BROADCAST is not modelled by ASTRA-sim's system layer: its
// workload layer replays the node's recorded duration (whole microseconds
// times 1000 cycles, 1 cycle when none is recorded), and Astra.Cycles does
// the same. ASTRA-sim stops on every other operation.

// AstraTopology is a basic topology of ASTRA-sim's analytical network.
type AstraTopology uint8

const (
	AstraRing AstraTopology = iota
	AstraFullyConnected
	AstraSwitch
)

func (t AstraTopology) String() string {
	switch t {
	case AstraRing:
		return "Ring"
	case AstraFullyConnected:
		return "FullyConnected"
	case AstraSwitch:
		return "Switch"
	}
	return fmt.Sprintf("AstraTopology(%d)", uint8(t))
}

// AstraDim is one dimension of an ASTRA-sim analytical network, in its own
// units: BandwidthGBps as its YAML "bandwidth" (converted as GiB/s) and
// LatencyNS as its "latency" per link.
type AstraDim struct {
	Topology      AstraTopology
	NPUs          int
	BandwidthGBps float64
	LatencyNS     float64
	// Unidirectional makes a ring send clockwise only.
	Unidirectional bool
}

// AstraBpns converts ASTRA-sim's network "GB/s" to bytes per ns: bw * 2^30 / 1e9.
func AstraBpns(gbps float64) float64 { return gbps * (1 << 30) / 1e9 }

func (d AstraDim) validate() error {
	if d.NPUs < 2 || !(d.BandwidthGBps > 0) || math.IsInf(d.BandwidthGBps, 0) || !(d.LatencyNS >= 0) || math.IsInf(d.LatencyNS, 0) || d.Topology > AstraSwitch {
		return fmt.Errorf("astra: dimension %+v: want >= 2 NPUs, finite bandwidth > 0, latency >= 0", d)
	}
	return nil
}

// Hops returns the links a message crosses from src to dst in d.
func (d AstraDim) Hops(src, dst int) (int, error) {
	if err := d.validate(); err != nil {
		return 0, err
	}
	if src < 0 || dst < 0 || src >= d.NPUs || dst >= d.NPUs || src == dst {
		return 0, fmt.Errorf("astra: send %d -> %d in a %d-NPU %v", src, dst, d.NPUs, d.Topology)
	}
	switch d.Topology {
	case AstraFullyConnected:
		return 1, nil
	case AstraSwitch:
		return 2, nil
	}
	cw := ((dst-src)%d.NPUs + d.NPUs) % d.NPUs
	if d.Unidirectional {
		return cw, nil
	}
	return min(cw, d.NPUs-cw), nil
}

func (d AstraDim) serial(bytes int64) float64 { return float64(bytes) / AstraBpns(d.BandwidthGBps) }

// AstraSendUnaware is the congestion-unaware backend's delay of one
// message of bytes from NPU src to dst in a multi-dimensional network
// (addresses are mixed-radix, dimension 0 fastest); src and dst must
// differ in exactly one dimension, as in the backend.
func AstraSendUnaware(dims []AstraDim, src, dst int, bytes int64) (int64, error) {
	if bytes <= 0 || len(dims) == 0 {
		return 0, fmt.Errorf("astra: send of %d bytes over %d dimensions", bytes, len(dims))
	}
	dim, s, t := -1, 0, 0
	for i, d := range dims {
		if err := d.validate(); err != nil {
			return 0, err
		}
		a, b := src%d.NPUs, dst%d.NPUs
		src, dst = src/d.NPUs, dst/d.NPUs
		if a != b {
			if dim >= 0 {
				return 0, fmt.Errorf("astra: send differs in dimensions %d and %d; the backend moves one at a time", dim, i)
			}
			dim, s, t = i, a, b
		}
	}
	if dim < 0 || src != 0 || dst != 0 {
		return 0, fmt.Errorf("astra: send between the same NPU or outside the network")
	}
	h, err := dims[dim].Hops(s, t)
	if err != nil {
		return 0, err
	}
	return int64(float64(h)*dims[dim].LatencyNS + dims[dim].serial(bytes)), nil
}

// AstraChunkAware is the congestion-aware backend's delay of one chunk on
// an otherwise idle dimension: hops * trunc(L + m/bw).
func AstraChunkAware(d AstraDim, src, dst int, bytes int64) (int64, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("astra: chunk of %d bytes", bytes)
	}
	h, err := d.Hops(src, dst)
	if err != nil {
		return 0, err
	}
	return int64(h) * int64(d.LatencyNS+d.serial(bytes)), nil
}

// AstraAllGatherAwareBound is a closed-form estimate of the
// congestion-aware backend's time for every NPU of a ring to send bytes to
// every other at once: the busiest link's load times its serialization
// time, plus the link latency of the last chunk through it,
// load*trunc(m/bw) + L. On a bidirectional ring ties go clockwise, so the
// clockwise link carries every distance up to n/2: load = sum of d for
// d = 1..floor(n/2). It is a bound, not the backend's event order.
func AstraAllGatherAwareBound(d AstraDim, bytes int64) (int64, error) {
	if err := d.validate(); err != nil {
		return 0, err
	}
	if d.Topology != AstraRing || bytes <= 0 {
		return 0, fmt.Errorf("astra: all-gather bound needs a ring and bytes > 0")
	}
	far := d.NPUs / 2
	if d.Unidirectional {
		far = d.NPUs - 1
	}
	load := int64(far * (far + 1) / 2)
	return load*int64(d.serial(bytes)) + int64(d.LatencyNS), nil
}

// AstraSystem is the part of ASTRA-sim's system configuration (its
// system JSON) the ring collectives use, in its terms.
type AstraSystem struct {
	// DatasetSplits is "preferred-dataset-splits"; ActiveChunks
	// "active-chunks-per-dimension" (only 1 is modelled).
	DatasetSplits int
	ActiveChunks  int
	// LocalMemBWGBps is "local-mem-bw" in decimal GB/s.
	LocalMemBWGBps float64
	// EndpointDelay is "endpoint-delay" in cycles (ASTRA-sim's default,
	// when its JSON omits the key, is 10): MemBus's Usual path, the one
	// every ring dimension takes, charges it on each message.
	EndpointDelay int64
	// Impl is each operation's "*-implementation" list, one name per
	// network dimension (ring, oneRing, direct, halvingDoubling, ...);
	// an operation without one is not priced. A nil map means ring for
	// all four (what tests/rt_template's system file gives).
	Impl map[Op][]string
}

// impl returns the implementation of op on the first dimension, or an
// error wrapping ErrUnsupported when it is not ASTRA-sim's ring.
func (s AstraSystem) impl(op Op) error {
	if s.Impl == nil {
		return nil
	}
	names, ok := s.Impl[op]
	if !ok || len(names) == 0 {
		return fmt.Errorf("%w: the system file gives no %s-implementation", ErrUnsupported, op)
	}
	if names[0] != "ring" && names[0] != "oneRing" {
		return fmt.Errorf("%w: %s-implementation %q (only ASTRA-sim's ring, or oneRing, is modelled)", ErrUnsupported, op, names[0])
	}
	return nil
}

// AstraRingEstimate is one collective by ASTRA-sim's ring, in its terms.
type AstraRingEstimate struct {
	Op     Op    `json:"op"`
	Cycles int64 `json:"cycles"`
	// Chunks is ceil(S/c), ChunkBytes c, MsgBytes m; Sends and Reduced
	// count a chunk's messages and those that pay the reduction.
	Chunks     int   `json:"chunks"`
	ChunkBytes int64 `json:"chunk_bytes"`
	MsgBytes   int64 `json:"msg_bytes"`
	Sends      int64 `json:"sends"`
	Reduced    int64 `json:"reduced"`
	// NetCycles is d_net, BusCycles d_bus (the endpoint delay),
	// ReduceCycles d_red per message.
	NetCycles    int64 `json:"net_cycles"`
	BusCycles    int64 `json:"bus_cycles"`
	ReduceCycles int64 `json:"reduce_cycles"`
}

// AstraRingCollective models ASTRA-sim's ring implementation of an all-reduce,
// reduce-scatter, all-gather or all-to-all of bytes (Chakra's comm_size)
// on the one-dimensional network d: the closed form in this file's
// comment.
func AstraRingCollective(sys AstraSystem, d AstraDim, op Op, bytes int64) (AstraRingEstimate, error) {
	if err := d.validate(); err != nil {
		return AstraRingEstimate{}, err
	}
	if sys.DatasetSplits < 1 || sys.ActiveChunks != 1 || !(sys.LocalMemBWGBps > 0) || math.IsInf(sys.LocalMemBWGBps, 0) || sys.EndpointDelay < 0 || bytes <= 0 {
		return AstraRingEstimate{}, fmt.Errorf("astra: system %+v, %d bytes: want splits >= 1, active chunks 1, local-mem-bw > 0, bytes > 0", sys, bytes)
	}
	n, p := int64(d.NPUs), int64(sys.DatasetSplits)
	e := AstraRingEstimate{Op: op, BusCycles: sys.EndpointDelay}
	switch op {
	case AllReduce:
		e.Sends, e.Reduced = 2*(n-1), n-1
	case ReduceScatter:
		e.Sends, e.Reduced = n-1, n-1
	case AllGather:
		e.Sends = n - 1
	case AllToAll:
		e.Sends = n * (n - 1) / 2
	default:
		return AstraRingEstimate{}, fmt.Errorf("%w: ASTRA-sim's ring runs all-reduce, reduce-scatter, all-gather and all-to-all, not %v", ErrUnsupported, op)
	}
	c, chunks := bytes/p, p
	switch {
	case op != AllGather && c < n:
		c = n // determine_chunk_size: S becomes P*c, so P chunks
	case c == 0:
		return AstraRingEstimate{}, fmt.Errorf("astra: all-gather of %d bytes in %d splits leaves chunks of 0 bytes (ASTRA-sim divides by the chunk size)", bytes, p)
	default:
		chunks = (bytes + c - 1) / c
	}
	e.Chunks, e.ChunkBytes, e.MsgBytes = int(chunks), c, c/n
	if op == AllGather {
		e.MsgBytes = c // Ring.cc: an all-gather's message is the whole chunk
	}
	h, err := d.Hops(0, 1)
	if err != nil {
		return AstraRingEstimate{}, err
	}
	e.NetCycles = int64(h) * int64(d.LatencyNS+d.serial(e.MsgBytes))
	e.ReduceCycles = 3 * int64(float64(e.MsgBytes)/(sys.LocalMemBWGBps*1e9)*1e9)
	chunk := e.BusCycles + e.Sends*(e.NetCycles+e.BusCycles) + e.Reduced*e.ReduceCycles
	e.Cycles = chunks * chunk
	return e, nil
}

// Astra is ASTRA-sim's analytical mode as a Model: the system JSON's
// settings and the network YAML's dimensions (only one is modelled).
// Cycles are ASTRA-sim's, 1 ns each.
type Astra struct {
	System  AstraSystem
	Network []AstraDim
}

// NewAstra checks sys and the network (one dimension, ring collectives'
// settings) and returns the model, or an error naming what is not
// modelled.
func NewAstra(sys AstraSystem, network []AstraDim) (Astra, error) {
	a := Astra{System: sys, Network: network}
	if len(network) != 1 {
		return a, fmt.Errorf("astra: a %d-dimensional network; only one dimension is modelled (ASTRA-sim runs a collective dimension by dimension)", len(network))
	}
	if err := network[0].validate(); err != nil {
		return a, err
	}
	switch {
	case sys.DatasetSplits < 1:
		return a, fmt.Errorf("astra: preferred-dataset-splits %d must be >= 1", sys.DatasetSplits)
	case sys.ActiveChunks != 1:
		return a, fmt.Errorf("astra: active-chunks-per-dimension %d: only 1 is modelled (more chunks at once contend for the links, which needs ASTRA-sim's event simulation)", sys.ActiveChunks)
	case !(sys.LocalMemBWGBps > 0) || math.IsInf(sys.LocalMemBWGBps, 0):
		return a, fmt.Errorf("astra: local-mem-bw %v must be finite and > 0", sys.LocalMemBWGBps)
	case sys.EndpointDelay < 0:
		return a, fmt.Errorf("astra: endpoint-delay %d must be >= 0", sys.EndpointDelay)
	}
	return a, nil
}

// Ranks is the network's NPU count.
func (a Astra) Ranks() int {
	if len(a.Network) == 0 {
		return 0
	}
	n := 1
	for _, d := range a.Network {
		n *= d.NPUs
	}
	return n
}

// String describes the model and its units.
func (a Astra) String() string {
	if len(a.Network) != 1 {
		return fmt.Sprintf("ASTRA-sim analytical (%d dimensions)", len(a.Network))
	}
	d := a.Network[0]
	return fmt.Sprintf("ASTRA-sim analytical, congestion-aware: %v of %d NPUs, %g GB/s as ASTRA-sim reads it (GiB/s: %.4g B/ns), %g ns a link; "+
		"%d dataset splits, endpoint delay %d cycles, local-mem-bw %g GB/s (decimal); 1 cycle = 1 ns",
		d.Topology, d.NPUs, d.BandwidthGBps, AstraBpns(d.BandwidthGBps), d.LatencyNS,
		a.System.DatasetSplits, a.System.EndpointDelay, a.System.LocalMemBWGBps)
}

// Cycles prices c in ASTRA-sim's cycles: the ring collectives by
// AstraRingCollective, a BROADCAST by its recorded duration (ASTRA-sim's workload
// layer replays it: whole microseconds times 1000, 1 cycle when none is
// recorded); ASTRA-sim stops on the other operations ("Unsupported
// collective comm type"), so they wrap ErrUnsupported.
func (a Astra) Cycles(c Call) (AstraRingEstimate, error) {
	if err := checkCall(c); err != nil {
		return AstraRingEstimate{}, err
	}
	if len(a.Network) != 1 {
		return AstraRingEstimate{}, fmt.Errorf("astra: a %d-dimensional network; only one dimension is modelled", len(a.Network))
	}
	switch c.Op {
	case AllReduce, ReduceScatter, AllGather, AllToAll:
		if err := a.System.impl(c.Op); err != nil {
			return AstraRingEstimate{}, err
		}
		if c.Bytes > 1<<62 || c.Bytes != math.Trunc(c.Bytes) {
			return AstraRingEstimate{}, fmt.Errorf("astra: %v of %v bytes: want a whole number of bytes below 2^62", c.Op, c.Bytes)
		}
		return AstraRingCollective(a.System, a.Network[0], c.Op, int64(c.Bytes))
	case Broadcast:
		us := math.Floor(c.RecordedS*1e6 + 0.5)
		if us > 1e12 {
			return AstraRingEstimate{}, fmt.Errorf("astra: broadcast recorded as %v s, above 10^6 s", c.RecordedS)
		}
		cyc := int64(us) * 1000
		if cyc == 0 {
			cyc = 1
		}
		return AstraRingEstimate{Op: c.Op, Cycles: cyc}, nil
	}
	return AstraRingEstimate{}, fmt.Errorf("%w: ASTRA-sim's workload layer has no %s (it stops with \"Unsupported collective comm type\")", ErrUnsupported, c.Op.Chakra())
}

// Time is Cycles in seconds (1 cycle = 1 ns). It has no alpha-beta split:
// LatencyS and BandwidthS stay zero.
func (a Astra) Time(c Call) (Estimate, error) {
	e, err := a.Cycles(c)
	if err != nil {
		return Estimate{}, err
	}
	out := Estimate{Seconds: float64(e.Cycles) * 1e-9, Bytes: c.Bytes}
	out.fill(busFactor(c.Op, float64(a.Ranks())))
	return out, nil
}
