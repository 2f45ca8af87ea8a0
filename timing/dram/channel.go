package dram

import (
	"fmt"

	"github.com/neuronfabric/nfabric/timing/sim"
)

// constraints holds one channel's constraints in picoseconds (whole clock
// cycles times tCK), the values the scheduler compares.
type constraints struct {
	ck, cl, cwl, rcd, rp, ras, rc, rtp, wr, ccds, ccdl, ccdlwr, rrds, rrdl, faw, wtrs, wtrl, rtrs, refi, rfc, burst, cmd sim.Time
	// rtw is the read-to-write turnaround on one rank: CL + BL/2 + 2 nCK
	// - CWL (Ramulator2's DDR4 and DDR5 rule, read DQS offset 0, one
	// preamble).
	rtw sim.Time
}

func makeConstraints(d Spec) constraints {
	ck := d.Clock()
	c := func(ns float64) sim.Time { return sim.Time(d.Cycles(ns)) * ck }
	t := constraints{ck: ck, cl: c(d.TCLNS), cwl: c(d.TCWLNS), rcd: c(d.TRCDNS), rp: c(d.TRPNS), ras: c(d.TRASNS),
		rtp: c(d.TRTPNS), wr: c(d.TWRNS), ccds: c(d.TCCDSNS), ccdl: c(d.TCCDLNS), ccdlwr: c(d.TCCDLWR),
		rrds: c(d.TRRDSNS), rrdl: c(d.TRRDLNS), faw: c(d.TFAWNS), wtrs: c(d.TWTRSNS), wtrl: c(d.TWTRLNS),
		rtrs: c(d.TRTRSNS), refi: c(d.TREFINS), rfc: c(d.TRFCNS), burst: sim.Time(d.BurstCycles()) * ck,
		cmd: sim.Time(d.CmdTicks) * ck}
	t.rc = t.ras + t.rp
	// Column-to-column spacing is never shorter than the burst: the data
	// bus carries one burst at a time.
	t.ccds, t.ccdl, t.ccdlwr = max(t.ccds, t.burst), max(t.ccdl, t.burst), max(t.ccdlwr, t.burst)
	t.rtw = t.cl + t.burst + 2*ck - t.cwl
	return t
}

// Access is one request handed to a channel.
type Access struct {
	// ID is the owner's handle, passed back in Sink.ColumnIssued.
	ID    int32
	Write bool
	// Rank, Group, Bank and Row locate the line (see Mapper).
	Rank, Group, Bank int32
	Row               int64
	// Arrive is when the request entered the channel queue.
	Arrive sim.Time
	bank   int32 // flattened (rank, group, bank)
	group  int32 // flattened (rank, group): bank / banks per group
}

// Sink receives a channel's column commands.
type Sink interface {
	// ColumnIssued reports that a's RD or WR issued at issue; its data
	// burst ends at dataEnd (read data ready, or write data written).
	ColumnIssued(a Access, issue, dataEnd sim.Time)
}

type bankState struct {
	open                             bool
	row                              int64
	nextACT, nextRD, nextWR, nextPRE sim.Time
	hitStamp                         uint64
}

type groupState struct{ nextACT, nextRD, nextWR sim.Time }

type rankState struct {
	nextACT, nextRD, nextWR sim.Time
	faw                     [4]sim.Time // times of the last four ACTs, a ring
	fawN, fawI              int
	refDue                  sim.Time
	// refSlot is the start of the current REF's tREFI slot, refN its
	// count, refKey the rank's place in the stack's stagger (the dither's
	// stream, see refreshAt).
	refSlot      sim.Time
	refN, refKey uint64
}

// Channel is one DRAM channel (a DDR5 sub-channel, a DDR4 channel) and
// its scheduler: ranks, bank groups
// and banks with row-buffer state, the JEDEC command constraints of
// constraints, all-bank refresh of its own ranks (a sub-channel has its
// own command bus and refresh; the Device feeds each sub-channel from its
// own ingress order, so one sub-channel's refresh never stalls another's
// commands), open- or closed-page policy, and an
// FR-FCFS scheduler over finite read and write queues with write-drain
// watermarks. It is event-driven: a decision runs when work arrives or
// when the earliest pending command becomes legal, and issues one command
// per decision on the command bus.
//
// Scheduling rule: among the queue being served (reads, or writes while
// draining), each request's next command (RD/WR on a row hit, PRE on a
// conflict, ACT on a closed bank) gets its earliest legal time; the
// command with the earliest time issues, a row hit winning a tie and
// then the oldest request (first-ready, first-come-first-served). A
// conflicting PRE is withheld while a queued request still hits the open
// row. When a rank's refresh falls due, the rank takes no new command:
// its open banks are precharged as soon as tRAS/tRTP/tWR allow, REF
// issues tRP later and the rank stays blocked for tRFC.
type Channel struct {
	name    string
	refSeed uint64 // Spec.RefreshSeed
	eng     sim.Scheduler
	sink    Sink
	t       constraints
	closed  bool
	groups  int32 // bank groups per rank
	banksG  int32 // banks per group
	banks   []bankState
	grp     []groupState
	ranks   []rankState

	nextCmd       sim.Time
	readQ, writeQ []Access
	rqCap, wqCap  int
	high, low     int
	draining      bool
	pendingAt     sim.Time
	inDecide      bool
	stamp         uint64

	// Counters since Build: column commands, activations,
	// precharges (conflicts; refresh precharges excluded) and refreshes.
	Reads, Writes, Acts, Pres, Refreshes int64
	// DataBusy sums the data-bus time of all bursts.
	DataBusy sim.Time
}

// Builder builds channels and their address mapper, the way the
// ideal parts are built (LLCBuilder, LinkBuilder): a value whose With
// methods return a modified copy, so one builder can be specialised per
// channel without aliasing. Start from MakeBuilder; a preset comes
// from Preset and goes in with WithConfig.
type Builder struct {
	cfg         Spec
	eng         sim.Scheduler
	sink        Sink
	slot, slots int // refresh stagger: slot of slots
}

// MakeBuilder returns a builder with the ddr5-4800 preset, refreshing at
// the first of one slot (no stagger).
// Build needs a scheduler and a sink (WithScheduler, WithSink).
func MakeBuilder() Builder {
	d, _ := Preset("ddr5-4800")
	return Builder{cfg: d, slots: 1}
}

// WithConfig returns a copy that builds channels of d: a preset
// (Preset) or a decoded DRAM block. Build checks it.
func (b Builder) WithConfig(d Spec) Builder { b.cfg = d; return b }

// WithScheduler returns a copy whose channels schedule their decisions on
// eng.
func (b Builder) WithScheduler(eng sim.Scheduler) Builder { b.eng = eng; return b }

// WithSink returns a copy whose channels report column commands to sink.
func (b Builder) WithSink(sink Sink) Builder { b.sink = sink; return b }

// WithRefreshSlot returns a copy whose channel refreshes at slot k of n
// evenly spaced slots of tREFI (rank r of R at slot k*R + r of n*R), so
// that the n channels of a stack, built with k = 0..n-1, do not all
// refresh at once.
func (b Builder) WithRefreshSlot(k, n int) Builder { b.slot, b.slots = k, n; return b }

// Config returns the spec the builder builds.
func (b Builder) Config() Spec { return b.cfg }

// Build returns an idle channel. It panics on an invalid configuration,
// a missing scheduler or sink, or a refresh slot outside [0, n):
// Spec.Validate rejects a user's bad values before they get here.
func (b Builder) Build(name string) *Channel {
	d := b.cfg
	if err := d.Validate(); err != nil {
		panic(fmt.Sprintf("dram: channel %s: %v", name, err))
	}
	if b.eng == nil || b.sink == nil || b.slots < 1 || b.slot < 0 || b.slot >= b.slots {
		panic(fmt.Sprintf("dram: channel %s: needs a scheduler, a sink and a refresh slot k in [0, n) (got %d of %d)", name, b.slot, b.slots))
	}
	nb := d.Ranks * d.BankGroups * d.BanksPerGroup
	ch := &Channel{name: sim.MustName(name), refSeed: d.RefreshSeed, eng: b.eng, sink: b.sink, t: makeConstraints(d), closed: d.PagePolicy == "closed",
		groups: int32(d.BankGroups), banksG: int32(d.BanksPerGroup),
		banks: make([]bankState, nb), grp: make([]groupState, d.Ranks*d.BankGroups), ranks: make([]rankState, d.Ranks),
		rqCap: d.ReadQueue, wqCap: d.WriteQueue, high: d.WriteHigh, low: d.WriteLow, pendingAt: sim.Never}
	ch.staggerRefresh(b.slot, b.slots)
	ch.readQ = make([]Access, 0, d.ReadQueue)
	ch.writeQ = make([]Access, 0, d.WriteQueue)
	return ch
}

// Name returns the component's hierarchical name.
func (ch *Channel) Name() string { return ch.name }

// staggerRefresh places this channel's refreshes at slot k of n evenly
// spaced slots of tREFI (see Builder.WithRefreshSlot).
func (ch *Channel) staggerRefresh(k, n int) {
	nr := len(ch.ranks)
	for r := range ch.ranks {
		rk := &ch.ranks[r]
		rk.refDue = sim.Never
		if ch.t.refi > 0 {
			rk.refSlot, rk.refN, rk.refKey = ch.t.refi*sim.Time(k*nr+r+1)/sim.Time(n*nr), 0, uint64(k*nr+r+1)
			rk.refDue = ch.refreshAt(rk)
		}
	}
}

// refreshAt returns when the rank's current REF falls due: the start of
// its tREFI slot under RefreshSeed 0 (strictly periodic), otherwise a
// point of the slot drawn from the seed, the rank's key and the REF's
// count (splitmix64), on the clock grid. Each REF stays in its own slot,
// so the rate is exactly one per tREFI and no REF is more than one tREFI
// late, well inside the postponement DDR5 allows a controller; what the
// dither removes is the strict period that a periodic request chain can
// phase-lock onto (NOTES: the refresh-phase lock at low load).
func (ch *Channel) refreshAt(rk *rankState) sim.Time {
	if ch.refSeed == 0 {
		return rk.refSlot
	}
	x := ch.refSeed ^ rk.refKey*0x9e3779b97f4a7c15 ^ (rk.refN+1)*0xd1b54a32d192ed03
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return ch.alignUp(rk.refSlot + sim.Time(x%uint64(ch.t.refi)))
}

// CanAccept reports whether the read (or write) queue has room.
func (ch *Channel) CanAccept(write bool) bool {
	if write {
		return len(ch.writeQ) < ch.wqCap
	}
	return len(ch.readQ) < ch.rqCap
}

// Queued returns the number of queued reads and writes.
func (ch *Channel) Queued() (reads, writes int) { return len(ch.readQ), len(ch.writeQ) }

// Push queues a at now (the caller checked CanAccept) and wakes the
// scheduler.
func (ch *Channel) Push(now sim.Time, a Access) {
	a.Arrive = now
	a.group = a.Rank*ch.groups + a.Group
	a.bank = a.group*ch.banksG + a.Bank
	if a.Write {
		if len(ch.writeQ) >= ch.wqCap {
			panic("dram: write queue overflow")
		}
		ch.writeQ = append(ch.writeQ, a)
	} else {
		if len(ch.readQ) >= ch.rqCap {
			panic("dram: read queue overflow")
		}
		ch.readQ = append(ch.readQ, a)
	}
	if !ch.inDecide {
		// Wake only if this request's own next command is legal before
		// the pending decision (a refresh due earlier wakes too).
		_, at := ch.next(now, &a, false)
		ch.wake(min(at, max(now, ch.nextRefresh())))
	}
}

// alignUp rounds t up to the channel's clock edge.
func (ch *Channel) alignUp(t sim.Time) sim.Time {
	if r := t % ch.t.ck; r != 0 {
		return t + ch.t.ck - r
	}
	return t
}

func (ch *Channel) wake(t sim.Time) {
	t = ch.alignUp(t)
	if t < ch.pendingAt {
		ch.pendingAt = t
		ch.eng.Schedule(t, ch, 0)
	}
}

// Handle runs a scheduling decision; stale wake-ups are ignored.
func (ch *Channel) Handle(now sim.Time, _ int64) {
	if now != ch.pendingAt {
		return
	}
	ch.pendingAt = sim.Never
	ch.decide(now)
}

type cmdKind uint8

const (
	cmdNone cmdKind = iota
	cmdACT
	cmdPRE
	cmdCol
)

// decide issues every command that is legal at now, one per command-bus
// slot, and arranges the next wake-up.
func (ch *Channel) decide(now sim.Time) {
	ch.inDecide = true
	defer func() { ch.inDecide = false }()
	for {
		ch.refreshDue(now)
		var q *[]Access
		var i int
		var kind cmdKind
		var at sim.Time
		if ch.high == 0 {
			q, i, kind, at = ch.pickUnified(now)
		} else {
			if q = ch.serve(); q == nil {
				return
			}
			i, kind, at = ch.pick(now, *q)
		}
		if kind == cmdNone {
			return
		}
		if at > now {
			ch.wake(min(at, ch.nextRefresh()))
			return
		}
		ch.issue(now, q, i, kind)
	}
}

// pickUnified is pick over both queues (no write drain): the earlier
// command wins, a row hit and then the older request breaking ties.
func (ch *Channel) pickUnified(now sim.Time) (*[]Access, int, cmdKind, sim.Time) {
	ir, kr, ar := ch.pick(now, ch.readQ)
	iw, kw, aw := ch.pick(now, ch.writeQ)
	switch {
	case kw == cmdNone:
		return &ch.readQ, ir, kr, ar
	case kr == cmdNone:
		return &ch.writeQ, iw, kw, aw
	case aw < ar || (aw == ar && kw == cmdCol && kr != cmdCol) ||
		(aw == ar && (kw == cmdCol) == (kr == cmdCol) && ch.writeQ[iw].Arrive < ch.readQ[ir].Arrive):
		return &ch.writeQ, iw, kw, aw
	}
	return &ch.readQ, ir, kr, ar
}

// serve applies the write-drain watermarks and returns the queue to
// serve, nil when both are empty.
func (ch *Channel) serve() *[]Access {
	nr, nw := len(ch.readQ), len(ch.writeQ)
	if ch.draining {
		if nw == 0 || (nw <= ch.low && nr > 0) {
			ch.draining = false
		}
	} else if nw >= ch.high || (nr == 0 && nw > 0) {
		ch.draining = true
	}
	switch {
	case ch.draining:
		return &ch.writeQ
	case nr > 0:
		return &ch.readQ
	}
	return nil
}

func (ch *Channel) nextRefresh() sim.Time {
	t := sim.Never
	for i := range ch.ranks {
		t = min(t, ch.ranks[i].refDue)
	}
	return t
}

// refreshDue performs every refresh that has fallen due by now: the
// rank's open banks precharge (PREA) when their tRAS/tRTP/tWR allow, REF
// follows tRP later (and tRC after the last ACT), and no bank of the rank
// activates for tRFC after it.
func (ch *Channel) refreshDue(now sim.Time) {
	per := ch.groups * ch.banksG
	for r := range ch.ranks {
		rk := &ch.ranks[r]
		for rk.refDue <= now {
			bs := ch.banks[int32(r)*per : int32(r+1)*per]
			pre := max(rk.refDue, ch.nextCmd)
			anyOpen := false
			for i := range bs {
				if bs[i].open {
					anyOpen = true
					pre = max(pre, bs[i].nextPRE)
				}
			}
			ref := ch.alignUp(pre)
			if anyOpen {
				ref += ch.t.rp
			}
			for i := range bs {
				ref = max(ref, bs[i].nextACT)
			}
			ref = ch.alignUp(ref)
			for i := range bs {
				bs[i].open = false
				bs[i].nextACT = ref + ch.t.rfc
			}
			ch.nextCmd = max(ch.nextCmd, ref+ch.t.ck)
			rk.refSlot += ch.t.refi
			rk.refN++
			rk.refDue = ch.refreshAt(rk)
			ch.Refreshes++
		}
	}
}

// pick returns the request whose next command is legal first (see the
// type doc for the tie rules) and that command's time.
func (ch *Channel) pick(now sim.Time, q []Access) (int, cmdKind, sim.Time) {
	ch.stamp++
	for i := range q {
		b := &ch.banks[q[i].bank]
		if b.open && b.row == q[i].Row {
			b.hitStamp = ch.stamp
		}
	}
	best, bestKind, bestAt := -1, cmdNone, sim.Never
	for i := range q {
		kind, at := ch.next(now, &q[i], true)
		// bestAt is on the clock grid and aligning never moves a time
		// back, so a command legal only after bestAt can neither win nor
		// tie: the division of alignUp is spent on the contenders alone.
		if kind == cmdNone || at > bestAt {
			continue
		}
		if at = ch.alignUp(at); at < bestAt || (at == bestAt && kind == cmdCol && bestKind != cmdCol) {
			best, bestKind, bestAt = i, kind, at
		}
	}
	return best, bestKind, bestAt
}

// next returns a's next command and its earliest legal time at or after
// now, before alignment to the clock edge (alignUp); cmdNone when withhold
// is set and the command is a conflicting PRE that the open row's pending
// hits hold back.
func (ch *Channel) next(now sim.Time, a *Access, withhold bool) (cmdKind, sim.Time) {
	b := &ch.banks[a.bank]
	g := &ch.grp[a.group]
	rk := &ch.ranks[a.Rank]
	at := max(now, ch.nextCmd)
	var kind cmdKind
	switch {
	case b.open && b.row == a.Row:
		kind = cmdCol
		if a.Write {
			at = max(at, b.nextWR, g.nextWR, rk.nextWR)
		} else {
			at = max(at, b.nextRD, g.nextRD, rk.nextRD)
		}
	case b.open:
		if withhold && !ch.closed && b.hitStamp == ch.stamp {
			return cmdNone, sim.Never
		}
		kind = cmdPRE
		at = max(at, b.nextPRE)
	default:
		kind = cmdACT
		at = max(at, b.nextACT, g.nextACT, rk.nextACT)
		if rk.fawN == 4 {
			at = max(at, rk.faw[rk.fawI]+ch.t.faw)
		}
	}
	return kind, at
}

// issue puts q[i]'s next command on the bus at t and updates every
// constraint it sets.
func (ch *Channel) issue(t sim.Time, q *[]Access, i int, kind cmdKind) {
	a := (*q)[i]
	b := &ch.banks[a.bank]
	gi := a.group
	rk := &ch.ranks[a.Rank]
	tm := &ch.t
	ch.nextCmd = t + tm.cmd
	switch kind {
	case cmdACT:
		ch.Acts++
		b.open, b.row = true, a.Row
		b.nextACT = max(b.nextACT, t+tm.rc)
		b.nextRD, b.nextWR = max(b.nextRD, t+tm.rcd), max(b.nextWR, t+tm.rcd)
		b.nextPRE = max(b.nextPRE, t+tm.ras)
		g := &ch.grp[gi]
		g.nextACT = max(g.nextACT, t+tm.rrdl)
		rk.nextACT = max(rk.nextACT, t+tm.rrds)
		rk.faw[rk.fawI] = t
		rk.fawI = (rk.fawI + 1) % 4
		rk.fawN = min(rk.fawN+1, 4) // once full, faw[fawI] is the oldest
	case cmdPRE:
		ch.Pres++
		b.open = false
		b.nextACT = max(b.nextACT, t+tm.rp)
	case cmdCol:
		// Leave the queue first, so that the sink sees the free entry.
		*q = append((*q)[:i], (*q)[i+1:]...)
		ch.column(t, a, b, gi)
	}
}

// column issues a RD or WR (RDA/WRA under the closed-page policy).
func (ch *Channel) column(t sim.Time, a Access, b *bankState, gi int32) {
	tm := &ch.t
	g := &ch.grp[gi]
	rk := &ch.ranks[a.Rank]
	ch.DataBusy += tm.burst
	var end sim.Time
	if a.Write {
		ch.Writes++
		end = t + tm.cwl + tm.burst
		b.nextPRE = max(b.nextPRE, end+tm.wr)
		g.nextWR = max(g.nextWR, t+tm.ccdlwr)
		rk.nextWR = max(rk.nextWR, t+tm.ccds)
		g.nextRD = max(g.nextRD, end+tm.wtrl)
		rk.nextRD = max(rk.nextRD, end+tm.wtrs)
		ch.otherRanks(a.Rank, t+tm.cwl+tm.burst+tm.rtrs-tm.cl, t+tm.burst+tm.rtrs)
		if ch.closed {
			b.open = false
			b.nextACT = max(b.nextACT, end+tm.wr+tm.rp)
		}
	} else {
		ch.Reads++
		end = t + tm.cl + tm.burst
		b.nextPRE = max(b.nextPRE, t+tm.rtp)
		g.nextRD = max(g.nextRD, t+tm.ccdl)
		rk.nextRD = max(rk.nextRD, t+tm.ccds)
		g.nextWR = max(g.nextWR, t+tm.rtw)
		rk.nextWR = max(rk.nextWR, t+tm.rtw)
		ch.otherRanks(a.Rank, t+tm.burst+tm.rtrs, t+tm.rtw+tm.rtrs)
		if ch.closed {
			b.open = false
			b.nextACT = max(b.nextACT, t+tm.rtp+tm.rp)
		}
	}
	ch.sink.ColumnIssued(a, t, end)
}

// otherRanks applies the rank-switch spacing to every rank but r.
func (ch *Channel) otherRanks(r int32, rd, wr sim.Time) {
	for i := range ch.ranks {
		if int32(i) != r {
			ch.ranks[i].nextRD = max(ch.ranks[i].nextRD, rd)
			ch.ranks[i].nextWR = max(ch.ranks[i].nextWR, wr)
		}
	}
}

// RowHits returns the column commands that found their row already open
// (every column command whose row no ACT of its own had to open).
func (ch *Channel) RowHits() int64 { return ch.Reads + ch.Writes - ch.Acts }
