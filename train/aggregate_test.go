package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// tinyModel is an MLP 3-2-2: fc1.weight (6), fc1.bias (2) in the backbone,
// fc2.weight (4), fc2.bias (2) in the head; 14 flattened elements.
func tinyModel() *nn.Model {
	return nn.NewMLP(rand.New(rand.NewPCG(1, 0)), 3, []int{2}, 2)
}

// handCase is the hand-computed table for W = 4 workers: element f of the
// flattened parameter vector gets worker values vals[f%6].
var handVals = [6][4]float32{
	{1, 2, 3, -1},            // c=3, a=+2: u=+1; mean 1.25
	{-1, -2, 0.5, 0},         // c=1, a=-2: u=-1; mean -0.625
	{1, -1, 2, -3},           // c=2, a=0: tie, u=0; mean -0.25
	{0, 0, 0, 0},             // zeros encode as non-positive: c=0, u=-1; mean 0
	{-0.25, 5, -0.25, -0.25}, // c=1: u=-1; mean 1.0625
	{3, 3, 3, 3},             // c=4, a=+4: u=+1; mean 3
}

var (
	handBin    = [6]float32{1, -1, 0, -1, -1, 1}
	handMean   = [6]float32{1.25, -0.625, -0.25, 0, 1.0625, 3}
	handSOM    = [6]float32{1, -1, -1, 0, 1, 1}
	handMargin = [6]float32{0, 0, 0, -1, 0, 1} // margin gate T=4 (|a| < 4 -> 0; all-zero votes a = -4)
)

func handGrads(m *nn.Model, w int) [][][]float32 {
	g := make([][][]float32, w)
	for k := range g {
		g[k] = m.NewGrads()
		f := 0
		for i := range g[k] {
			for j := range g[k][i] {
				g[k][i][j] = handVals[(f+j)%6][k]
			}
			f += len(g[k][i])
		}
	}
	return g
}

func TestRulesHandComputed(t *testing.T) {
	m := tinyModel()
	grads := handGrads(m, 4)
	want := func(rule string, f int) float32 {
		switch rule {
		case "fp32":
			return handMean[f%6]
		case "g-binary", "majority-sign":
			return handBin[f%6]
		case "g-ternary":
			if f%3 == 2 {
				return 0
			}
			return handBin[f%6]
		case "g-ternary/margin:4":
			return handMargin[f%6]
		case "sign-of-mean":
			return handSOM[f%6]
		}
		panic(rule)
	}
	for _, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		for _, rule := range []string{"fp32", "g-binary", "g-ternary", "g-ternary/margin:4", "majority-sign", "sign-of-mean"} {
			t.Run(layout.String()+"/"+rule, func(t *testing.T) {
				p, err := ParsePolicy(rule)
				if err != nil {
					t.Fatal(err)
				}
				a, err := NewAggregator(m, p, 4, layout)
				if err != nil {
					t.Fatal(err)
				}
				dst := m.NewGrads()
				if err := a.Aggregate(grads, dst); err != nil {
					t.Fatal(err)
				}
				f := 0
				for i := range dst {
					for j, got := range dst[i] {
						if w := want(rule, f+j); got != w {
							t.Errorf("%s: element %d = %v; want %v", m.Params[i].Name, f+j, got, w)
						}
					}
					f += len(dst[i])
				}
				if p.Cxl() && a.ControllerTransactions() == 0 {
					t.Error("controller rule issued no controller transactions")
				}
			})
		}
	}
}

// TestErrorFeedbackHand checks the EF residual on one worker and two
// steps of the 2-element head bias.
func TestErrorFeedbackHand(t *testing.T) {
	m := tinyModel()
	p, err := ParsePolicy("majority-sign+ef")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAggregator(m, p, 1, lowbit.WorkerMajor)
	if err != nil {
		t.Fatal(err)
	}
	bias := m.ParamIndex("fc2.bias")
	g := [][][]float32{m.NewGrads()}
	dst := m.NewGrads()
	// Step 1: p = g = (0.5, -1.5), s = 1, u = (+1, -1), e = (-0.5, -0.5).
	copy(g[0][bias], []float32{0.5, -1.5})
	if err := a.Aggregate(g, dst); err != nil {
		t.Fatal(err)
	}
	if dst[bias][0] != 1 || dst[bias][1] != -1 {
		t.Errorf("step 1 update %v; want [1 -1]", dst[bias])
	}
	if e := a.Residuals()[0][bias]; e[0] != -0.5 || e[1] != -0.5 {
		t.Errorf("step 1 residual %v; want [-0.5 -0.5]", e)
	}
	// Step 2: g = (0.2, 0.2), p = (-0.3, -0.3): the residual flips both signs.
	copy(g[0][bias], []float32{0.2, 0.2})
	if err := a.Aggregate(g, dst); err != nil {
		t.Fatal(err)
	}
	if dst[bias][0] != -1 || dst[bias][1] != -1 {
		t.Errorf("step 2 update %v; want [-1 -1]", dst[bias])
	}
	// s = 0.3: e = p + s = (0, 0) up to rounding.
	if e := a.Residuals()[0][bias]; math.Abs(float64(e[0])) > 1e-7 || math.Abs(float64(e[1])) > 1e-7 {
		t.Errorf("step 2 residual %v; want ~[0 0]", e)
	}
}

// randGrads returns w workers' gradients of m's shape, drawn from
// lowbit.EdgeGradient.
func randGrads(m *nn.Model, w int, seed uint64) [][][]float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	g := make([][][]float32, w)
	for k := range g {
		g[k] = m.NewGrads()
		for i := range g[k] {
			for j := range g[k][i] {
				g[k][i][j] = lowbit.EdgeGradient(r)
			}
		}
	}
	return g
}

// TestControllerEqualsMajority is the independent oracle: G-Binary through
// the controller equals MajoritySignSGD in software exactly, and G-Ternary
// equals it with the 2-of-3 positional mask, for both layouts.
func TestControllerEqualsMajority(t *testing.T) {
	m := nn.NewMLP(rand.New(rand.NewPCG(2, 0)), 37, []int{29, 13}, 11) // sizes off line boundaries
	for _, tc := range []struct {
		w      int
		layout lowbit.Layout
	}{{8, lowbit.ElementMajor}, {8, lowbit.WorkerMajor}, {3, lowbit.ElementMajor}, {5, lowbit.WorkerMajor}, {12, lowbit.WorkerMajor}} {
		grads := randGrads(m, tc.w, uint64(tc.w))
		run := func(policy string) [][]float32 {
			p, err := ParsePolicy(policy)
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewAggregator(m, p, tc.w, tc.layout)
			if err != nil {
				t.Fatal(err)
			}
			dst := m.NewGrads()
			if err := a.Aggregate(grads, dst); err != nil {
				t.Fatal(err)
			}
			return dst
		}
		maj, bin, ter := run("majority-sign"), run("g-binary"), run("g-ternary")
		f := 0
		for i := range maj {
			for j := range maj[i] {
				wantT := maj[i][j]
				if (f+j)%3 == 2 {
					wantT = 0
				}
				if bin[i][j] != maj[i][j] || ter[i][j] != wantT {
					t.Fatalf("W=%d %v %s[%d]: g-binary %v g-ternary %v; majority %v", tc.w, tc.layout, m.Params[i].Name, j, bin[i][j], ter[i][j], maj[i][j])
				}
			}
			// And against lowbit's reference oracle.
			gi := make([][]float32, tc.w)
			for k := range gi {
				gi[k] = grads[k][i]
			}
			ref := lowbit.RefAggregate(gi, lowbit.Spec{Workers: tc.w, Format: lowbit.Binary}, 0, f)
			for j := range ref {
				if float32(ref[j]) != bin[i][j] {
					t.Fatalf("W=%d %v %s[%d]: g-binary %v; RefAggregate %d", tc.w, tc.layout, m.Params[i].Name, j, bin[i][j], ref[j])
				}
			}
			f += len(maj[i])
		}
	}
}

// TestWorkerGate checks the worker-gate extension against a direct
// computation: worker k votes on element j only when |g| > tau_k·mean|g_k|.
func TestWorkerGate(t *testing.T) {
	m := nn.NewMLP(rand.New(rand.NewPCG(3, 0)), 20, []int{9}, 4)
	const w = 8
	grads := randGrads(m, w, 11)
	for _, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		p, err := ParsePolicy("g-ternary/worker:0.8")
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewAggregator(m, p, w, layout)
		if err != nil {
			t.Fatal(err)
		}
		dst := m.NewGrads()
		if err := a.Aggregate(grads, dst); err != nil {
			t.Fatal(err)
		}
		for i := range dst {
			taus := make([]float64, w)
			for k := range taus {
				var s float64
				for _, v := range grads[k][i] {
					s += math.Abs(float64(v))
				}
				taus[k] = float64(float32(0.8 * s / float64(len(grads[k][i]))))
			}
			for j := range dst[i] {
				a := 0
				for k := 0; k < w; k++ {
					v := grads[k][i][j]
					if math.Abs(float64(v)) > taus[k] {
						if v > 0 {
							a++
						} else {
							a--
						}
					}
				}
				if want := float32(lowbit.RefSign(a)); dst[i][j] != want {
					t.Fatalf("%v %s[%d] = %v; want %v", layout, m.Params[i].Name, j, dst[i][j], want)
				}
			}
		}
	}
}

func TestNonFiniteGradient(t *testing.T) {
	m := tinyModel()
	grads := handGrads(m, 4)
	grads[2][1][0] = float32(math.NaN())
	for _, policy := range []string{"g-binary", "majority-sign", "sign-of-mean", "g-ternary+ef"} {
		p, _ := ParsePolicy(policy)
		a, err := NewAggregator(m, p, 4, lowbit.WorkerMajor)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Aggregate(grads, m.NewGrads()); err == nil {
			t.Errorf("%s: NaN gradient accepted", policy)
		}
	}
}

func TestStepCosinesDirect(t *testing.T) {
	m := nn.NewMLP(rand.New(rand.NewPCG(4, 0)), 30, []int{17}, 6)
	const w = 8
	grads := randGrads(m, w, 5)
	bin, ter := StepCosines(m, grads)
	// Direct computation: flat vectors, float64 throughout.
	var dots, nus, nms [2][2]float64 // [binary/ternary][group]
	f := 0
	for i, prm := range m.Params {
		for j := range grads[0][i] {
			var sum float32
			pos := 0
			for k := 0; k < w; k++ {
				sum += grads[k][i][j]
				if grads[k][i][j] > 0 {
					pos++
				}
			}
			mean := float64(sum * (1 / float32(w)))
			u := float64(lowbit.RefSign(2*pos - w))
			for v, uu := range []float64{u, u * float64(btoi((f+j)%3 != 2))} {
				dots[v][prm.Group] += uu * mean
				nus[v][prm.Group] += uu * uu
				nms[v][prm.Group] += mean * mean
			}
		}
		f += prm.Len()
	}
	for v, got := range []Cosines{bin, ter} {
		want := Cosines{
			Global: (dots[v][0] + dots[v][1]) / math.Sqrt((nus[v][0]+nus[v][1])*(nms[v][0]+nms[v][1])),
			Groups: [nn.NumGroups]float64{dots[v][0] / math.Sqrt(nus[v][0]*nms[v][0]), dots[v][1] / math.Sqrt(nus[v][1]*nms[v][1])},
		}
		for _, pair := range [][2]float64{{got.Global, want.Global}, {got.Groups[nn.Backbone], want.Groups[nn.Backbone]}, {got.Groups[nn.Head], want.Groups[nn.Head]}} {
			if math.Abs(pair[0]-pair[1]) > 1e-9 {
				t.Errorf("variant %d: cosines %+v; want %+v", v, got, want)
				break
			}
		}
	}
	if !(bin.Global > 0.3 && ter.Global < bin.Global) {
		t.Errorf("implausible cosines binary %+v ternary %+v", bin, ter)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestPositive(t *testing.T) {
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN())} {
		want := int32(0)
		if v > 0 {
			want = 1
		}
		if got := positive(v); got != want {
			t.Errorf("positive(%v) = %d; want %d", v, got, want)
		}
	}
}

// TestMeanGradBits checks meanGrads against the reference loop (the sum
// in worker order, then the scale, as nn.MeanGrads forms it) bit for bit,
// for eight workers (the register path) and other counts (the chunked
// one), with lengths around the chunk size.
func TestMeanGradBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	lens := []int{1, 7, meanChunk - 1, meanChunk, 2*meanChunk + 3}
	for _, w := range []int{1, 3, 8} {
		grads := make([][][]float32, w)
		for k := range grads {
			grads[k] = make([][]float32, len(lens))
			for i, n := range lens {
				g := make([]float32, n)
				for j := range g {
					g[j] = float32(rng.NormFloat64() * math.Exp(4*rng.NormFloat64()))
				}
				grads[k][i] = g
			}
		}
		dst := make([][]float32, len(lens))
		for i, n := range lens {
			dst[i] = make([]float32, n)
		}
		meanGrads(dst, grads)
		inv := 1 / float32(w)
		for i, n := range lens {
			for j := range n {
				want := grads[0][i][j]
				for k := 1; k < w; k++ {
					want += grads[k][i][j]
				}
				want *= inv
				if math.Float32bits(dst[i][j]) != math.Float32bits(want) {
					t.Fatalf("W=%d param %d element %d: %g, reference %g", w, i, j, dst[i][j], want)
				}
			}
		}
	}
}

// TestMeanAfterPartialAggregate checks that Mean after an Aggregate that
// averaged only the head (backbone=g-binary,head=fp32) gives the mean of
// every parameter, and that the FP32 head's update is that mean.
func TestMeanAfterPartialAggregate(t *testing.T) {
	m := tinyModel()
	p, err := ParsePolicy("backbone=g-binary,head=fp32")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAggregator(m, p, 8, lowbit.WorkerMajor)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 2 {
		grads := randGrads(m, 8, uint64(step+1))
		dst := m.NewGrads()
		if err := a.Aggregate(grads, dst); err != nil {
			t.Fatal(err)
		}
		want := m.NewGrads()
		meanGrads(want, grads)
		got := a.Mean()
		for i, prm := range m.Params {
			for j := range want[i] {
				if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
					t.Fatalf("step %d %s[%d]: Mean %g, want %g", step, prm.Name, j, got[i][j], want[i][j])
				}
				if prm.Group == nn.Head && dst[i][j] != want[i][j] {
					t.Fatalf("step %d %s[%d]: update %g, want the mean %g", step, prm.Name, j, dst[i][j], want[i][j])
				}
			}
		}
	}
}
