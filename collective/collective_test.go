package collective

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// Hand-computed cases: S = 1e9 bytes, B = 1e9 B/s, alpha = 1 us.
func TestAllReduceHand(t *testing.T) {
	l := Link{Name: "l", Bandwidth: 1e9, Latency: 1e-6}
	fast := Link{Name: "f", Bandwidth: 1e10, Latency: 1e-7}
	tests := []struct {
		name    string
		c       AlphaBeta
		lat, bw float64
	}{
		{"ring n=8", AlphaBeta{Alg: Ring, N: 8, Link: l}, 14e-6, 1.75},
		{"ring n=2", AlphaBeta{Alg: Ring, N: 2, Link: l}, 2e-6, 1},
		{"ring n=1", AlphaBeta{Alg: Ring, N: 1, Link: l}, 0, 0},
		{"tree n=8", AlphaBeta{Alg: Tree, N: 8, Link: l}, 6e-6, 2},
		{"tree n=5", AlphaBeta{Alg: Tree, N: 5, Link: l}, 6e-6, 2},
		{"rhd n=8", AlphaBeta{Alg: HalvingDoubling, N: 8, Link: l}, 6e-6, 1.75},
		{"rhd n=6", AlphaBeta{Alg: HalvingDoubling, N: 6, Link: l}, 6e-6, 3.5},                          // p=4: 4 alpha + 1.5 S/B, fold/unfold 2 alpha + 2 S/B
		{"hier 2x4", AlphaBeta{Alg: Hierarchical, N: 8, PerNode: 4, Link: l, Intra: fast}, 2.6e-6, 0.4}, // 2*3*0.1us + 2*1us; 2*.75*.1 + 2*.5*.25
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := tt.c.Time(Call{Op: AllReduce, Bytes: 1e9})
			if err != nil {
				t.Fatal(err)
			}
			if !near(e.LatencyS, tt.lat) || !near(e.BandwidthS, tt.bw) || !near(e.Seconds, tt.lat+tt.bw) {
				t.Errorf("Time(1e9) = %+v; want latency %g, bandwidth %g", e, tt.lat, tt.bw)
			}
		})
	}
}

// With alpha = 0 the ring's busbw equals the link bandwidth (NCCL's reason
// for the 2(n-1)/n factor).
func TestBusBW(t *testing.T) {
	for _, n := range []int{2, 3, 8, 64} {
		e, _ := AlphaBeta{Alg: Ring, N: n, Link: Link{Bandwidth: 5e9}}.Time(Call{Op: AllReduce, Bytes: 3e8})
		if !near(e.BusBW, 5e9) || !near(e.AlgBW, 3e8/e.Seconds) {
			t.Errorf("n=%d: busbw %g algbw %g; want busbw 5e9", n, e.BusBW, e.AlgBW)
		}
	}
}

func TestCXLPath(t *testing.T) {
	cxl := Presets["cxl"]
	cxl.Latency = 0
	p := CXLPath{Link: cxl, Workers: 8}
	// 1.5e9 FP32 elements: 6e9 bytes written and read at 128 GiB/s.
	e, _ := p.Time(1_500_000_000, 32, false)
	if want := 2 * 6e9 / (128 * GiB); !near(e.Seconds, want) {
		t.Errorf("fp32 %g s; want %g", e.Seconds, want)
	}
	// G-Binary: 187.5e6 bytes = 2,929,687.5 lines -> 2,929,688 lines, with exposure 2%.
	p.Exposure = 0.02
	e, _ = p.Time(1_500_000_000, 1, true)
	if want := 2 * 2929688 * 64.0 / (128 * GiB) * 1.02; !near(e.Seconds, want) {
		t.Errorf("g-binary %g s; want %g", e.Seconds, want)
	}
	p.Shared = true
	e2, _ := p.Time(1_500_000_000, 1, true)
	if !near(e2.Seconds, 8*e.Seconds) {
		t.Errorf("shared %g; want 8x %g", e2.Seconds, e.Seconds)
	}
	if _, err := p.Time(10, 0, true); err == nil {
		t.Error("0 bits accepted")
	}
}

// Every operation on a hand-computed case: n = 8 ranks, S = 1e6 bytes,
// B = 1e9 B/s, alpha = 1 us; the ring takes n-1 = 7 steps, a tree
// ceil(log2 8) = 3.
func TestOpsHand(t *testing.T) {
	l := Link{Name: "l", Bandwidth: 1e9, Latency: 1e-6}
	for _, tt := range []struct {
		op        Op
		alg       Algorithm
		lat, bw   float64
		busFactor float64
	}{
		{ReduceScatter, Ring, 7e-6, 0.875e-3, 0.875},
		{ReduceScatterBlock, Tree, 3e-6, 0.875e-3, 0.875},
		{AllGather, Ring, 7e-6, 7e-3, 7}, // each rank receives 7 contributions
		{AllGather, HalvingDoubling, 3e-6, 7e-3, 7},
		{AllToAll, Tree, 7e-6, 0.875e-3, 0.875}, // pairwise whatever the algorithm
		{Broadcast, Ring, 7e-6, 1e-3, 1},
		{Reduce, Tree, 3e-6, 1e-3, 1},
		{Gather, Ring, 7e-6, 7e-3, 7},
		{Scatter, Tree, 3e-6, 0.875e-3, 0.875},
		{Barrier, Ring, 3e-6, 0, 0},
	} {
		e, err := AlphaBeta{Alg: tt.alg, N: 8, Link: l}.Time(Call{Op: tt.op, Bytes: 1e6})
		if err != nil {
			t.Fatalf("%v %v: %v", tt.op, tt.alg, err)
		}
		if !near(e.LatencyS, tt.lat) || !near(e.BandwidthS, tt.bw) || !near(e.Seconds, tt.lat+tt.bw) {
			t.Errorf("%v by %v: latency %g bandwidth %g; want %g, %g", tt.op, tt.alg, e.LatencyS, e.BandwidthS, tt.lat, tt.bw)
		}
		if want := 1e6 / e.Seconds * tt.busFactor; tt.busFactor > 0 && !near(e.BusBW, want) {
			t.Errorf("%v: busbw %g; want %g", tt.op, e.BusBW, want)
		}
	}
	// With alpha = 0, each operation's busbw is the link bandwidth: the
	// bytes through the busiest link are what the formula charges.
	for op := range NumOps {
		if op == Barrier || op == AllReduce {
			continue
		}
		e, _ := AlphaBeta{Alg: Ring, N: 8, Link: Link{Bandwidth: 5e9}}.Time(Call{Op: op, Bytes: 4e6})
		if !near(e.BusBW, 5e9) {
			t.Errorf("%v at alpha 0: busbw %g; want the link's 5e9", op, e.BusBW)
		}
	}
	if _, err := (AlphaBeta{Alg: Hierarchical, N: 8, PerNode: 4, Link: l, Intra: l}).Time(Call{Op: AllGather, Bytes: 1}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("hierarchical all-gather: %v; want ErrUnsupported", err)
	}
}

// A reduce-scatter on the controller reads back one shard: 8 workers,
// 64,000 elements at 1 bit: 8,000 B written (125 lines) and ceil(8000/8)
// = 1,000 B read (16 lines), against 125 + 125 lines for an all-reduce.
func TestCXLPathReduceScatter(t *testing.T) {
	p := CXLPath{Link: Link{Bandwidth: 64e9, Latency: 0}, Workers: 8}
	rs, err := p.TimeOp(ReduceScatter, 64000, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	ar, _ := p.TimeOp(AllReduce, 64000, 1, true)
	if !near(rs.Seconds, (125+16)*64/64e9) || !near(ar.Seconds, 250*64/64e9) {
		t.Errorf("reduce-scatter %g s, all-reduce %g s; want %g and %g", rs.Seconds, ar.Seconds, (125+16)*64/64e9, 250*64/64e9)
	}
	if _, err := p.TimeOp(AllGather, 64000, 1, true); err == nil {
		t.Error("an all-gather on the controller path was priced")
	}
}

func TestErrors(t *testing.T) {
	l := Presets["ib"]
	for _, c := range []AlphaBeta{
		{Alg: Ring, N: 0, Link: l},
		{Alg: Ring, N: 4, Link: Link{Name: "zero"}},
		{Alg: Hierarchical, N: 6, PerNode: 4, Link: l, Intra: Presets["nvlink"]},
		{Alg: Hierarchical, N: 8, PerNode: 4, Link: l},
		{Alg: Algorithm(9), N: 4, Link: l},
	} {
		if _, err := c.Time(Call{Op: AllReduce, Bytes: 1}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := (AlphaBeta{Alg: Ring, N: 2, Link: l}).Time(Call{Op: AllReduce, Bytes: math.NaN()}); err == nil {
		t.Error("NaN size accepted")
	}
}

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"128GiB/s", 128 * GiB}, {"25 GB/s", 25e9}, {"200Gb/s", 25e9}, {"200Gbit/s", 25e9},
		{"400 Gbps", 50e9}, {"1e9", 1e9}, {"31.5GB/s", 31.5e9}, {"2 TiB/s", 2 << 40}, {"100 MB/s", 1e8},
	}
	for _, tt := range tests {
		got, err := ParseBandwidth(tt.in)
		if err != nil || !near(got, tt.want) {
			t.Errorf("ParseBandwidth(%q) = %g, %v; want %g", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "fast", "10 furlongs/s", "-3GB/s", "0GB/s", "1e400GB/s", "GB/s"} {
		if _, err := ParseBandwidth(bad); err == nil {
			t.Errorf("ParseBandwidth(%q) accepted", bad)
		}
	}
}

func TestParseLinksYAML(t *testing.T) {
	ls, err := ParseLinksYAML([]byte("links:\n  - name: roce\n    bandwidth: 100Gb/s\n    latency: 3us\n  - name: cxl\n    bandwidth: 64GiB/s\n"), "l.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || !near(ls[0].Bandwidth, 12.5e9) || !near(ls[0].Latency, 3e-6) {
		t.Errorf("links %+v", ls)
	}
	if l, _ := LookupLink("CXL", ls); !near(l.Bandwidth, 64*GiB) {
		t.Errorf("user link does not override preset: %+v", l)
	}
	for _, tt := range []struct{ text, want string }{
		{"", "empty"},
		{"links: []\n", "no links"},
		{"links:\n  - name: a\n    bandwidth: 1GB/s\n    colour: red\n", "colour"},
		{"links:\n  - name: a\n    bandwidth: 1GB/s\n  - name: b\n    bandwidth: fast\n", "l.yaml:4: link b"},
		{"links:\n  - name: a\n    bandwidth: 1GB/s\n    latency: -1us\n", "latency"},
		{"links:\n  - name: a\n    bandwidth: 1GB/s\n  - name: A\n    bandwidth: 1GB/s\n", "duplicate"},
	} {
		_, err := ParseLinksYAML([]byte(tt.text), "l.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "l.yaml") {
			t.Errorf("ParseLinksYAML(%q) error %v; want %q", tt.text, err, tt.want)
		}
	}
}

func FuzzParseBandwidth(f *testing.F) {
	for _, s := range []string{"128GiB/s", "25 GB/s", "200Gb/s", "1e9", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bw, err := ParseBandwidth(s)
		if err == nil && (!(bw > 0) || math.IsInf(bw, 0)) {
			t.Fatalf("ParseBandwidth(%q) = %v without error", s, bw)
		}
	})
}

func FuzzParseLinksYAML(f *testing.F) {
	f.Add([]byte("links:\n  - name: roce\n    bandwidth: 100Gb/s\n    latency: 3us\n"))
	f.Add([]byte("links: [{name: a, bandwidth: 1GiB/s}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := ParseLinksYAML(data, "f.yaml")
		if err != nil {
			if !strings.Contains(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, l := range ls {
			if err := l.Validate(); err != nil {
				t.Fatalf("accepted invalid link: %v", err)
			}
		}
	})
}
