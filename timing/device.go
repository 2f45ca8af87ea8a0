package timing

import (
	"fmt"
	"strings"
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

// devReq is one request inside a Device, from the host's egress to its
// completion.
type devReq struct {
	owner      *Stream // completed when done (reads) or sent (writes with notify)
	line       uint64  // stack-local line number
	issue      Time    // when the host issued it
	sent       Time    // when it left the host on the request link
	arrive     Time    // when it reached the device
	write, low bool
	notify     bool
	ch         int32
	acc        DRAMAccess
}

const (
	devArrive int64 = iota
	devEgress
)

// Device is one controller stack in the detailed models (memory.model
// ddr5 or link.model cxl): the host-side egress with its request
// credits, the request direction of the link, the device's ingress
// buffer, the memory (DDR5 channels or the ideal fixed latency), the
// aggregation pipeline on the read-response path, a finite response
// queue, and the response direction of the link. It is event-driven:
// requests become events when they reach the device, the DDR5 channels
// schedule their own commands, and completions are events on the
// issuing stream.
//
// Back-pressure runs the whole way: a DRAM read issues only with a free
// response-queue entry; a request leaves the ingress buffer only when its
// channel queue has room, in arrival order per sub-channel (a head blocked
// by its sub-channel's full queue holds back only that sub-channel's
// requests: each DDR5 sub-channel has its own command bus, scheduler
// queue and refresh, and CXL.mem orders no requests to different lines,
// so a refreshing sub-channel does not stall the others); the
// host sends only with a credit for an ingress entry, and a credit comes
// back one port latency after its entry frees. Posted writebacks from the
// LLC travel the same path as M2S RwD and are acknowledged with an NDR on
// the response direction.
type Device struct {
	name  string
	sys   *System
	eng   *Engine
	ideal bool
	lat   Time // ideal memory latency
	chans []*Channel
	mapr  DDR5Mapper
	front Time
	Pipe  *Pipeline
	// ReqLink and RespLink are the two directions under link.model cxl;
	// Gate is the response gate under link.model gate (ReqLink nil).
	ReqLink, RespLink *FlitLink
	Gate              *Link
	port              Time
	x                 CXLConfig

	credits    int
	creditRet  ring[Time]
	egress     ring[int32]
	egressWake bool
	ingress    []ring[int32] // per DDR5 sub-channel, in arrival order
	respCap    int
	respFree   ring[Time]
	lastFree   Time

	reqs []devReq
	free []int32
	// track names for the tracer, built once
	reqTrack, respTrack string
	queueTrack          []string

	// Reads and Writes count requests served; CreditStalls counts requests
	// that waited at the host for a credit.
	Reads, Writes, CreditStalls int64
}

func newDevice(name string, sys *System, cfg Config) *Device {
	d := &Device{name: mustName(name), sys: sys, eng: sys.eng, ideal: cfg.Memory.Model != MemoryDDR5,
		lat: FromNS(cfg.Memory.LatencyNS), x: cfg.Link.CXL}
	d.Pipe = MakePipelineBuilder().WithStages(cfg.Controller.Stages).WithCycle(cfg.Cycle()).
		WithInitiationCycles(cfg.Controller.InitiationCycles).Build(name + ".Pipe")
	if cfg.LinkModel() == LinkCXL {
		lb := MakeFlitLinkBuilder().WithConfig(d.x).WithShare(cfg.Link.Share)
		d.ReqLink, d.RespLink = lb.Build(name+".ReqLink"), lb.Build(name+".RespLink")
		d.port = FromNS(d.x.PortLatencyNS)
		d.credits, d.respCap = d.x.RequestCredits, d.x.ResponseQueue
	} else {
		d.Gate = MakeLinkBuilder().WithBandwidth(cfg.LinkBytesPerSec()).Build(name + ".Link")
		d.credits, d.respCap = 1<<30, 0 // the paper's gate has no credits
	}
	d.reqTrack, d.respTrack = name+".ReqLink", name+".RespLink"
	if !d.ideal {
		m := cfg.Memory.DDR5
		cb := MakeDDR5Builder().WithConfig(m).WithScheduler(sys.eng).WithSink(d)
		d.mapr = cb.Mapper()
		d.front = FromNS(m.FrontendNS)
		for c := 0; c < m.Channels; c++ {
			ch := cb.WithRefreshSlot(c, m.Channels).Build(fmt.Sprintf("%s.DRAM.Ch[%d]", name, c))
			d.chans = append(d.chans, ch)
			d.ingress = append(d.ingress, ring[int32]{})
			d.queueTrack = append(d.queueTrack, ch.name+".Queue")
		}
	}
	return d
}

// Name returns the component's hierarchical name.
func (d *Device) Name() string { return d.name }

// Channels returns the DDR5 channels (none under the ideal memory).
func (d *Device) Channels() []*Channel { return d.chans }

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

// submit hands the device a request issued by the host at now for the
// stack-local line; owner is completed when a read's data arrives or,
// with notify, when a write has left the host.
func (d *Device) submit(now Time, owner *Stream, line uint64, write, low, notify bool, issue Time) {
	id := d.alloc()
	d.reqs[id] = devReq{owner: owner, line: line, issue: issue, write: write, low: low, notify: notify}
	if !d.ideal {
		ch, acc := d.mapr.Map(line)
		acc.ID, acc.Write = id, write
		d.reqs[id].ch, d.reqs[id].acc = int32(ch), acc
	}
	if d.egress.size == 0 && d.takeCredit(now) {
		d.send(now, id)
		return
	}
	d.CreditStalls++
	d.egress.push(id)
	d.wakeEgress()
}

func (d *Device) takeCredit(now Time) bool {
	for d.creditRet.size > 0 && d.creditRet.peek() <= now {
		d.creditRet.pop()
		d.credits++
	}
	if d.credits == 0 {
		return false
	}
	d.credits--
	return true
}

func (d *Device) wakeEgress() {
	if !d.egressWake && d.egress.size > 0 && d.creditRet.size > 0 {
		d.egressWake = true
		d.eng.Schedule(d.creditRet.peek(), d, devEgress)
	}
}

// send puts request id on the request direction at now.
func (d *Device) send(now Time, id int32) {
	r := &d.reqs[id]
	r.sent = now
	at := now
	if d.ReqLink != nil {
		q := d.x.ReadRequestQ()
		if r.write {
			q = d.x.WriteRequestQ()
		}
		at = d.ReqLink.Accept(now, q) + d.port
	}
	if r.notify {
		d.eng.Schedule(now, r.owner, evComplete)
	}
	d.eng.Schedule(at, d, devArrive|int64(id)<<1)
}

// Handle runs an arrival at the device or a host egress wake-up.
func (d *Device) Handle(now Time, arg int64) {
	if arg&1 == devEgress {
		d.egressWake = false
		for d.egress.size > 0 && d.takeCredit(now) {
			d.send(now, d.egress.pop())
		}
		d.wakeEgress()
		return
	}
	id := int32(arg >> 1)
	r := &d.reqs[id]
	r.arrive = now
	d.sys.traceSlice(d.reqTrack, r.sent, now)
	if d.ideal {
		d.returnCredit(now)
		if r.write {
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

func (d *Device) returnCredit(now Time) {
	d.creditRet.push(now + d.port)
	d.wakeEgress()
}

// dispatch moves sub-channel c's requests from the ingress buffer into
// its queues, in order, while the head's queue has room.
func (d *Device) dispatch(now Time, c int32) {
	in, ch := &d.ingress[c], d.chans[c]
	for in.size > 0 {
		r := &d.reqs[in.peek()]
		if !ch.CanAccept(r.write) {
			return
		}
		in.pop()
		d.returnCredit(now)
		ch.Push(now, r.acc)
	}
}

// ColumnIssued implements DRAMSink: a read's data goes to the response
// path, a write is acknowledged.
//
// The sub-channel is read before the request is finished: finishing
// releases the request's record (zeroed for reuse), and dispatching the
// record's channel after that fed sub-channel 0 on every column command
// while the others' ingress waited for an arrival that, once every credit
// sat in one sub-channel's ingress, never came.
func (d *Device) ColumnIssued(a DRAMAccess, issue, end Time) {
	r := &d.reqs[a.ID]
	ch := r.ch
	d.sys.traceSlice(d.queueTrack[ch], r.arrive, issue)
	d.sys.traceSlice(d.chans[ch].name, issue, end)
	if r.write {
		d.ack(end + d.front)
		d.finish(a.ID)
	} else {
		d.respond(a.ID, end+d.front)
	}
	d.dispatch(issue, ch)
}

// ReadSlot implements DRAMSink: the release time of the oldest response
// entry when all are taken.
func (d *Device) ReadSlot() Time {
	if d.respCap > 0 && d.respFree.size >= d.respCap {
		return d.respFree.peek()
	}
	return 0
}

// respond sends read id's data, ready at t, through the pipeline (low-bit
// reads) and the response direction, and completes it at the host.
func (d *Device) respond(id int32, t Time) {
	r := &d.reqs[id]
	d.Reads++
	if r.low {
		t = d.Pipe.Accept(t)
		d.sys.traceSlice(d.Pipe.name, t-d.Pipe.latency, t)
	}
	var left Time
	if d.Gate != nil {
		left = d.Gate.Accept(t)
	} else {
		left = d.RespLink.Accept(t, d.x.ReadResponseQ())
	}
	if d.respCap > 0 {
		if d.respFree.size >= d.respCap {
			d.respFree.pop()
		}
		d.lastFree = max(d.lastFree, left)
		d.respFree.push(d.lastFree)
	}
	done := left + d.port
	d.sys.traceSlice(d.respTrack, t, done)
	d.sys.readDone(r.owner, r.issue, done, r.low)
	d.eng.Schedule(done, r.owner, evComplete)
	d.finish(id)
}

// ack sends a write's NDR on the response direction at t.
func (d *Device) ack(t Time) {
	d.Writes++
	if d.RespLink != nil {
		d.RespLink.Accept(t, d.x.WriteAckQ())
	}
}

func (d *Device) finish(id int32) { d.release(id) }

// held describes the requests the device still holds ("" when none):
// waiting for a credit at the host, in the ingress buffer per
// sub-channel, or in a DRAM channel's queues.
func (d *Device) held() string {
	var parts []string
	if d.egress.size > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for a request credit", d.egress.size))
	}
	for c, in := range d.ingress {
		r, w := d.chans[c].Queued()
		if in.size+r+w > 0 {
			parts = append(parts, fmt.Sprintf("sub-channel %d: %d in the ingress, %d reads and %d writes queued", c, in.size, r, w))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return d.name + " holds " + strings.Join(parts, ", ")
}
