package akita

import (
	"fmt"
	"sort"

	"github.com/neuronfabric/nfabric/timing"
	tdram "github.com/neuronfabric/nfabric/timing/dram"
	tsim "github.com/neuronfabric/nfabric/timing/sim"
	"github.com/sarchlab/akita/v4/mem/dram"
	"github.com/sarchlab/akita/v4/mem/mem"
	"github.com/sarchlab/akita/v4/sim"
	"github.com/sarchlab/akita/v4/sim/directconnection"
)

// Access is one line of a DRAM request trace.
type Access struct {
	Addr  uint64
	Write bool
}

// DRAMStats summarises a closed-loop run of a trace: latency from the
// requester's send to its receipt of the response, and sustained
// bandwidth (lines x 64 B over the time the last response arrived).
type DRAMStats struct {
	Lines       int
	MeanNS      float64
	P50NS       float64
	P99NS       float64
	GBps        float64
	Events      int64
	RunTimeNS   float64
	Activations int64
}

func summarise(lat []float64, run float64) DRAMStats {
	s := DRAMStats{Lines: len(lat), RunTimeNS: run}
	if len(lat) == 0 {
		return s
	}
	var sum float64
	for _, v := range lat {
		sum += v
	}
	s.MeanNS = sum / float64(len(lat))
	sorted := append([]float64(nil), lat...)
	sort.Float64s(sorted)
	s.P50NS = sorted[len(sorted)/2]
	s.P99NS = sorted[(len(sorted)*99)/100]
	if run > 0 {
		s.GBps = float64(len(lat)) * timing.LineBytes / run
	}
	return s
}

// AkitaCompatible returns d reduced to what Akita's mem/dram models, so
// that both see the same machine: one sub-channel and one rank, refresh
// off (Akita's controller never issues REF), no tFAW (Akita has none),
// one command per clock (Akita issues one per tick), the closed-page
// policy (Akita's ClosePageCommandCreator), Akita's fixed address order
// row:channel:rank:bank:bankgroup:column without bank hashing, and reads and writes scheduled
// together (write_high 0; Akita has no write drain).
func AkitaCompatible(d tdram.Spec) tdram.Spec {
	d.Channels, d.Ranks = 1, 1
	d.TREFINS, d.TFAWNS = 0, 0
	d.CmdTicks = 1
	d.PagePolicy = "closed"
	d.Mapping, d.BankHash = "ro:ch:ra:ba:bg:co", tdram.BankHashNone
	d.WriteHigh, d.WriteLow = 0, 0 // no write drain: Akita has one queue for both
	return d
}

// cyc converts ns to d's clock cycles with package dram's own JEDEC
// rounding, so both simulators see the same cycle counts.
func cyc(d tdram.Spec, ns float64) int { return int(d.Cycles(ns)) }

// buildAkitaDRAM configures Akita's memory controller with d's values in
// cycles. Akita has no DDR5 protocol; DDR4 is its DDR timing family
// (burst = BL/2 cycles), which is what DDR5's constraints reduce to here.
func buildAkitaDRAM(eng sim.Engine, d tdram.Spec, queue int) *dram.Comp {
	return dram.MakeBuilder().
		WithEngine(eng).
		WithFreq(sim.Freq(float64(d.DataRateMTs)/2) * sim.MHz).
		WithProtocol(dram.DDR4).
		WithBusWidth(32).WithBurstLength(d.BurstLength).WithDeviceWidth(8).
		WithNumChannel(1).WithNumRank(1).WithNumBankGroup(d.BankGroups).WithNumBank(d.BanksPerGroup).
		WithNumRow(d.Rows).WithNumCol(d.RowBytes / 4).
		WithTransactionQueueSize(queue + 1).WithCommandQueueSize(queue).
		WithTCL(cyc(d, d.TCLNS)).WithTCWL(cyc(d, d.TCWLNS)).WithTRCD(cyc(d, d.TRCDNS)).
		WithTRP(cyc(d, d.TRPNS)).WithTRAS(cyc(d, d.TRASNS)).
		WithTCCDL(cyc(d, d.TCCDLNS)).WithTCCDS(cyc(d, d.TCCDSNS)).
		WithTRTP(cyc(d, d.TRTPNS)).WithTWTRL(cyc(d, d.TWTRLNS)).WithTWTRS(cyc(d, d.TWTRSNS)).
		WithTWR(cyc(d, d.TWRNS)).WithTRRDL(cyc(d, d.TRRDLNS)).WithTRRDS(cyc(d, d.TRRDSNS)).
		WithTRTRS(cyc(d, d.TRTRSNS)).
		Build("DRAM")
}

// requester is a closed-loop Akita component that keeps up to limit
// requests of a trace in flight and records each one's latency.
type requester struct {
	*sim.TickingComponent
	port        sim.Port
	dst         sim.RemotePort
	trace       []Access
	next, limit int
	outstanding int
	sent        map[string]sim.VTimeInSec
	lat         []float64
	last        sim.VTimeInSec
	data        []byte
}

func (r *requester) Tick() bool {
	progress := false
	now := r.CurrentTime()
	for {
		msg := r.port.RetrieveIncoming()
		if msg == nil {
			break
		}
		id := msg.(mem.AccessRsp).GetRspTo()
		r.lat = append(r.lat, float64(now-r.sent[id])*1e9)
		delete(r.sent, id)
		r.outstanding--
		r.last = now
		progress = true
	}
	for r.outstanding < r.limit && r.next < len(r.trace) {
		a := r.trace[r.next]
		var msg sim.Msg
		if a.Write {
			msg = mem.WriteReqBuilder{}.WithSrc(r.port.AsRemote()).WithDst(r.dst).
				WithAddress(a.Addr).WithData(r.data).Build()
		} else {
			msg = mem.ReadReqBuilder{}.WithSrc(r.port.AsRemote()).WithDst(r.dst).
				WithAddress(a.Addr).WithByteSize(timing.LineBytes).Build()
		}
		if err := r.port.Send(msg); err != nil {
			break
		}
		r.sent[msg.Meta().ID] = now
		r.next++
		r.outstanding++
		progress = true
	}
	return progress
}

// RunAkitaDRAM drives Akita's mem/dram with trace, limit requests in
// flight, and returns the statistics.
func RunAkitaDRAM(d tdram.Spec, trace []Access, limit int) (DRAMStats, error) {
	if err := d.Validate(); err != nil {
		return DRAMStats{}, err
	}
	eng := sim.NewSerialEngine()
	freq := sim.Freq(float64(d.DataRateMTs)/2) * sim.MHz
	m := buildAkitaDRAM(eng, d, max(limit, 8))
	r := &requester{trace: trace, limit: limit, sent: map[string]sim.VTimeInSec{}, data: make([]byte, timing.LineBytes)}
	r.TickingComponent = sim.NewTickingComponent("Requester", eng, freq, r)
	r.port = sim.NewPort(r, 4*limit+4, 4*limit+4, "Requester.Port")
	r.AddPort("Top", r.port)
	top := m.GetPortByName("Top")
	r.dst = top.AsRemote()
	conn := directconnection.MakeBuilder().WithEngine(eng).WithFreq(freq).Build("Conn")
	conn.PlugIn(r.port)
	conn.PlugIn(top)
	r.TickLater()
	var events int64
	eng.AcceptHook(countHook{&events})
	if err := eng.Run(); err != nil {
		return DRAMStats{}, fmt.Errorf("akita run: %w", err)
	}
	if len(r.lat) != len(trace) {
		return DRAMStats{}, fmt.Errorf("akita served %d of %d requests", len(r.lat), len(trace))
	}
	s := summarise(r.lat, float64(r.last)*1e9)
	s.Events = events
	return s, nil
}

type countHook struct{ n *int64 }

func (h countHook) Func(ctx sim.HookCtx) {
	if ctx.Pos == sim.HookPosBeforeEvent {
		*h.n++
	}
}

// timingDriver is the same closed loop on package timing's DDR5 channel:
// requests enter the channel queue when issued, and complete when their
// data burst ends (read) or their write data is in (write).
type timingDriver struct {
	eng         *tsim.Engine
	ch          *tdram.Channel
	mapr        tdram.Mapper
	trace       []Access
	next, limit int
	outstanding int
	sent        []tsim.Time
	lat         []float64
	last        tsim.Time
}

func (t *timingDriver) ColumnIssued(a tdram.Access, _, end tsim.Time) {
	t.eng.Schedule(end, t, int64(a.ID))
}

// Handle completes request arg at now and refills the loop.
func (t *timingDriver) Handle(now tsim.Time, arg int64) {
	if arg >= 0 {
		t.lat = append(t.lat, (now - t.sent[arg]).NS())
		t.outstanding--
		t.last = now
	}
	for t.outstanding < t.limit && t.next < len(t.trace) && t.ch.CanAccept(t.trace[t.next].Write) {
		a := t.trace[t.next]
		_, acc := t.mapr.Map(a.Addr / timing.LineBytes)
		acc.ID, acc.Write = int32(t.next), a.Write
		t.sent[t.next] = now
		t.next++
		t.outstanding++
		t.ch.Push(now, acc)
	}
}

// RunTimingDRAM drives timing's DDR5 channel with the same trace and
// loop.
func RunTimingDRAM(d tdram.Spec, trace []Access, limit int) (DRAMStats, error) {
	if err := d.Validate(); err != nil {
		return DRAMStats{}, err
	}
	eng := tsim.NewEngine()
	t := &timingDriver{eng: eng, mapr: tdram.MakeBuilder().WithConfig(d).Mapper(), trace: trace, limit: limit, sent: make([]tsim.Time, len(trace))}
	t.ch = tdram.MakeBuilder().WithConfig(d).WithScheduler(eng).WithSink(t).Build("Ch[0]")
	eng.Schedule(0, t, -1)
	eng.Run()
	if len(t.lat) != len(trace) {
		return DRAMStats{}, fmt.Errorf("timing served %d of %d requests", len(t.lat), len(trace))
	}
	s := summarise(t.lat, t.last.NS())
	s.Events, s.Activations = eng.Events, t.ch.Acts
	return s, nil
}

// Traces: sequential lines, uniformly random lines in 64 MiB, a 4 KiB
// stride (every access a new row of the same bank group and bank), and a
// random 2:1 read/write mix. A 64-bit LCG (Knuth's MMIX constants) makes
// them reproducible.
func Traces(n int, seed uint64) map[string][]Access {
	x := seed
	rnd := func() uint64 {
		x = x*6364136223846793005 + 1442695040888963407
		return x >> 11
	}
	const region = 64 << 20
	out := map[string][]Access{}
	for i := 0; i < n; i++ {
		out["sequential"] = append(out["sequential"], Access{Addr: uint64(i) * timing.LineBytes})
		out["random"] = append(out["random"], Access{Addr: rnd() % region &^ (timing.LineBytes - 1)})
		out["strided 4KiB"] = append(out["strided 4KiB"], Access{Addr: uint64(i) * 4096 % region})
		out["mix 2:1 random"] = append(out["mix 2:1 random"], Access{Addr: rnd() % region &^ (timing.LineBytes - 1), Write: rnd()%3 == 0})
	}
	return out
}
