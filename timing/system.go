package timing

import (
	"fmt"
	"sort"
	"strings"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/timing/cxldev"
	"github.com/neuronfabric/nfabric/timing/sim"
)

// Window selects which reads take the low-bit datapath: a read issued at
// time t does when From <= t < Until. The identity run uses the empty
// window; the low-bit run uses All.
type Window struct{ From, Until sim.Time }

// All is the window covering the whole run; None is empty.
var (
	All  = Window{0, sim.Never}
	None = Window{}
)

func (w Window) has(t sim.Time) bool { return t >= w.From && t < w.Until }

// System is one host (W streams sharing an LLC) attached to N controller
// stacks by address interleaving. Build it with NewSystem, call Run once.
type System struct {
	cfg        Config
	eng        *sim.Engine
	llc        *LLC
	stacks     []*cxldev.Stack
	devices    []*cxldev.Device
	streams    []*Stream
	lat        latencyHist
	tracer     *sim.Tracer
	interleave uint64
	lowBit     Window
	hitLat     sim.Time
	writes     int64
	lowReads   int64
	frames     []uint32 // streams.layout scattered: page p's frame is frames[p]
}

// Workload produces fresh per-stream sources for one run of a
// configuration. Sweep and Replay are the two provided; a nil Workload
// means Sweep.
type Workload interface {
	Sources(cfg Config) ([]Source, error)
}

// Sweep is the synthetic workload of Table 4: stream s sweeps its own
// contiguous footprint region (cfg.Streams) Passes times with Pattern.
type Sweep struct{}

// Sources implements Workload.
func (Sweep) Sources(cfg Config) ([]Source, error) {
	p, err := ParsePattern(cfg.Streams.Pattern)
	if err != nil {
		return nil, fmt.Errorf("streams.pattern: %w", err)
	}
	n := cfg.FootprintLines()
	out := make([]Source, cfg.Streams.Count)
	for s := range out {
		out[s] = newSweep(uint64(s)*uint64(n)*LineBytes, n, int64(cfg.Streams.Passes), p)
	}
	return out, nil
}

// Replay streams gradient buckets through the model (the API for
// bucketized trace replay): bucket b's Lines become ready at Ready and are
// dealt round-robin to the W streams (line j to stream j mod W), each
// stream reading from a ring over its own footprint region, so the LLC sees
// the same per-worker buffer reuse as Sweep. Buckets must be in
// nondecreasing Ready order with Lines >= 0.
type Replay struct {
	Buckets []Bucket
}

// Sources implements Workload.
func (r Replay) Sources(cfg Config) ([]Source, error) {
	if !sort.SliceIsSorted(r.Buckets, func(i, j int) bool { return r.Buckets[i].Ready < r.Buckets[j].Ready }) {
		return nil, fmt.Errorf("replay: buckets are not in nondecreasing ready-time order")
	}
	var total int64
	for i, b := range r.Buckets {
		if b.Lines < 0 || b.Ready < 0 {
			return nil, fmt.Errorf("replay: bucket %d has %d lines ready at %v", i, b.Lines, b.Ready)
		}
		total += b.Lines
		if total > MaxLinesPerRun || total < 0 {
			return nil, fmt.Errorf("replay: more than %d lines", MaxLinesPerRun)
		}
	}
	ring := cfg.FootprintLines()
	if ring == 0 {
		return nil, fmt.Errorf("replay: streams.footprint_mib must be > 0")
	}
	w := int64(cfg.Streams.Count)
	out := make([]Source, w)
	for s := range out {
		out[s] = &bucketSource{buckets: r.Buckets, s: int64(s), w: w, base: uint64(s) * uint64(ring) * LineBytes, ring: ring}
	}
	return out, nil
}

// NewSystem builds the model for cfg with one stream per source; reads
// issued inside lowBit take the aggregation pipeline.
func NewSystem(cfg Config, sources []Source, lowBit Window) (*System, error) {
	return newSystem(cfg, sources, lowBit, nil)
}

// newSystem is NewSystem recording the run's slices into tr (nil: none).
func newSystem(cfg Config, sources []Source, lowBit Window, tr *sim.Tracer) (*System, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("timing: no request streams")
	}
	eng := sim.NewEngine()
	sys := &System{cfg: cfg, eng: eng, lowBit: lowBit, interleave: uint64(cfg.Controller.InterleaveBytes), tracer: tr}
	if cfg.StreamLayout() == LayoutScattered {
		bytes := int64(cfg.Streams.Count) * cfg.FootprintLines() * LineBytes
		sys.frames = scatterFrames(max(1, (bytes+PageBytes-1)/PageBytes))
	}
	sys.llc = MakeLLCBuilder().
		WithSize(int64(cfg.LLC.SizeMiB * (1 << 20))).
		WithWays(cfg.LLC.Ways).
		WithLatency(sim.FromNS(cfg.LLC.HitLatencyNS)).
		Build("Host[0].LLC")
	sys.hitLat = sys.llc.Latency()
	pb := cxldev.MakePipelineBuilder().
		WithStages(cfg.Controller.Stages).
		WithCycle(cfg.Cycle()).
		WithInitiationCycles(cfg.Controller.InitiationCycles)
	sb := cxldev.MakeStackBuilder().
		WithMemLatency(sim.FromNS(cfg.Memory.LatencyNS)).
		WithPipeline(pb).
		WithGate(cxldev.MakeGateBuilder().WithBandwidth(cfg.LinkBytesPerSec()))
	db := cxldev.MakeDeviceBuilder().WithConfig(cfg.Device).WithEngine(eng).WithPipeline(pb).
		WithShare(cfg.Link.Share).WithTracer(tr).WithReadHook(func(issue, done sim.Time) { sys.lat.add(done - issue) })
	if cfg.LinkModel() == LinkGate {
		db = db.WithGate(cfg.LinkBytesPerSec())
	}
	if cfg.Memory.Model != MemoryDRAM {
		db = db.WithIdealMemory(sim.FromNS(cfg.Memory.LatencyNS))
	}
	for i := 0; i < cfg.Controller.Stacks; i++ {
		name := fmt.Sprintf("Device[%d].Ctrl", i)
		if cfg.Detailed() {
			sys.devices = append(sys.devices, db.Build(name))
		} else {
			sys.stacks = append(sys.stacks, sb.Build(name))
		}
	}
	iv := sim.FromNS(cfg.Streams.IssueIntervalNS)
	for i, src := range sources {
		sys.streams = append(sys.streams, &Stream{
			name: sim.MustName(fmt.Sprintf("Host[0].Stream[%d]", i)), sys: sys, src: src,
			limit: cfg.Streams.Outstanding, interval: iv,
		})
	}
	return sys, nil
}

// Engine returns the system's engine (to attach hooks before Run).
func (sys *System) Engine() *sim.Engine { return sys.eng }

// Streams returns the request streams in index order.
func (sys *System) Streams() []*Stream { return sys.streams }

// Stacks returns the ideal controller stacks in index order (none under
// the detailed models; see Devices).
func (sys *System) Stacks() []*cxldev.Stack { return sys.stacks }

// Devices returns the detailed controller stacks in index order (none
// under the ideal model).
func (sys *System) Devices() []*cxldev.Device { return sys.devices }

// stackOf returns the stack index of addr and its stack-local line.
func (sys *System) stackOf(addr uint64) (int, uint64) {
	n := uint64(max(len(sys.stacks), len(sys.devices)))
	if n == 1 {
		return 0, addr / LineBytes // one stack holds every line where it is
	}
	g := addr / sys.interleave
	local := (g/n)*sys.interleave + addr%sys.interleave
	return int(g % n), local / LineBytes
}

// PageBytes is the page size of streams.layout scattered.
const PageBytes = 4096

// physical returns the physical address of a stream address under
// streams.layout: the address itself (contiguous), or its page moved to
// the page's frame (scattered). Pages beyond the permuted range keep
// their position relative to the range's repeats.
func (sys *System) physical(addr uint64) uint64 {
	n := uint64(len(sys.frames))
	if n == 0 {
		return addr
	}
	p := addr / PageBytes
	if p < n { // the permuted range itself: no division
		return uint64(sys.frames[p])*PageBytes + addr%PageBytes
	}
	return ((p/n)*n+uint64(sys.frames[p%n]))*PageBytes + addr%PageBytes
}

// scatterFrames returns a permutation of n page frames (Fisher-Yates
// over splitmix64 with a fixed seed, so a layout is the same on every
// run, platform and Go release).
func scatterFrames(n int64) []uint32 {
	f := make([]uint32, n)
	for i := range f {
		f[i] = uint32(i)
	}
	x := uint64(0x6e66616272696321) // fixed seed
	for i := n - 1; i > 0; i-- {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		j := int64(z % uint64(i+1))
		f[i], f[j] = f[j], f[i]
	}
	return f
}

// LLC returns the shared cache.
func (sys *System) LLC() *LLC { return sys.llc }

// access performs the LLC lookup for r issued at now and, on a read miss,
// the controller access; it returns when r completes at its stream, or
// async when a detailed device will complete it with an event.
func (sys *System) access(from *Stream, now sim.Time, r Request) (done sim.Time, async bool) {
	r.Addr = sys.physical(r.Addr)
	hit := sys.llc.Access(r.Addr, r.Write)
	t := now + sys.hitLat
	sys.tracer.Slice(sys.llc.name, now, t)
	if sys.devices != nil {
		return sys.deviceAccess(from, now, t, r, hit)
	}
	if r.Write {
		sys.writes++
		return t, false
	}
	if hit {
		return t, false
	}
	from.ControllerReads++
	st := sys.stacks[(r.Addr/sys.interleave)%uint64(len(sys.stacks))]
	low := sys.lowBit.has(now)
	if low {
		sys.lowReads++
	}
	mode := cxl.Identity
	if low {
		mode = cxl.Aggregate(lowbit.Binary) // the low-bit runs' mode
	}
	done = st.Accept(t, mode)
	sys.lat.add(done - now)
	sys.tracer.Slice(st.Name(), t, done)
	return done, false
}

// deviceAccess is access under the detailed models: a dirty eviction
// becomes a posted writeback to its stack (a write access completes when
// its writeback has left the host, so the host's write buffer is bounded
// by the streams' outstanding limit), and a read miss completes when its
// data arrives.
func (sys *System) deviceAccess(from *Stream, now, t sim.Time, r Request, hit bool) (sim.Time, bool) {
	wbAsync := false
	if v, ok := sys.llc.Victim(); ok && !hit {
		s, line := sys.stackOf(v)
		wb := cxldev.Request{Line: line, Write: true, Issue: now}
		if r.Write {
			// A write access completes when its writeback has left the
			// host.
			wb.Owner, wb.OwnerArg = from, evComplete
		}
		sys.devices[s].Submit(t, wb)
		wbAsync = r.Write
	}
	if r.Write {
		sys.writes++
		return t, wbAsync
	}
	if hit {
		return t, false
	}
	from.ControllerReads++
	low := sys.lowBit.has(now)
	if low {
		sys.lowReads++
	}
	s, line := sys.stackOf(r.Addr)
	sys.devices[s].Submit(t, cxldev.Request{Line: line, LowBit: low, Issue: now, Owner: from, OwnerArg: evComplete})
	return 0, true
}

// Result summarises one run.
type Result struct {
	// RunTime is when the last request of any stream completed.
	RunTime sim.Time `json:"run_time_ps"`
	// Lines is every request; Reads and Writes split them.
	Lines  int64 `json:"lines"`
	Reads  int64 `json:"reads"`
	Writes int64 `json:"writes"`
	// Hits and Misses are LLC lookups; Writebacks are dirty evictions
	// (counted, not timed).
	Hits       int64 `json:"llc_hits"`
	Misses     int64 `json:"llc_misses"`
	Writebacks int64 `json:"writebacks"`
	// ControllerReads reached a controller stack; LowBitReads of them went
	// through the aggregation pipeline.
	ControllerReads int64 `json:"controller_reads"`
	LowBitReads     int64 `json:"lowbit_reads"`
	// PipeWait and LinkWait sum queueing in front of the pipelines and
	// gates over all stacks.
	PipeWait sim.Time `json:"pipe_wait_ps"`
	LinkWait sim.Time `json:"link_wait_ps"`
	// LinkUtil is the busiest gate's busy time over RunTime.
	LinkUtil float64 `json:"link_util"`
	// Events is the number of engine events run.
	Events int64 `json:"events"`
	// Latency summarises the controller reads.
	Latency Latency `json:"read_latency"`
	// Detail holds the detailed models' counters (nil under ideal).
	Detail *DetailStats `json:"detail,omitempty"`
}

// DetailStats are the counters of the detailed models, summed over the
// stacks.
type DetailStats struct {
	// DRAM column commands, activations, conflict precharges and
	// all-bank refreshes; RowHitRate is the column commands that found
	// their row open; DataBusUtil is the busiest channel's data-bus time
	// over the run.
	DRAMReads   int64   `json:"dram_reads"`
	DRAMWrites  int64   `json:"dram_writes"`
	Acts        int64   `json:"activates"`
	Precharges  int64   `json:"precharges"`
	Refreshes   int64   `json:"refreshes"`
	RowHitRate  float64 `json:"row_hit_rate"`
	DataBusUtil float64 `json:"data_bus_util"`
	// ReqLinkUtil and RespLinkUtil are the busiest stack's flit time over
	// the run in each direction (cxl link only); Flits counts both.
	ReqLinkUtil  float64 `json:"req_link_util"`
	RespLinkUtil float64 `json:"resp_link_util"`
	Flits        int64   `json:"flits"`
	// RespFlits counts the response direction's flits alone (its lines
	// per flit measure flit packing).
	RespFlits int64 `json:"resp_flits"`
	// CreditStalls counts requests that waited at the host for a request
	// credit.
	CreditStalls int64 `json:"credit_stalls"`
}

// detail collects the devices' counters.
func (sys *System) detail(run sim.Time) (*DetailStats, sim.Time) {
	d := &DetailStats{}
	var busy, dbus, req sim.Time
	for _, dev := range sys.devices {
		for _, ch := range dev.Channels() {
			d.DRAMReads += ch.Reads
			d.DRAMWrites += ch.Writes
			d.Acts += ch.Acts
			d.Precharges += ch.Pres
			d.Refreshes += ch.Refreshes
			dbus = max(dbus, ch.DataBusy)
		}
		if dev.Gate != nil {
			busy = max(busy, dev.Gate.Busy)
		} else {
			busy = max(busy, dev.RespLink.BusyTime())
			req = max(req, dev.ReqLink.BusyTime())
			d.Flits += dev.RespLink.Flits + dev.ReqLink.Flits
			d.RespFlits += dev.RespLink.Flits
		}
		d.CreditStalls += dev.CreditStalls
	}
	if col := d.DRAMReads + d.DRAMWrites; col > 0 {
		// Rows a refresh closed before their first use make Acts exceed
		// the misses; never report a negative rate.
		d.RowHitRate = max(0, float64(col-d.Acts)/float64(col))
	}
	if run > 0 {
		d.DataBusUtil = float64(dbus) / float64(run)
		d.ReqLinkUtil = float64(req) / float64(run)
		d.RespLinkUtil = float64(busy) / float64(run)
	}
	return d, busy
}

// Run simulates until every stream is done and returns the result. Call it
// once.
//
// Invariant: a run serves every line its sources ask for. The engine
// stops when no event is left; if a stream then still has lines in flight
// or unissued, or a device still holds a request, some component lost a
// wake-up and the model is broken: Run returns an error naming what was
// left where, never a result of the lines that happened to finish.
func (sys *System) Run() (Result, error) {
	for _, st := range sys.streams {
		sys.eng.Schedule(0, st, evIssue)
	}
	sys.eng.Run()
	if err := sys.unserved(); err != nil {
		return Result{}, err
	}
	var r Result
	for _, st := range sys.streams {
		r.Lines += st.Completed
		if st.Finish > r.RunTime {
			r.RunTime = st.Finish
		}
	}
	r.Writes = sys.writes
	r.Reads = r.Lines - r.Writes
	r.Hits, r.Misses, r.Writebacks = sys.llc.Hits, sys.llc.Misses, sys.llc.Writebacks
	r.LowBitReads = sys.lowReads
	var busy sim.Time
	for _, s := range sys.stacks {
		r.ControllerReads += s.Reads
		r.PipeWait += s.Pipe.Wait
		r.LinkWait += s.Gate.Wait
		busy = max(busy, s.Gate.Busy)
	}
	if r.RunTime > 0 {
		r.LinkUtil = float64(busy) / float64(r.RunTime)
	}
	if sys.devices != nil {
		r.Detail, busy = sys.detail(r.RunTime)
		for _, d := range sys.devices {
			r.ControllerReads += d.Reads
			r.PipeWait += d.Pipe.Wait
			if d.Gate != nil {
				r.LinkWait += d.Gate.Wait
			}
		}
		if r.RunTime > 0 {
			r.LinkUtil = float64(busy) / float64(r.RunTime)
		}
	}
	r.Latency = sys.lat.summary()
	r.Events = sys.eng.Events
	return r, nil
}

// unserved returns an error describing every line still in the model
// after the engine ran out of events, nil when each stream issued its
// source dry and completed all it issued and no device holds a request.
func (sys *System) unserved() error {
	var left []string
	for _, d := range sys.devices {
		if s := d.Held(); s != "" {
			left = append(left, s)
		}
	}
	var issued, done int64
	stuck := 0
	for _, st := range sys.streams {
		issued += st.Issued
		done += st.Completed
		if st.outstanding != 0 || !st.exhausted || st.hasPending {
			if stuck++; stuck <= 2 {
				left = append(left, fmt.Sprintf("%s completed %d of %d issued (source exhausted: %v)", st.name, st.Completed, st.Issued, st.exhausted && !st.hasPending))
			}
		}
	}
	if len(left) == 0 {
		return nil
	}
	if stuck > 2 {
		left = append(left, fmt.Sprintf("%d more streams unfinished", stuck-2))
	}
	return fmt.Errorf("timing: the run stopped at %v with %d of %d issued lines served: %s; no event was left to move them (a lost wake-up in the model, not a property of the configuration)",
		sys.eng.Now(), done, issued, strings.Join(left, "; "))
}

// Simulate builds and runs one system: cfg with workload w (nil: Sweep)
// and the given low-bit window.
func Simulate(cfg Config, w Workload, lowBit Window) (Result, error) {
	return SimulateTraced(cfg, w, lowBit, nil)
}

// Pair is an identity run and a low-bit run of the same configuration and
// workload. The two differ only by the aggregation pipeline, so their
// run-time difference is the exposed datapath cost:
//
//	Exposed  = LowBit.RunTime - Identity.RunTime   (T_exposed = max(0, T_agg - T_overlap), summed)
//	Overhead = 100 * Exposed / Identity.RunTime    (percent)
type Pair struct {
	Identity    Result   `json:"identity"`
	LowBit      Result   `json:"lowbit"`
	Exposed     sim.Time `json:"exposed_ps"`
	OverheadPct float64  `json:"overhead_pct"`
	// PipelineLatency is the datapath's own time per line (stages x cycle).
	PipelineLatency sim.Time `json:"pipeline_latency_ps"`
	// PhaseExposed holds each refresh schedule's exposure when the pair
	// is a mean over schedules (memory.refresh_phases; Identity and LowBit
	// are then the mean runs, see phasedPair); empty for a single pair.
	PhaseExposed []sim.Time `json:"phase_exposed_ps,omitempty"`
	// Traced is the low-bit run a tracer recorded when that run is none
	// of the pair's rows (refresh schedule 1 of a mean over schedules;
	// the tracer's Run says so); nil otherwise.
	Traced *Result `json:"traced,omitempty"`
}

// Hidden reports whether the datapath is fully hidden in steady state: at
// most one pipeline latency (the fill of the first line) is exposed over
// the whole run.
func (p Pair) Hidden() bool { return p.Exposed <= p.PipelineLatency }

// RunPair runs cfg with workload w (nil: Sweep) twice, identity and
// low-bit, and compares them.
func RunPair(cfg Config, w Workload) (Pair, error) {
	return RunWindowPair(cfg, w, All)
}

// RunWindowPair is RunPair with the low-bit run restricted to reads issued
// in lowBit (a mode latch that is on only during the window).
func RunWindowPair(cfg Config, w Workload, lowBit Window) (Pair, error) {
	return RunTracedPair(cfg, w, lowBit, nil)
}

// RunTracedPair is RunWindowPair with the low-bit run's slices recorded
// into tr (nil: no trace), for `nfabric timing run --trace-out`. Under
// dram with refresh on and device.media.refresh_seed 0 it is the mean
// over memory.refresh_phases refresh schedules (phasedPair), and tr
// records the first schedule's low-bit run: that run is no row of the
// pair, so Pair.Traced holds it and tr.Run says which it is.
func RunTracedPair(cfg Config, w Workload, lowBit Window, tr *sim.Tracer) (Pair, error) {
	if n := refreshPhases(cfg); n > 0 {
		return phasedPair(cfg, w, lowBit, tr, n)
	}
	return singlePair(cfg, w, lowBit, tr)
}

// singlePair runs the identity and low-bit runs of cfg once each.
func singlePair(cfg Config, w Workload, lowBit Window, tr *sim.Tracer) (Pair, error) {
	id, err := Simulate(cfg, w, None)
	if err != nil {
		return Pair{}, err
	}
	lb, err := SimulateTraced(cfg, w, lowBit, tr)
	if err != nil {
		return Pair{}, err
	}
	if tr != nil {
		tr.Run = "the pair's low-bit run"
	}
	p := Pair{Identity: id, LowBit: lb, Exposed: lb.RunTime - id.RunTime, PipelineLatency: cfg.PipelineLatency()}
	if id.RunTime > 0 {
		p.OverheadPct = 100 * float64(p.Exposed) / float64(id.RunTime)
	}
	return p, nil
}

// SimulateTraced is Simulate with the run's slices recorded into tr.
func SimulateTraced(cfg Config, w Workload, lowBit Window, tr *sim.Tracer) (Result, error) {
	if w == nil {
		w = Sweep{}
	}
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	src, err := w.Sources(cfg)
	if err != nil {
		return Result{}, err
	}
	sys, err := newSystem(cfg, src, lowBit, tr)
	if err != nil {
		return Result{}, err
	}
	return sys.Run()
}
