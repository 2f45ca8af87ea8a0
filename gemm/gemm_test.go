package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// ref computes alpha·op(A)·op(B) + beta·C in float64 with a plain triple
// loop, and the bound Σ|alpha·a·b| + |beta·c| used for the error check.
func ref(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, mag []float64) {
	want = make([]float64, m*n)
	mag = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs float64
			for l := 0; l < k; l++ {
				var av, bv float32
				if tA {
					av = a[l*lda+i]
				} else {
					av = a[i*lda+l]
				}
				if tB {
					bv = b[j*ldb+l]
				} else {
					bv = b[l*ldb+j]
				}
				s += float64(av) * float64(bv)
				abs += math.Abs(float64(av) * float64(bv))
			}
			want[i*n+j] = float64(alpha) * s
			mag[i*n+j] = math.Abs(float64(alpha)) * abs
			if beta != 0 {
				cv := float64(c[i*ldc+j])
				want[i*n+j] += float64(beta) * cv
				mag[i*n+j] += math.Abs(float64(beta) * cv)
			}
		}
	}
	return want, mag
}

// guarded is a matrix of rows×cols with row stride ld, stored at offset
// pad inside a buffer whose every other element (stride gaps and pad
// bands before and after) is NaN.
type guarded struct {
	buf       []float32
	pad, ld   int
	rows, col int
}

const guard = 37

func newGuarded(rng *rand.Rand, rows, cols, ld int) *guarded {
	g := &guarded{pad: guard, ld: ld, rows: rows, col: cols}
	n := 0
	if rows > 0 {
		n = (rows-1)*ld + cols
	}
	g.buf = make([]float32, n+2*guard)
	nan := float32(math.NaN())
	for i := range g.buf {
		g.buf[i] = nan
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			g.buf[guard+i*ld+j] = float32(rng.NormFloat64())
		}
	}
	return g
}

func (g *guarded) data() []float32 { return g.buf[g.pad : len(g.buf)-g.pad] }

// inside reports whether buffer index x is an element of the matrix.
func (g *guarded) inside(x int) bool {
	x -= g.pad
	if x < 0 || g.rows == 0 {
		return false
	}
	i, j := x/g.ld, x%g.ld
	return i < g.rows && j < g.col
}

type shape struct {
	tA, tB      bool
	m, n, k     int
	alpha, beta float32
	extra       int // added to every stride
}

func (s shape) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%g beta=%g extra=%d", s.tA, s.tB, s.m, s.n, s.k, s.alpha, s.beta, s.extra)
}

func shapes(rng *rand.Rand) []shape {
	// Sizes 0, 1, odd, and just around the kernel tiles and the blocks.
	dims := []int{0, 1, 2, 5, 6, 7, 11, 12, 13, 15, 16, 17, 31, 32, 33, 143, 145}
	random := 12
	if testing.Short() {
		random = 4
	}
	var out []shape
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for range random {
				out = append(out, shape{tA: tA, tB: tB,
					m: dims[rng.IntN(len(dims))], n: dims[rng.IntN(len(dims))], k: dims[rng.IntN(len(dims))],
					alpha: []float32{1, 0.7, -2}[rng.IntN(3)], beta: []float32{0, 1, -0.5}[rng.IntN(3)], extra: rng.IntN(3)})
			}
			// Deep and wide cases across KC, MC and NC boundaries.
			out = append(out,
				shape{tA: tA, tB: tB, m: 13, n: 35, k: KC + 1, alpha: 1, beta: 1, extra: 1},
				shape{tA: tA, tB: tB, m: MC + 7, n: 20, k: 2*KC + 3, alpha: 1, beta: 0},
				shape{tA: tA, tB: tB, m: 7, n: NC + 17, k: 9, alpha: 0.5, beta: 2},
				shape{tA: tA, tB: tB, m: 0, n: 3, k: 4, alpha: 1, beta: 1},
				shape{tA: tA, tB: tB, m: 3, n: 4, k: 0, alpha: 1, beta: 0.5},
				shape{tA: tA, tB: tB, m: 9, n: 17, k: 5, alpha: 0, beta: 0},
			)
		}
	}
	return out
}

// runCase multiplies one random instance with kernel kr and the given
// workers, checks it against ref with NaN guards around every operand,
// and returns C's buffer.
func runCase(t *testing.T, rng *rand.Rand, s shape, kr *kernel, workers int) []float32 {
	t.Helper()
	ar, ac := s.m, s.k
	if s.tA {
		ar, ac = ac, ar
	}
	br, bc := s.k, s.n
	if s.tB {
		br, bc = bc, br
	}
	a := newGuarded(rng, ar, ac, max(ac, 1)+s.extra)
	b := newGuarded(rng, br, bc, max(bc, 1)+s.extra)
	c := newGuarded(rng, s.m, s.n, max(s.n, 1)+s.extra)
	if s.beta == 0 {
		// C must not be read: poison it.
		for i := range c.buf {
			c.buf[i] = float32(math.NaN())
		}
	}
	want, mag := ref(s.tA, s.tB, s.m, s.n, s.k, s.alpha, a.data(), a.ld, b.data(), b.ld, s.beta, c.data(), c.ld)
	p := problem{tA: s.tA, tB: s.tB, m: s.m, n: s.n, k: s.k, alpha: s.alpha, a: a.data(), lda: a.ld, b: b.data(), ldb: b.ld, beta: s.beta, c: c.data(), ldc: c.ld}
	p.run(kr, workers)
	for x, v := range c.buf {
		if !c.inside(x) {
			if !math.IsNaN(float64(v)) {
				t.Fatalf("%s %s: wrote %g outside C at buffer index %d", kr.name, s, v, x)
			}
			continue
		}
		i, j := (x-c.pad)/c.ld, (x-c.pad)%c.ld
		w := want[i*s.n+j]
		tol := 4*float64(s.k+2)*0x1p-24*mag[i*s.n+j] + 1e-30
		if d := math.Abs(float64(v) - w); !(d <= tol) {
			t.Fatalf("%s %s: C[%d,%d] = %g, want %g (tolerance %g)", kr.name, s, i, j, v, w, tol)
		}
	}
	for _, g := range []*guarded{a, b} {
		for x, v := range g.buf {
			if !g.inside(x) && !math.IsNaN(float64(v)) {
				t.Fatalf("%s %s: operand guard overwritten at %d", kr.name, s, x)
			}
		}
	}
	return c.buf
}

func TestAgainstReference(t *testing.T) {
	for _, kr := range available {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, s := range shapes(rng) {
			runCase(t, rng, s, kr, 1)
		}
	}
}

// TestWorkersSameBits checks that the result does not depend on the number
// of workers or on GOMAXPROCS (each run reseeds, so inputs are equal).
func TestWorkersSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cases := []shape{
		{m: 64, n: 1000, k: 300, alpha: 1, beta: 0},
		{tA: true, m: 300, n: 257, k: 600, alpha: 1, beta: 1, extra: 3},
		{tB: true, m: 70, n: 577, k: 1100, alpha: 0.5, beta: -1},
		{tA: true, tB: true, m: 512, n: 13, k: 40, alpha: 1, beta: 0.25},
	}
	for _, kr := range available {
		for _, s := range cases {
			var first []float32
			procList, workerList := []int{1, 2, 5}, []int{1, 2, 3, 8}
			if testing.Short() {
				procList, workerList = []int{1, 4}, []int{1, 3}
			}
			for _, procs := range procList {
				runtime.GOMAXPROCS(procs)
				for _, w := range workerList {
					got := runCase(t, rand.New(rand.NewPCG(7, 7)), s, kr, w)
					if first == nil {
						first = got
						continue
					}
					for x := range got {
						if math.Float32bits(got[x]) != math.Float32bits(first[x]) {
							t.Fatalf("%s %s: GOMAXPROCS=%d workers=%d differs from one worker at %d", kr.name, s, procs, w, x)
						}
					}
				}
			}
		}
	}
}

// TestAssemblyKernelsAgree checks that the assembly kernels (all but the
// portable one) give the same bits, as the package doc promises, over
// shapes whose rows are and are not multiples of each kernel's MR, deeper
// than one KC block, with and without beta. It needs a CPU with two of
// them (AVX-512F and AVX2+FMA).
func TestAssemblyKernelsAgree(t *testing.T) {
	asm := available[1:]
	if len(asm) < 2 {
		t.Skipf("skipped: this CPU runs %d assembly kernel(s); the check needs AVX-512F and AVX2+FMA", len(asm))
	}
	for i, s := range []shape{
		{tA: true, m: 150, n: 300, k: 700, alpha: 0.5, beta: 1, extra: 1},
		{m: 16, n: 3136, k: 144, alpha: 1, beta: 0},
		{tB: true, m: 24, n: 144, k: 3136, alpha: 1, beta: 1},
		{m: 64, n: 77, k: 576, alpha: -1, beta: 0.5, extra: 2},
		{tA: true, tB: true, m: 13, n: 33, k: KC + 3, alpha: 2, beta: 0},
	} {
		first := runCase(t, rand.New(rand.NewPCG(3, uint64(i))), s, asm[0], 1)
		for _, kr := range asm[1:] {
			got := runCase(t, rand.New(rand.NewPCG(3, uint64(i))), s, kr, 2)
			for x := range got {
				if math.Float32bits(got[x]) != math.Float32bits(first[x]) {
					t.Fatalf("%s: %s and %s differ at %d", s, asm[0].name, kr.name, x)
				}
			}
		}
	}
}

// TestKernelFor checks the choice among several active kernels against
// hand-computed paddings: the fewest padded rows, the first on a tie.
func TestKernelFor(t *testing.T) {
	defer func(a []*kernel) { active = a }(active)
	k12 := &kernel{name: "12", mr: 12, nr: 32}
	k8 := &kernel{name: "8", mr: 8, nr: 32}
	active = []*kernel{k12, k8}
	for _, tt := range []struct {
		m    int
		want *kernel
	}{
		{1, k8},    // 12 vs 8 rows
		{12, k12},  // 12 vs 16
		{16, k8},   // 24 vs 16
		{24, k12},  // tie at 24
		{64, k8},   // 72 vs 64
		{100, k8},  // 108 vs 104
		{144, k12}, // tie at 144 (MC)
	} {
		if got := kernelFor(tt.m); got != tt.want {
			t.Errorf("kernelFor(%d) = %s, want %s", tt.m, got.name, tt.want.name)
		}
	}
}

func TestHandComputed(t *testing.T) {
	// [1 2 3; 4 5 6] · [1 0; 0 1; 1 1] = [4 5; 10 11]; then 2·that - C.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 0, 1, 1, 1}
	c := []float32{1, 1, 1, 1}
	for _, w := range []int{1, 4} {
		cc := append([]float32(nil), c...)
		ParallelSgemm(w, false, false, 2, 2, 3, 2, a, 3, b, 2, -1, cc, 2)
		want := []float32{7, 9, 19, 21}
		for i := range want {
			if cc[i] != want[i] {
				t.Fatalf("workers=%d: got %v, want %v", w, cc, want)
			}
		}
	}
}

func TestPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"negative m", func() { Sgemm(false, false, -1, 1, 1, 1, nil, 1, nil, 1, 0, nil, 1) }},
		{"short A", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}},
		{"small ldc", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 4), 1)
		}},
		{"short transposed B", func() {
			Sgemm(false, true, 2, 3, 2, 1, make([]float32, 4), 2, make([]float32, 5), 2, 0, make([]float32, 6), 3)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			tt.f()
		})
	}
}

// TestPackedASameBits checks that products through PackedA give the bits
// of Sgemm (which the reference test checks) for every kernel's packing,
// including a reused PackedA that shrinks and grows.
func TestPackedASameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var pa PackedA
	for _, s := range []shape{
		{m: 13, n: 35, k: KC + 1, alpha: 1, beta: 1, extra: 1},
		{tA: true, m: MC + 7, n: 20, k: 2*KC + 3, alpha: 1, beta: 0},
		{tA: true, tB: true, m: 5, n: 70, k: 9, alpha: 0.5, beta: 2, extra: 2},
		{tB: true, m: 300, n: 257, k: 600, alpha: 1, beta: -1},
		{m: 0, n: 4, k: 3, alpha: 1, beta: 1},
	} {
		seed := rng.Uint64()
		want := runCase(t, rand.New(rand.NewPCG(seed, 0)), s, kernelFor(s.m), 1)
		// The same instance again, through PackedA.
		r := rand.New(rand.NewPCG(seed, 0))
		ar, ac := s.m, s.k
		if s.tA {
			ar, ac = ac, ar
		}
		br, bc := s.k, s.n
		if s.tB {
			br, bc = bc, br
		}
		a := newGuarded(r, ar, ac, max(ac, 1)+s.extra)
		b := newGuarded(r, br, bc, max(bc, 1)+s.extra)
		c := newGuarded(r, s.m, s.n, max(s.n, 1)+s.extra)
		if s.beta == 0 {
			for i := range c.buf {
				c.buf[i] = float32(math.NaN())
			}
		}
		pa.Pack(s.tA, s.m, s.k, a.data(), a.ld)
		pa.Mul(3, s.tB, s.n, s.alpha, b.data(), b.ld, s.beta, c.data(), c.ld)
		for x := range want {
			if math.Float32bits(c.buf[x]) != math.Float32bits(want[x]) {
				t.Fatalf("%s: PackedA gives %g at %d, Sgemm %g", s, c.buf[x], x, want[x])
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Mul before Pack did not panic")
		}
	}()
	var empty PackedA
	empty.Mul(1, false, 1, 1, []float32{1}, 1, 0, []float32{0}, 1)
}

// densePacker is a BPacker over a stored matrix, written element by
// element from the PackB contract (not through packB).
type densePacker struct {
	tB  bool
	b   []float32
	ldb int
}

func (d densePacker) PackB(dst []float32, nr, pc, kc, jc, nc int) {
	for x := range dst {
		s, rest := x/(nr*kc)*nr, x%(nr*kc)
		l, j := rest/nr, rest%nr
		if s+j >= nc {
			dst[x] = 0
			continue
		}
		if d.tB {
			dst[x] = d.b[(jc+s+j)*d.ldb+pc+l]
		} else {
			dst[x] = d.b[(pc+l)*d.ldb+jc+s+j]
		}
	}
}

// TestMulBSameBits checks that PackedA.MulB with B supplied by a BPacker
// gives the bits of Sgemm on the stored B, over the reference test's
// shapes and several worker counts, and never writes outside C.
func TestMulBSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	var pa PackedA
	for _, s := range shapes(rng) {
		for _, workers := range []int{1, 3} {
			seed := rng.Uint64()
			want := runCase(t, rand.New(rand.NewPCG(seed, 0)), s, kernelFor(s.m), 1)
			r := rand.New(rand.NewPCG(seed, 0))
			ar, ac := s.m, s.k
			if s.tA {
				ar, ac = ac, ar
			}
			br, bc := s.k, s.n
			if s.tB {
				br, bc = bc, br
			}
			a := newGuarded(r, ar, ac, max(ac, 1)+s.extra)
			b := newGuarded(r, br, bc, max(bc, 1)+s.extra)
			c := newGuarded(r, s.m, s.n, max(s.n, 1)+s.extra)
			if s.beta == 0 {
				for i := range c.buf {
					c.buf[i] = float32(math.NaN())
				}
			}
			pa.Pack(s.tA, s.m, s.k, a.data(), a.ld)
			pa.MulB(workers, s.n, s.alpha, densePacker{s.tB, b.data(), b.ld}, s.beta, c.data(), c.ld)
			for x := range want {
				if math.Float32bits(c.buf[x]) != math.Float32bits(want[x]) {
					t.Fatalf("%s workers=%d: MulB gives %g at %d, Sgemm %g", s, workers, c.buf[x], x, want[x])
				}
			}
		}
	}
}

// TestGathered checks Gathered.PackB (masked loads of column runs and
// assembly gathers where available, gathers alone, and the Go loop)
// against densePacker on the matrix its tables define, through MulB, bit
// for bit, for panels of full and partial slivers across KC and NC
// blocks: random column offsets (no runs) and a convolution's output
// positions in rows of 14, 7, 4 and 1 (runs of those lengths, some
// starting at offset 0 so that masked-off lanes address before X).
func TestGathered(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	gathers, runs := gatherAsm, runsAsm
	defer func() { gatherAsm, runsAsm = gathers, runs }()
	var pa PackedA
	type size struct{ m, k, n, ow int } // ow > 0: runs of ow columns
	for _, sz := range []size{{7, 9, 16, 0}, {13, KC + 5, 3*16 + 5, 0}, {6, 40, NC + 37, 0}, {1, 1, 1, 0},
		{16, 27, 196, 14}, {9, KC + 9, 3*49 + 3, 7}, {8, 30, 64 + 16, 4}, {5, 12, 96, 1}, {3, 20, 70, 20},
		{4, 11, 96, 3}, {6, 9, 64, 5}, {7, 10, 48, 2}} {
		x := make([]float32, 6000)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		rows := make([]int32, sz.k)
		for i := range rows {
			rows[i] = int32(rng.IntN(2500))
		}
		cols := make([]int32, sz.n)
		for i := range cols {
			cols[i] = int32(rng.IntN(2500))
			if sz.ow > 0 { // row i/ow of a plane 30 columns wide
				cols[i] = int32(i/sz.ow*30 + i%sz.ow)
			}
		}
		if sz.ow > 0 {
			rows[0] = 0 // the first run of the first row starts at X[0]
		}
		b := make([]float32, sz.k*sz.n) // the k×n matrix the tables define
		for l := range sz.k {
			for j := range sz.n {
				b[l*sz.n+j] = x[rows[l]+cols[j]]
			}
		}
		a := make([]float32, sz.m*sz.k)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		pa.Pack(false, sz.m, sz.k, a, sz.k)
		want := make([]float32, sz.m*sz.n)
		pa.MulB(2, sz.n, 1, densePacker{false, b, sz.n}, 0, want, sz.n)
		for _, mode := range []string{"runs+gathers", "gathers", "go"} {
			gatherAsm, runsAsm = gathers, runs
			switch mode {
			case "gathers":
				runsAsm = false
			case "go":
				gatherAsm, runsAsm = nil, false
			}
			got := make([]float32, sz.m*sz.n)
			pa.MulB(2, sz.n, 1, &Gathered{X: x, Rows: rows, Cols: cols}, 0, got, sz.n)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v %s: element %d = %g, want %g", sz, mode, i, got[i], want[i])
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("offsets past X did not panic")
		}
	}()
	g := &Gathered{X: make([]float32, 10), Rows: []int32{0, 5}, Cols: []int32{4, 5}}
	g.PackB(make([]float32, 2*16), 16, 0, 2, 0, 2)
}

// TestPackATranspose checks packA with the 8×8 transposes (transposeAsm:
// transpose6 for 6-row slivers, transpose8 for more) against its
// float-at-a-time loop, element by element, for the 6-, 8- and 12-row
// slivers, with edge slivers of fewer rows and depths that are and
// are not multiples of 8.
func TestPackATranspose(t *testing.T) {
	if !transposeAsm {
		t.Skip("no transpose8 on this CPU or build")
	}
	defer func() { transposeAsm = true }()
	rng := rand.New(rand.NewPCG(2, 8))
	for _, mr := range []int{6, 8, 12} {
		for _, mc := range []int{6, 8, 12, 13, 16, 20, 7} {
			for _, kc := range []int{1, 7, 8, 9, 17, 64, 255, 256} {
				lda := kc + 3
				a := make([]float32, mc*lda)
				for i := range a {
					a[i] = float32(rng.NormFloat64())
				}
				p := problem{a: a, lda: lda}
				n := roundUp(mc, mr) * kc
				// Eight guard elements past the panel must stay -1.
				got, want := make([]float32, n+8), make([]float32, n+8)
				for i := range got {
					got[i], want[i] = -1, -1
				}
				transposeAsm = true
				p.packA(got[:n], mr, 0, mc, 0, kc)
				transposeAsm = false
				p.packA(want[:n], mr, 0, mc, 0, kc)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("mr=%d mc=%d kc=%d: packed element %d is %v, want %v", mr, mc, kc, i, got[i], want[i])
					}
				}
				// And the loop itself against the layout's definition.
				for s := 0; s < mc; s += mr {
					for l := range kc {
						for r := range mr {
							v := float32(0)
							if s+r < mc {
								v = a[(s+r)*lda+l]
							}
							if got := want[s*kc+l*mr+r]; got != v {
								t.Fatalf("mr=%d mc=%d kc=%d: element (%d, %d) is %v, want %v", mr, mc, kc, s+r, l, got, v)
							}
						}
					}
				}
			}
		}
	}
}

// TestPackBAsm checks packB with its assembly (packRows for a row-major
// B, transpose8 for a transposed one) against the element-by-element
// definition of the panel layout (densePacker), for the 16- and 32-column
// slivers, with partial last slivers, depths that are and are not
// multiples of 8 and blocks that do not start at the origin, and against
// its own float-at-a-time loop (the assembly switched off).
func TestPackBAsm(t *testing.T) {
	if !rowsAsm || !transposeAsm {
		t.Skip("no packRows or transpose8 on this CPU or build")
	}
	defer func() { rowsAsm, transposeAsm = true, true }()
	rng := rand.New(rand.NewPCG(4, 4))
	for _, tB := range []bool{false, true} {
		for _, nr := range []int{16, 32} {
			for _, nc := range []int{1, 7, 8, 15, 16, 17, 40, 64, 100} {
				for _, kc := range []int{1, 7, 8, 9, 17, 255, 256} {
					const pc, jc = 3, 5
					k, n := pc+kc+2, jc+nc+1
					br, bc := k, n
					if tB {
						br, bc = n, k
					}
					ldb := bc + 3
					b := make([]float32, br*ldb)
					for i := range b {
						b[i] = float32(rng.NormFloat64())
					}
					size := roundUp(nc, nr) * kc
					want := make([]float32, size)
					densePacker{tB, b, ldb}.PackB(want, nr, pc, kc, jc, nc)
					p := problem{tB: tB, b: b, ldb: ldb}
					for _, asm := range []bool{true, false} {
						rowsAsm, transposeAsm = asm, asm
						got := make([]float32, size)
						for i := range got {
							got[i] = -1 // every element must be written
						}
						p.packB(got, nr, pc, kc, jc, nc)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("tB=%v nr=%d nc=%d kc=%d asm=%v: packed element %d is %v, want %v", tB, nr, nc, kc, asm, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestEdgeKernels checks each edge kernel (the first rows of a tile)
// against its full kernel on a scratch tile, bit for bit, with beta 0 (C
// poisoned with NaN, which must not leak) and beta ≠ 0, and that it
// writes neither the rows past its own nor the columns between C's rows.
func TestEdgeKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	tested := 0
	for _, kr := range available {
		for rows, fn := range kr.edge {
			if fn == nil {
				continue
			}
			tested++
			for _, kc := range []int{0, 1, 5, KC} {
				for _, beta := range []float32{0, 1, -0.5} {
					a := make([]float32, kr.mr*kc)
					b := make([]float32, kr.nr*kc)
					for i := range a {
						a[i] = float32(rng.NormFloat64())
					}
					for i := range b {
						b[i] = float32(rng.NormFloat64())
					}
					ldc := kr.nr + 3
					c0 := make([]float32, kr.mr*ldc)
					for i := range c0 {
						c0[i] = float32(rng.NormFloat64())
						if beta == 0 {
							c0[i] = float32(math.NaN())
						}
					}
					want := append([]float32(nil), c0...)
					got := append([]float32(nil), c0...)
					var ap, bp *float32
					if kc > 0 {
						ap, bp = &a[0], &b[0]
					}
					kr.fn(kc, ap, bp, &want[0], ldc, 0.75, beta)
					fn(kc, ap, bp, &got[0], ldc, 0.75, beta)
					for x := range got {
						i, j := x/ldc, x%ldc
						w := want[x]
						if i >= rows || j >= kr.nr {
							w = c0[x] // untouched
						}
						if math.Float32bits(got[x]) != math.Float32bits(w) {
							t.Fatalf("%s rows=%d kc=%d beta=%g: C[%d,%d] = %g, want %g", kr.name, rows, kc, beta, i, j, got[x], w)
						}
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no edge kernels on this CPU or build")
	}
}

// TestPackARows checks packA of a transposed A with packRows (rowsAsm)
// against the layout's definition, for every kernel's sliver height,
// with a partial last sliver, several depths, a block away from the
// origin and guards past the panel, with the assembly on and off.
func TestPackARows(t *testing.T) {
	if !rowsAsm {
		t.Skip("no packRows on this CPU or build")
	}
	defer func() { rowsAsm = true }()
	rng := rand.New(rand.NewPCG(6, 6))
	for _, mr := range []int{6, 8, 12} {
		for _, mc := range []int{1, 5, 6, 8, 12, 13, 30, 144} {
			for _, kc := range []int{1, 7, 8, 9, 256} {
				const ic, pc = 2, 3
				lda := ic + mc + 5
				a := make([]float32, (pc+kc+1)*lda) // A is k×m: op(A)(i, l) = a[l*lda+i]
				for i := range a {
					a[i] = float32(rng.NormFloat64())
				}
				p := problem{tA: true, a: a, lda: lda}
				n := roundUp(mc, mr) * kc
				for _, asm := range []bool{true, false} {
					rowsAsm = asm
					got := make([]float32, n+8)
					for i := range got {
						got[i] = -1
					}
					p.packA(got[:n], mr, ic, mc, pc, kc)
					for x, v := range got {
						want := float32(-1) // the guards
						if x < n {
							s, rest := x/(mr*kc)*mr, x%(mr*kc)
							l, r := rest/mr, rest%mr
							want = 0
							if s+r < mc {
								want = a[(pc+l)*lda+ic+s+r]
							}
						}
						if math.Float32bits(v) != math.Float32bits(want) {
							t.Fatalf("mr=%d mc=%d kc=%d asm=%v: packed element %d is %v, want %v", mr, mc, kc, asm, x, v, want)
						}
					}
				}
			}
		}
	}
}

// TestBounds checks bounds (with bounds32AVX2 where the CPU has AVX2)
// against a plain scan, on every length up to 41 and values of both
// signs, extremes at every position included.
func TestBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for n := 1; n <= 41; n++ {
		for trial := range 20 {
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(rng.Uint32())
				if trial%2 == 0 {
					s[i] %= 1000
				}
			}
			if trial < n {
				s[trial] = math.MaxInt32 // the extreme at every position in turn
				s[n-1-trial] = math.MinInt32
			}
			lo, hi := int64(s[0]), int64(s[0])
			for _, v := range s {
				lo, hi = min(lo, int64(v)), max(hi, int64(v))
			}
			if gl, gh := bounds(s); gl != lo || gh != hi {
				t.Fatalf("bounds(%v) = %d, %d, want %d, %d (asm %v)", s, gl, gh, lo, hi, boundsAsm != nil)
			}
		}
	}
}

// TestGatheredPackB checks the panels Gathered.PackB writes, element by
// element and the zero columns past the last one included, with the
// masked-load runs and the gathers against the float-at-a-time loop, into
// panels full of NaN: partial slivers of every width, runs of 14, 7, 4, 3
// and 1 columns and scattered offsets (more runs than masked loads).
func TestGatheredPackB(t *testing.T) {
	gathers, runs := gatherAsm, runsAsm
	defer func() { gatherAsm, runsAsm = gathers, runs }()
	rng := rand.New(rand.NewPCG(5, 8))
	x := make([]float32, 4000)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	rows := []int32{0, 1, 2, 31, 32, 33, 62, 63, 64, 900}
	for _, ow := range []int{14, 7, 4, 3, 1, 0} {
		for nc := 1; nc <= 70; nc++ {
			cols := make([]int32, nc)
			for i := range cols {
				cols[i] = int32(i/max(ow, 1)*30 + i%max(ow, 1))
				if ow == 0 {
					cols[i] = int32(rng.IntN(2500))
				}
			}
			g := &Gathered{X: x, Rows: rows, Cols: cols}
			const nr = 32
			size := roundUp(nc, nr) * len(rows)
			pack := func(mode string) []float32 {
				gatherAsm, runsAsm = gathers, runs
				if mode == "go" {
					gatherAsm, runsAsm = nil, false
				}
				d := make([]float32, size)
				for i := range d {
					d[i] = float32(math.NaN())
				}
				g.PackB(d, nr, 0, len(rows), 0, nc)
				return d
			}
			want := pack("go")
			got := pack("asm")
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("ow %d, %d columns: element %d = %g, want %g", ow, nc, i, got[i], want[i])
				}
			}
		}
	}
}

// TestPackGathered checks that PackedA.PackGathered gives the pack that
// Pack gives for the gathered matrix stored row by row, the same floats
// in the same places (so the products' bits are those of Sgemm), for
// every kernel size the row count chooses, KC blocks cut anywhere, and a
// reused PackedA; and that offsets outside X panic.
func TestPackGathered(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	var got, want PackedA
	for _, sz := range []struct{ m, k int }{
		{13, KC + 1}, {256, 9 * 40}, {5, 9}, {300, 2*KC + 7}, {8, 1}, {0, 3}, {4, 0},
	} {
		// A flipped-convolution layout: A(c, f·9+t) = X[(f·m+c)·9 + 8-t],
		// with the column offsets shuffled so that no order is assumed.
		x := make([]float32, (sz.k+8)/9*9*sz.m+9)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		rows := make([]int32, sz.m)
		for c := range rows {
			rows[c] = int32(c * 9)
		}
		cols := make([]int32, sz.k)
		for l := range cols {
			cols[l] = int32((l/9)*sz.m*9 + 8 - l%9)
		}
		rng.Shuffle(len(cols), func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
		a := make([]float32, sz.m*sz.k)
		for i := range sz.m {
			for l := range sz.k {
				a[i*sz.k+l] = x[rows[i]+cols[l]]
			}
		}
		want.Pack(false, sz.m, sz.k, a, max(sz.k, 1))
		got.PackGathered(&Gathered{X: x, Rows: rows, Cols: cols})
		if got.kr != want.kr || got.m != want.m || got.k != want.k || got.mpad != want.mpad || len(got.data) != len(want.data) {
			t.Fatalf("%dx%d: PackGathered shape %s %d %d %d %d, Pack %s %d %d %d %d", sz.m, sz.k,
				got.kr.name, got.m, got.k, got.mpad, len(got.data), want.kr.name, want.m, want.k, want.mpad, len(want.data))
		}
		for i := range want.data {
			if math.Float32bits(got.data[i]) != math.Float32bits(want.data[i]) {
				t.Fatalf("%dx%d: PackGathered %g at %d, Pack %g", sz.m, sz.k, got.data[i], i, want.data[i])
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("offsets outside X did not panic")
		}
	}()
	got.PackGathered(&Gathered{X: make([]float32, 4), Rows: []int32{0, 2}, Cols: []int32{0, 2}})
}
