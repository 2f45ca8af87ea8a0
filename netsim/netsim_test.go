package netsim

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neuronfabric/nfabric/control"
	"github.com/neuronfabric/nfabric/workload"
)

func TestParseBackground(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Background
		err  bool
	}{
		{"", Background{}, false},
		{"none", Background{}, false},
		{"bulk=3", Background{Bulk: 3}, false},
		{"onoff=4@0.9,off=0", Background{OnOff: 4, Share: 0.9, OnNS: 5e6, OffNS: 0}, false},
		{"bulk=1,onoff=2,on=1ms,off=2ms", Background{Bulk: 1, OnOff: 2, Share: 0.5, OnNS: 1e6, OffNS: 2e6}, false},
		{"bulk=-1", Background{}, true},
		{"onoff=2@1.5", Background{}, true},
		{"onoff=2@0", Background{}, true},
		{"on=0", Background{}, true},
		{"bulk", Background{}, true},
		{"udp=3", Background{}, true},
	} {
		got, err := ParseBackground(tt.in)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("ParseBackground(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err == nil {
			// String round-trips through ParseBackground.
			back, err := ParseBackground(got.String())
			if err != nil || back != got {
				t.Errorf("ParseBackground(%q.String() = %q) = %+v, %v", tt.in, got.String(), back, err)
			}
		}
	}
}

func TestReadErrors(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		read           func(string) error
	}{
		{"links header", "t,link\n", "header", readLinks},
		{"links fields", LinksHeader + "\n1,a,1,0,0\n", "fields", readLinks},
		{"links busy", LinksHeader + "\n10,a,8,6,5,0,0,0\n", "exceeds", readLinks},
		{"links time back", LinksHeader + "\n10,a,8,1,1,0,0,0\n5,a,8,1,1,0,0,0\n", "goes back", readLinks},
		{"links negative", LinksHeader + "\n10,a,8,-1,1,0,0,0\n", "below", readLinks},
		{"links name", LinksHeader + "\n10,a b,8,1,1,0,0,0\n", "bad name", readLinks},
		{"links empty", "", "empty", readLinks},
		{"hosts back", HostsHeader + "\n10,h0,5\n5,h0,6\n", "goes back", readHosts},
		{"buckets finish", BucketsHeader + "\n0,0,8,100,50,0,0\n", "before", readBuckets},
		{"buckets int", BucketsHeader + "\n0,0,8,x,50,0,0\n", "release_ns", readBuckets},
		{"totals rate", TotalsHeader + "\na,0,0,0,0,0,0\n", "rate_bps", readTotals},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.read(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "in.csv") {
				t.Errorf("got %v; want an error naming in.csv and containing %q", err, tt.want)
			}
		})
	}
}

func readLinks(s string) error   { _, err := ReadLinks(strings.NewReader(s), "in.csv"); return err }
func readBuckets(s string) error { _, err := ReadBuckets(strings.NewReader(s), "in.csv"); return err }
func readHosts(s string) error   { _, err := ReadHosts(strings.NewReader(s), "in.csv"); return err }
func readTotals(s string) error  { _, err := ReadTotals(strings.NewReader(s), "in.csv"); return err }

// handResult is a two-host star with busy times and deliveries chosen by
// hand; scale 10, 1000 ns intervals, rate 8e8 bit/s simulated (1 GB/s
// unscaled).
func handResult() *Result {
	c := Config{Workers: 2, HostRate: 1e9, QueuePackets: 10, Steps: 1, Scale: 10}
	link := func(t int64, name string, grad, bg int64) LinkSample {
		return LinkSample{TNS: t, Link: name, RateBps: 8e8, BusyGradNS: grad, BusyBgNS: bg}
	}
	return &Result{Config: c, Interval: 1000,
		Schedule: &Schedule{StepNS: 2000, Releases: []Release{{AtNS: 0, Bytes: 100}}},
		Links: []LinkSample{
			link(1000, "h0>s0", 300, 0), link(1000, "s0>h0", 0, 0), link(1000, "h1>s0", 500, 0), link(1000, "s0>h1", 300, 600),
			link(2000, "h0>s0", 400, 500), link(2000, "s0>h0", 0, 0), link(2000, "h1>s0", 0, 0), link(2000, "s0>h1", 400, 0),
		},
		Hosts: []HostSample{{1000, "h0", 60}, {1000, "h1", 100}, {2000, "h0", 100}, {2000, "h1", 100}},
	}
}

func TestTelemetryMapping(t *testing.T) {
	tel, err := handResult().Telemetry()
	if err != nil {
		t.Fatal(err)
	}
	// Each host owes RingSendBytes(h, 2, 100) = 100 scaled bytes = 1000
	// bytes. Interval 1: both need 1000 B in 1000 ns = 1 GB/s; h0's hop
	// (h0>s0, s0>h1) has 1 - 0.6 = 0.4 GB/s left: pressure 2.5, h1's hop
	// 1 GB/s: pressure 1. Interval 2: h0 still owes 1000 - 600 = 400 B
	// (0.4 GB/s) with 0.5 GB/s left on h0>s0: pressure 0.8; h1 owes 0.
	want := []control.Telemetry{
		{TimeNS: 1000, DemandGBps: 1, CapacityGBps: 0.4, LineReads: 1e9 / 64},
		{TimeNS: 2000, DemandGBps: 0.4, CapacityGBps: 0.5, LineReads: 0.4e9 / 64},
	}
	if len(tel) != len(want) {
		t.Fatalf("%d samples; want %d", len(tel), len(want))
	}
	for i := range want {
		g, w := tel[i], want[i]
		if g.TimeNS != w.TimeNS || !near(g.DemandGBps, w.DemandGBps) || !near(g.CapacityGBps, w.CapacityGBps) || !near(g.LineReads, w.LineReads) {
			t.Errorf("sample %d = %+v; want %+v", i, g, w)
		}
	}
	r := handResult()
	r.Links[3].BusyGradNS = 500 // 500 + 600 > 1000
	if _, err := r.Telemetry(); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("over-busy link: %v; want an error", err)
	}
	r = handResult()
	r.Links[7].Link = "s0>h9"
	if _, err := r.Telemetry(); err == nil {
		t.Error("links that change between intervals: no error")
	}
	r = handResult()
	r.Hosts = r.Hosts[:3]
	if _, err := r.Telemetry(); err == nil {
		t.Error("missing host sample: no error")
	}
}

func TestRingSendBytes(t *testing.T) {
	for _, w := range []int{2, 3, 5, 8} {
		for _, S := range []int64{int64(w), 12, 1_000_003, 65_537} {
			var total int64
			for i := 0; i < w; i++ {
				n := RingSendBytes(i, w, S)
				total += n
				// Each worker sends 2(W-1) of W chunks: within 2(W-1) bytes of 2(W-1)S/W.
				if d := math.Abs(float64(n) - 2*float64(w-1)*float64(S)/float64(w)); d > float64(2*(w-1)) {
					t.Errorf("RingSendBytes(%d, %d, %d) = %d; want about 2(W-1)S/W", i, w, S, n)
				}
			}
			if total != 2*int64(w-1)*S {
				t.Errorf("W=%d S=%d: workers send %d; want 2(W-1)S = %d", w, S, total, 2*int64(w-1)*S)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func constant(n int, pressure float64) []control.Telemetry {
	out := make([]control.Telemetry, n)
	for i := range out {
		out[i] = control.Telemetry{TimeNS: int64(i) * 1e6, DemandGBps: pressure * 10, CapacityGBps: 10}
	}
	return out
}

func shift(ts []control.Telemetry, ns int64) []control.Telemetry {
	for i := range ts {
		ts[i].TimeNS += ns
	}
	return ts
}

func TestJudge(t *testing.T) {
	cc := control.DefaultConfig().Commander // relieve 0.7, release 0.4
	for _, tt := range []struct {
		name  string
		tel   []control.Telemetry
		label string
	}{
		{"low", constant(50, 0.3), "healthy"},
		{"high", constant(50, 0.9), "congested"},
		{"burst", append(constant(40, 0.1), shift(constant(10, 0.9), 40e6)...), "mixed"},
	} {
		v, err := Judge(tt.tel, cc)
		if err != nil {
			t.Fatal(err)
		}
		if v.Label != tt.label {
			t.Errorf("%s: Judge = %+v; want %s", tt.name, v, tt.label)
		}
	}
	if _, err := Judge(nil, cc); err == nil {
		t.Error("empty trace: no error")
	}
}

func TestAvailableNamesPackage(t *testing.T) {
	t.Setenv(EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	err := Available()
	if !errors.Is(err, ErrNoNS3) || !strings.Contains(err.Error(), "libns3-dev") {
		t.Errorf("Available() without pkg-config = %v; want ErrNoNS3 naming libns3-dev", err)
	}
}

func TestScheduleClosedForm(t *testing.T) {
	tr := smallTrace(3, 1_000_003)
	stepNS, err := ReferenceStepNS(tr, 4, Config{HostRate: 1e9, DelayNS: 1000}.HostLink())
	if err != nil {
		t.Fatal(err)
	}
	// Hand-computed: each bucket's ring takes 2*3*2us + 1.5*1000003/1e9 s
	// = 1.512004 ms; buckets ready at 10, 20, 30 ms never queue, so the
	// last finishes at 31.512 ms, inside backward (40 ms): T = 20 + 40 ms.
	if stepNS != 60_000_000 {
		t.Errorf("ReferenceStepNS = %d; want 60000000", stepNS)
	}
	s, err := NewSchedule(tr, 2, stepNS, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Releases) != 6 || s.Releases[4] != (Release{Step: 1, Bucket: 1, AtNS: 60e6 + 20e6 + 20e6, Bytes: 100000}) {
		t.Errorf("releases %+v", s.Releases)
	}
}

// smallTrace has n buckets of size bytes, ready every 10 ms of a 40 ms
// backward after a 20 ms forward.
func smallTrace(n int, size int64) *workload.Trace {
	tr := &workload.Trace{Model: "small", ForwardPS: 20 * workload.Millisecond, BackwardPS: 40 * workload.Millisecond, BytesPerElement: 4}
	for i := 0; i < n; i++ {
		tr.Buckets = append(tr.Buckets, workload.Bucket{Index: i, Bytes: size, Elements: size / 4, ReadyPS: int64(i+1) * 10 * workload.Millisecond})
	}
	return tr
}

func needNS3(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipped: %v", err)
	}
}

func smallConfig() Config {
	return Config{Workers: 4, HostRate: 10e9, DelayNS: 1000, QueuePackets: 100, Steps: 3, Scale: 100, Seed: 1}
}

// The ns-3 program's bytes reconcile with the ring's closed form: every
// worker of a W-ring sends 2(W-1) chunks of its S-byte buffer, all workers
// together 2(W-1) S (exactly, whatever S mod W); in a star each byte
// crosses two links.
func TestNS3BucketBytes(t *testing.T) {
	needNS3(t)
	star := smallConfig()
	star.Workers, star.Steps = 5, 1
	ls := smallConfig()
	ls.Workers, ls.Steps, ls.Topology, ls.Leaves, ls.Spines = 4, 1, LeafSpine, 2, 2
	for _, tt := range []struct {
		name string
		c    Config
		hops func(int64) int64 // link crossings of all ring traffic of one bucket
	}{
		{"star", star, func(total int64) int64 { return 2 * total }},
		// h0,h1 on leaf0, h2,h3 on leaf1: hops h1->h2 and h3->h0 cross
		// the fabric (4 links), the others stay on their leaf (2).
		{"leafspine", ls, func(total int64) int64 { return total / 4 * (2 + 4 + 2 + 4) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkBucketBytes(t, tt.c, tt.hops)
		})
	}
}

func checkBucketBytes(t *testing.T, c Config, hops func(int64) int64) {
	sizes := []int64{1_000_003, 65_537, 12}
	if c.Workers == 4 {
		sizes = []int64{1_000_000, 65_536, 12} // divisible by 4: every hop carries the same
	}
	sched := &Schedule{Model: "bytes", StepNS: 20e6}
	for i, n := range sizes {
		sched.Releases = append(sched.Releases, Release{Step: 0, Bucket: i, AtNS: int64(i) * 1e6, Bytes: n})
	}
	res, err := Run(context.Background(), c, sched)
	if err != nil {
		t.Fatal(err)
	}
	var payload int64
	for _, b := range res.Buckets {
		want := 2 * int64(c.Workers-1) * b.Bytes
		if b.FinishNS < 0 || b.SentBytes != want || b.RecvBytes != want {
			t.Errorf("bucket %d of %d bytes: finish %d, sent %d, received %d; want %d both", b.Bucket, b.Bytes, b.FinishNS, b.SentBytes, b.RecvBytes, want)
		}
		payload += want
	}
	var onLinks, drops int64
	for _, l := range res.Totals {
		onLinks += l.GradPayload
		drops += l.Drop
	}
	// Packet counters: every byte crosses its hop's links; more only by
	// retransmissions (at most 1% without drops).
	if want := hops(payload); onLinks < want || (drops == 0 && onLinks > want+want/100) {
		t.Errorf("gradient payload on links %d; want %d (+ retransmissions; %d bytes dropped)", onLinks, want, drops)
	}
	loads, err := res.Loads()
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range loads {
		for _, l := range iv.Links {
			if l.UGrad < 0 || l.UBg < 0 || l.UGrad+l.UBg > 1 {
				t.Errorf("%s at %d ns: utilization %v + %v", l.Link, iv.EndNS, l.UGrad, l.UBg)
			}
		}
	}
	if _, err := res.Telemetry(); err != nil {
		t.Error(err)
	}
}

func TestNS3HealthyCongestedDeterministic(t *testing.T) {
	needNS3(t)
	tr := smallTrace(8, 4<<20)
	cc := control.DefaultConfig().Commander
	cc.Smooth = 0.1 // one step of samples (a tenth of the step each)
	run := func(bg Background, seed uint64) ([]byte, Verdict) {
		c := smallConfig()
		c.Background, c.Seed = bg, seed
		res, err := Simulate(context.Background(), c, tr)
		if err != nil {
			t.Fatal(err)
		}
		tel, err := res.Telemetry()
		if err != nil {
			t.Fatal(err)
		}
		v, err := Judge(tel, cc)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := control.WriteTelemetry(&b, tel); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), v
	}
	quiet, v := run(Background{}, 1)
	t.Logf("no background: %s, relief %.2f, pressure mean %.3f peak %.3f", v.Label, v.Relief, v.MeanPressure, v.PeakPressure)
	if v.Label != "healthy" {
		t.Errorf("no background: %s (relief %.2f, mean pressure %.3f); want healthy", v.Label, v.Relief, v.MeanPressure)
	}
	sat := Background{OnOff: 4, Share: 0.95, OnNS: 5e6, OffNS: 0}
	loud, v := run(sat, 1)
	t.Logf("saturating background: %s, relief %.2f, pressure mean %.3f peak %.3f", v.Label, v.Relief, v.MeanPressure, v.PeakPressure)
	if v.Label != "congested" {
		t.Errorf("saturating background: %s (relief %.2f, mean pressure %.3f); want congested", v.Label, v.Relief, v.MeanPressure)
	}
	if again, _ := run(Background{}, 1); !bytes.Equal(again, quiet) {
		t.Error("same seed, no background: telemetry bytes differ")
	}
	onoff := Background{OnOff: 4, Share: 0.5, OnNS: 2e6, OffNS: 2e6}
	a, _ := run(onoff, 7)
	b, _ := run(onoff, 7)
	if !bytes.Equal(a, b) {
		t.Error("same seed, on/off background: telemetry bytes differ")
	}
	if bytes.Equal(loud, quiet) {
		t.Error("background made no difference")
	}
}

// The packet-level ring cannot beat the link: every host sends
// 2(W-1)/W S payload bytes through its uplink.
func TestNS3RingCheck(t *testing.T) {
	needNS3(t)
	c := smallConfig()
	rc, err := CheckRing(context.Background(), c, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	w := float64(c.Workers)
	floor := 2 * (w - 1) / w * float64(1<<20) / c.HostRate
	if rc.NS3S < floor || rc.NS3S > 20*floor {
		t.Errorf("ns-3 ring %.6f s; want between the link floor %.6f s and 20 x", rc.NS3S, floor)
	}
	if rc.PayloadBytes != 2*int64(c.Workers-1)<<20 || rc.WireBytes <= rc.PayloadBytes {
		t.Errorf("payload %d, wire %d; want payload 2(W-1)S and wire above it", rc.PayloadBytes, rc.WireBytes)
	}
	if len(rc.Models) != 5 {
		t.Errorf("%d models; want 5", len(rc.Models))
	}
}

func TestNS3CancelLeavesNothing(t *testing.T) {
	needNS3(t)
	if _, err := Binary(context.Background()); err != nil { // build outside the deadline
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c := smallConfig()
	c.Scale = 1 // a long run
	start := time.Now()
	_, err := Simulate(ctx, c, smallTrace(8, 64<<20))
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("Simulate under a 300 ms deadline = %v; want cancelled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "nfabric-ns3-*"))
	if len(left) != 0 {
		t.Errorf("scratch left behind: %v", left)
	}
	_ = os.Remove(tmp)
}

func TestEpisodes(t *testing.T) {
	// Two steps of 100 ns, samples every 50 ns; a's demand 1, b's 9.
	mk := func(d float64) []control.Telemetry {
		var out []control.Telemetry
		for i := int64(1); i <= 4; i++ {
			out = append(out, control.Telemetry{TimeNS: 50 * i, DemandGBps: d + float64(i), CapacityGBps: 10})
		}
		return out
	}
	got, err := Episodes(mk(0), mk(10), 100, 1000, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Pilot steps 0,1: a's steps 0,1; 2,3: b's steps 0,1; 4: a's step 0.
	want := []struct {
		t int64
		d float64
	}{{500, 1}, {1000, 2}, {1500, 3}, {2000, 4}, {2500, 11}, {3000, 12}, {3500, 13}, {4000, 14}, {4500, 1}, {5000, 2}}
	if len(got) != len(want) {
		t.Fatalf("%d samples; want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].TimeNS != w.t || got[i].DemandGBps != w.d {
			t.Errorf("sample %d = %d ns, %v GB/s; want %d ns, %v", i, got[i].TimeNS, got[i].DemandGBps, w.t, w.d)
		}
	}
	if _, err := Episodes(nil, mk(1), 100, 1000, 2, 5); err == nil {
		t.Error("empty trace: no error")
	}
}

// TestTelemetryDemandIsOfferedLoad: demand is the gradient load offered
// per interval, capped at the hop's line rate, not the backlog over the
// interval. The hand-made run of handResult with a 300-byte release
// (scaled; 3000 B unscaled per host: RingSendBytes(h, 2, 300) = 2 chunks
// of 150): interval 1, each host needs 3000 B in 1000 ns = 3 GB/s, more
// than the 1 GB/s line, so it offers 1 GB/s; h0's hop has 1 - 0.6 = 0.4
// GB/s left (s0>h1), pressure 2.5, h1's 1 GB/s, pressure 1: the sample
// is h0's, demand 1, capacity 0.4, carried 0.3 (s0>h1's u_grad). Interval
// 2: h0 still owes 3000 - 600 = 2400 B (2.4 GB/s, offered 1) against 0.5
// GB/s left on h0>s0 (pressure 2), h1 owes 2000 B (offered 1) against 1
// GB/s: demand 1, capacity 0.5, carried 0.4 (h0>s0's u_grad). The old
// mapping wrote demand 3 and 2.4 GB/s on a 1 GB/s link.
func TestTelemetryDemandIsOfferedLoad(t *testing.T) {
	r := handResult()
	r.Schedule.Releases[0].Bytes = 300
	ss, loads, err := r.Samples()
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{EndNS: 1000, Host: 0, Link: 3, NeedBytes: 3000, DemandGBps: 1, CapacityGBps: 0.4, CarriedGBps: 0.3},
		{EndNS: 2000, Host: 0, Link: 0, NeedBytes: 2400, DemandGBps: 1, CapacityGBps: 0.5, CarriedGBps: 0.4},
	}
	if len(ss) != len(want) {
		t.Fatalf("%d samples; want %d", len(ss), len(want))
	}
	for i, w := range want {
		g := ss[i]
		if g.EndNS != w.EndNS || g.Host != w.Host || g.Link != w.Link || !near(g.NeedBytes, w.NeedBytes) ||
			!near(g.DemandGBps, w.DemandGBps) || !near(g.CapacityGBps, w.CapacityGBps) || !near(g.CarriedGBps, w.CarriedGBps) {
			t.Errorf("sample %d = %+v; want %+v", i, g, w)
		}
	}
	// The links file names what each column holds: the bottleneck row of
	// interval 1 (s0>h1) carries rate 1, u_grad 0.3, u_bg 0.6, grad 0.3
	// and bg 0.6 GB/s, and the sample's demand and capacity.
	var b strings.Builder
	if err := WriteLoads(&b, loads, ss, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if lines[0] != FigureHeader || lines[4] != "1000,s0>h1,1.000000,0.300000,0.600000,0.300000,0.600000,0,0,true,1.000000,0.400000," ||
		lines[1] != "1000,h0>s0,1.000000,0.300000,0.000000,0.300000,0.000000,0,0,false,,," {
		t.Errorf("links file:\n%s", b.String())
	}
}
