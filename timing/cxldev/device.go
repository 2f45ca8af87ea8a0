package cxldev

import (
	"fmt"
	"strings"

	"github.com/neuronfabric/nfabric/timing/dram"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// ring is a growable FIFO; it grows only while more items are queued
// than ever before, so its memory is bounded by the peak occupancy.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		nb := make([]T, max(8, 2*len(r.buf)))
		for i := 0; i < r.size; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

func (r *ring[T]) peek() T { return r.buf[r.head] }

func (r *ring[T]) pop() T {
	v := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v
}

// Request is one cache-line access the host hands a device.
type Request struct {
	// Line is the device-local line number.
	Line uint64
	// Write marks a posted writeback (M2S RwD, answered by an NDR);
	// otherwise a read (M2S Req, answered by a DRS). LowBit sends a
	// read's data through the aggregation pipeline.
	Write, LowBit bool
	// Issue is when the host issued the access; a read's latency runs
	// from it.
	Issue sim.Time
	// Owner gets an event with OwnerArg when the request completes at the
	// host: a read when its data arrives, a write when it has left the
	// host (nil: a write nobody waits for).
	Owner    sim.Handler
	OwnerArg int64
}

// devReq is one request inside a Device, from the host bridge to its
// completion.
type devReq struct {
	Request
	sent   sim.Time // when it left the host on the request link
	arrive sim.Time // when it reached the device (after protocol processing)
	ch     int32
	acc    dram.Access
}

// Device event kinds, in the low two bits of an event's arg (the request
// id above them).
const (
	devArrive int64 = iota
	devEgress
	devBridge
)

// credits is one pool of flow-control credits: the host takes one per
// request and gets it back at a time the device decides.
type credits struct {
	free int
	back ring[sim.Time]
}

// reclaim moves the credits returned by now into the free pool.
func (c *credits) reclaim(now sim.Time) {
	for c.back.size > 0 && c.back.peek() <= now {
		c.back.pop()
		c.free++
	}
}

// Device is one CXL memory device on its host port in the detailed
// models (memory.model dram or link.model cxl): the host's fabric and
// bridge stages, its egress with the device's credits, the request
// direction of the link, the device's protocol stage and request queue,
// the memory (DRAM channels or the ideal fixed latency), the aggregation
// pipeline on the read-response path, the protocol stage again and the
// response direction of the link (Config's stages). It is event-driven:
// requests become events when they leave the host bridge and when they
// reach the device, the DRAM channels schedule their own commands, and
// completions are events on the request's owner.
//
// Back-pressure runs the whole way: the host sends a request only with a
// request-queue credit and a response-queue credit; a request leaves the
// request queue only when its DRAM channel queue has room, in arrival
// order per channel (a head blocked by its channel's full queue holds
// back only that channel's requests: each channel has its own command
// bus, scheduler queue and refresh, and CXL.mem orders no requests to
// different lines); a request-queue credit comes back one port latency
// after its entry frees, a response-queue credit one port latency after
// the request's response has left. Posted writebacks from the LLC travel
// the same path as M2S RwD and are acknowledged with an NDR.
type Device struct {
	name  string
	eng   *sim.Engine // concrete: Schedule runs several times a line
	ideal bool
	lat   sim.Time // ideal memory latency
	chans []*dram.Channel
	mapr  dram.Mapper
	front sim.Time
	// Pipe is the aggregation datapath.
	Pipe *Pipeline
	// ReqLink and RespLink are the two directions under link.model cxl;
	// Gate is the response gate under link.model gate (ReqLink nil).
	ReqLink, RespLink *FlitLink
	Gate              *Gate
	port              sim.Time
	hostReq, hostResp sim.Time // host stages, one way
	proto             sim.Time // device protocol stage, one way

	reqCredits, respCredits credits
	creditFlow              bool // false under the gate: no credits
	bridge                  ring[int32]
	egress                  ring[int32]
	egressWake              bool
	ingress                 []ring[int32] // per DRAM channel, in arrival order

	reqs []devReq
	free []int32

	tracer              *sim.Tracer
	onRead              func(issue, done sim.Time)
	reqTrack, respTrack string
	queueTrack          []string

	// Reads and Writes count requests served; CreditStalls counts requests
	// that waited at the host for a credit.
	Reads, Writes, CreditStalls int64
}

// DeviceBuilder builds devices: a value whose With methods return a
// modified copy. Start from MakeDeviceBuilder; Build needs a scheduler.
type DeviceBuilder struct {
	cfg      Config
	eng      *sim.Engine
	pipe     PipelineBuilder
	share    float64
	gateBps  int64
	ideal    bool
	idealLat sim.Time
	tracer   *sim.Tracer
	onRead   func(issue, done sim.Time)
}

// MakeDeviceBuilder returns a builder of the projection-pcie6-x16 device
// with the paper's pipeline, the whole link and its DRAM. Build needs an
// engine (WithEngine).
func MakeDeviceBuilder() DeviceBuilder {
	p, _ := Lookup("projection-pcie6-x16")
	return DeviceBuilder{cfg: p.Config, pipe: MakePipelineBuilder(), share: 1}
}

// WithConfig returns a copy building devices of c.
func (b DeviceBuilder) WithConfig(c Config) DeviceBuilder { b.cfg = c; return b }

// WithEngine returns a copy whose devices run on eng.
func (b DeviceBuilder) WithEngine(eng *sim.Engine) DeviceBuilder { b.eng = eng; return b }

// WithPipeline returns a copy building the aggregation datapath with p.
func (b DeviceBuilder) WithPipeline(p PipelineBuilder) DeviceBuilder { b.pipe = p; return b }

// WithShare returns a copy whose link keeps share (0, 1] of its raw rate
// for these requests (link.share).
func (b DeviceBuilder) WithShare(share float64) DeviceBuilder { b.share = share; return b }

// WithGate returns a copy whose responses cross the paper's bandwidth
// gate of bytesPerSec in place of the two-way flit link (link.model
// gate: no request direction, no ports, no credits).
func (b DeviceBuilder) WithGate(bytesPerSec int64) DeviceBuilder { b.gateBps = bytesPerSec; return b }

// WithIdealMemory returns a copy whose memory is the paper's fixed
// latency with unlimited concurrency in place of the DRAM (memory.model
// ideal).
func (b DeviceBuilder) WithIdealMemory(lat sim.Time) DeviceBuilder {
	b.ideal, b.idealLat = true, lat
	return b
}

// WithTracer returns a copy whose devices record their stages into tr.
func (b DeviceBuilder) WithTracer(tr *sim.Tracer) DeviceBuilder { b.tracer = tr; return b }

// WithReadHook returns a copy whose devices call f with every read's
// issue and completion time.
func (b DeviceBuilder) WithReadHook(f func(issue, done sim.Time)) DeviceBuilder {
	b.onRead = f
	return b
}

// Build returns an idle device named name (its parts name.Pipe,
// name.ReqLink, name.DRAM.Ch[i], ...). It panics on an invalid
// configuration or a missing engine (the model's Validate rejects a
// user's bad values first).
func (b DeviceBuilder) Build(name string) *Device {
	if err := b.cfg.Validate(); err != nil {
		panic(fmt.Sprintf("cxldev: device %s: %v", name, err))
	}
	if b.eng == nil {
		panic(fmt.Sprintf("cxldev: device %s: no engine", name))
	}
	c := b.cfg
	d := &Device{name: sim.MustName(name), eng: b.eng, ideal: b.ideal, lat: b.idealLat,
		Pipe: b.pipe.Build(name + ".Pipe"), tracer: b.tracer, onRead: b.onRead,
		hostReq: c.HostOneWay(), hostResp: c.HostOneWay(), proto: sim.FromNS(c.ProtocolNS),
		reqTrack: name + ".ReqLink", respTrack: name + ".RespLink"}
	if b.gateBps > 0 {
		d.Gate = MakeGateBuilder().WithBandwidth(b.gateBps).Build(name + ".Link")
	} else {
		lb := MakeFlitLinkBuilder().WithConfig(c.Link).WithShare(b.share)
		d.ReqLink, d.RespLink = lb.Build(name+".ReqLink"), lb.Build(name+".RespLink")
		d.port = sim.FromNS(c.Link.PortLatencyNS)
		d.creditFlow = true
		d.reqCredits.free, d.respCredits.free = c.RequestQueue, c.ResponseQueue
	}
	if !d.ideal {
		m := c.Media
		cb := dram.MakeBuilder().WithConfig(m).WithScheduler(b.eng).WithSink(d)
		d.mapr = cb.Mapper()
		d.front = sim.FromNS(m.FrontendNS)
		for i := 0; i < m.Channels; i++ {
			ch := cb.WithRefreshSlot(i, m.Channels).Build(fmt.Sprintf("%s.DRAM.Ch[%d]", name, i))
			d.chans = append(d.chans, ch)
			d.ingress = append(d.ingress, ring[int32]{})
			d.queueTrack = append(d.queueTrack, ch.Name()+".Queue")
		}
	}
	return d
}

// Name returns the component's hierarchical name.
func (d *Device) Name() string { return d.name }

// Channels returns the DRAM channels (none under the ideal memory).
func (d *Device) Channels() []*dram.Channel { return d.chans }

func (d *Device) alloc() int32 {
	if n := len(d.free); n > 0 {
		id := d.free[n-1]
		d.free = d.free[:n-1]
		return id
	}
	d.reqs = append(d.reqs, devReq{})
	return int32(len(d.reqs) - 1)
}

func (d *Device) release(id int32) {
	d.reqs[id] = devReq{}
	d.free = append(d.free, id)
}

// Submit hands the device a request at now, when the host's LLC missed
// (a read) or evicted a dirty line (a write). Calls must come in
// nondecreasing time order.
func (d *Device) Submit(now sim.Time, r Request) {
	id := d.alloc()
	d.reqs[id] = devReq{Request: r}
	if !d.ideal {
		ch, acc := d.mapr.Map(r.Line)
		acc.ID, acc.Write = id, r.Write
		d.reqs[id].ch, d.reqs[id].acc = int32(ch), acc
	}
	if d.hostReq > 0 {
		// Every request pays the same host stages, so they leave the
		// bridge in the order they entered it.
		d.bridge.push(id)
		d.eng.Schedule(now+d.hostReq, d, devBridge)
		return
	}
	d.toEgress(now, id)
}

// toEgress sends request id at now if no earlier one waits and both
// credits are free, else queues it for the next credit.
func (d *Device) toEgress(now sim.Time, id int32) {
	if d.egress.size == 0 && d.takeCredits(now) {
		d.send(now, id)
		return
	}
	d.CreditStalls++
	d.egress.push(id)
	d.wakeEgress()
}

// takeCredits takes one credit of each pool if both have one. A pool
// reclaims its returned credits only when it has none free: every credit
// is free, on its way back or in use, so the returns held are bounded by
// the pool's size.
func (d *Device) takeCredits(now sim.Time) bool {
	if !d.creditFlow {
		return true
	}
	if d.reqCredits.free == 0 {
		d.reqCredits.reclaim(now)
	}
	if d.respCredits.free == 0 {
		d.respCredits.reclaim(now)
	}
	if d.reqCredits.free == 0 || d.respCredits.free == 0 {
		return false
	}
	d.reqCredits.free--
	d.respCredits.free--
	return true
}

// wakeEgress schedules the egress for the earliest time both credit pools
// can have a credit, once each empty pool has one on its way back (a
// later return calls it again).
func (d *Device) wakeEgress() {
	if d.egressWake || d.egress.size == 0 {
		return
	}
	at := sim.Time(0)
	for _, c := range []*credits{&d.reqCredits, &d.respCredits} {
		if c.free > 0 {
			continue
		}
		if c.back.size == 0 {
			return
		}
		at = max(at, c.back.peek())
	}
	d.egressWake = true
	d.eng.Schedule(at, d, devEgress)
}

// send puts request id on the request direction at now.
func (d *Device) send(now sim.Time, id int32) {
	r := &d.reqs[id]
	r.sent = now
	at := now
	if d.ReqLink != nil {
		m := M2SReq
		if r.Write {
			m = M2SRwD
		}
		at = d.ReqLink.Accept(now, m) + d.port
	}
	if r.Write && r.Owner != nil {
		d.eng.Schedule(now, r.Owner, r.OwnerArg)
	}
	d.eng.Schedule(at+d.proto, d, devArrive|int64(id)<<2)
}

// Handle runs a request leaving the host bridge, a host egress wake-up,
// or an arrival at the device.
func (d *Device) Handle(now sim.Time, arg int64) {
	switch arg & 3 {
	case devBridge:
		d.toEgress(now, d.bridge.pop())
		return
	case devEgress:
		d.egressWake = false
		for d.egress.size > 0 && d.takeCredits(now) {
			d.send(now, d.egress.pop())
		}
		d.wakeEgress()
		return
	}
	id := int32(arg >> 2)
	r := &d.reqs[id]
	r.arrive = now
	d.tracer.Slice(d.reqTrack, r.sent, now)
	if d.ideal {
		d.returnCredit(&d.reqCredits, now)
		if r.Write {
			d.ack(now + d.lat)
			d.finish(id)
			return
		}
		d.respond(id, now+d.lat)
		return
	}
	d.ingress[r.ch].push(id)
	d.dispatch(now, r.ch)
}

// returnCredit sends a credit of pool c back to the host, which has it
// one port latency after now.
func (d *Device) returnCredit(c *credits, now sim.Time) {
	if d.creditFlow {
		c.back.push(now + d.port)
		if d.egress.size > 0 {
			d.wakeEgress()
		}
	}
}

// dispatch moves channel c's requests from the request queue into the
// channel's queues, in order, while the head's queue has room.
func (d *Device) dispatch(now sim.Time, c int32) {
	in, ch := &d.ingress[c], d.chans[c]
	for in.size > 0 {
		r := &d.reqs[in.peek()]
		if !ch.CanAccept(r.Write) {
			return
		}
		in.pop()
		d.returnCredit(&d.reqCredits, now)
		ch.Push(now, r.acc)
	}
}

// ColumnIssued implements dram.Sink: a read's data goes to the response
// path, a write is acknowledged.
//
// The channel is read before the request is finished: finishing
// releases the request's record (zeroed for reuse), and dispatching the
// record's channel after that fed channel 0 on every column command
// while the others' request queues waited for an arrival that, once every
// credit sat in one channel's queue, never came.
func (d *Device) ColumnIssued(a dram.Access, issue, end sim.Time) {
	r := &d.reqs[a.ID]
	ch := r.ch
	d.tracer.Slice(d.queueTrack[ch], r.arrive, issue)
	d.tracer.Slice(d.chans[ch].Name(), issue, end)
	if r.Write {
		d.ack(end + d.front)
		d.finish(a.ID)
	} else {
		d.respond(a.ID, end+d.front)
	}
	d.dispatch(issue, ch)
}

// respond sends read id's data, ready at t, through the pipeline (low-bit
// reads), the protocol stage and the response direction, and completes
// it at the host after the host stages.
func (d *Device) respond(id int32, t sim.Time) {
	r := &d.reqs[id]
	d.Reads++
	if r.LowBit {
		t = d.Pipe.Accept(t)
		d.tracer.Slice(d.Pipe.name, t-d.Pipe.latency, t)
	}
	t += d.proto
	var left sim.Time
	if d.Gate != nil {
		left = d.Gate.Accept(t)
	} else {
		left = d.RespLink.Accept(t, S2MDRS)
	}
	d.returnCredit(&d.respCredits, left)
	done := left + d.port + d.hostResp
	d.tracer.Slice(d.respTrack, t, done)
	if d.onRead != nil {
		d.onRead(r.Issue, done)
	}
	d.eng.Schedule(done, r.Owner, r.OwnerArg)
	d.finish(id)
}

// ack sends a write's NDR on the response direction at t (after the
// protocol stage).
func (d *Device) ack(t sim.Time) {
	d.Writes++
	t += d.proto
	left := t
	if d.RespLink != nil {
		left = d.RespLink.Accept(t, S2MNDR)
	}
	d.returnCredit(&d.respCredits, left)
}

func (d *Device) finish(id int32) { d.release(id) }

// Held describes the requests the device still holds ("" when none): in
// the host bridge, waiting for a credit, in the request queue per DRAM
// channel, or in a channel's queues. A finished run holds none.
func (d *Device) Held() string {
	var parts []string
	if d.bridge.size > 0 {
		parts = append(parts, fmt.Sprintf("%d in the host bridge", d.bridge.size))
	}
	if d.egress.size > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for a request credit", d.egress.size))
	}
	for c, in := range d.ingress {
		r, w := d.chans[c].Queued()
		if in.size+r+w > 0 {
			parts = append(parts, fmt.Sprintf("channel %d: %d in the request queue, %d reads and %d writes queued", c, in.size, r, w))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return d.name + " holds " + strings.Join(parts, ", ")
}
