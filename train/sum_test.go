package train

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/cxl"
	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// TestSumRulesAgainstReference checks the Int8 and BFP8 rules against the
// lowbit reference twins (other arithmetic), with the scale agreement done
// here by a plain loop, and against the closed-form error bound of each
// format: |u - mean| <= s/2 + float32 rounding for Int8 (each code is
// within s/2 of g/s), and <= 2^(E-7) for BFP8 (a mantissa's rounding and
// its alignment each cost at most half a unit of the block's scale).
func TestSumRulesAgainstReference(t *testing.T) {
	m := nn.NewMLP(rand.New(rand.NewPCG(4, 0)), 30, []int{17}, 6)
	const w = 5
	grads := randGrads(m, w, 7)
	for _, rule := range []string{"int8", "bfp8"} {
		p, err := ParsePolicy(rule)
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewAggregator(m, p, w, lowbit.WorkerMajor)
		if err != nil {
			t.Fatal(err)
		}
		dst := m.NewGrads()
		if err := a.Aggregate(grads, dst); err != nil {
			t.Fatal(err)
		}
		for i := range m.Params {
			want, bound := refSum(rule, grads, i)
			for j, v := range dst[i] {
				if v != want[j] {
					t.Fatalf("%s: parameter %d element %d = %v; reference %v", rule, i, j, v, want[j])
				}
				var mean float64
				for k := range w {
					mean += float64(grads[k][i][j])
				}
				mean /= w
				if d := math.Abs(float64(v) - mean); d > bound[j] {
					t.Fatalf("%s: parameter %d element %d = %v, mean %v: error %g above the bound %g", rule, i, j, v, mean, d, bound[j])
				}
			}
		}
	}
}

// refSum is the reference twin of the Int8 or BFP8 rule on parameter i:
// the scale agreement by a plain loop, then lowbit's Ref kernels; and the
// closed-form error bound of each element.
func refSum(rule string, grads [][][]float32, i int) (want []float32, bound []float64) {
	w, n := len(grads), len(grads[0][i])
	bound = make([]float64, n)
	switch rule {
	case "int8":
		var mx float64
		for k := range w {
			for _, v := range grads[k][i] {
				mx = math.Max(mx, math.Abs(float64(v)))
			}
		}
		scale := float32(mx) / 127
		codes := make([][]int8, w)
		for k := range w {
			codes[k] = lowbit.RefEncodeInt8(grads[k][i], scale)
		}
		want = lowbit.RefDecodeInt8(lowbit.RefSumInt8(codes), scale, w)
		for j := range bound {
			bound[j] = float64(scale)/2 + 1e-6*mx
		}
	case "bfp8":
		mant, exp := make([][]int8, w), make([][]int8, w)
		for k := range w {
			mant[k], exp[k] = lowbit.RefEncodeBFP8(grads[k][i])
		}
		sum, e := lowbit.RefSumBFP8(mant, exp, n)
		want = lowbit.RefDecodeBFP8(sum, e, w)
		for j := range bound {
			bound[j] = math.Ldexp(1, int(e[j/64])-7)
		}
	}
	return want, bound
}

// TestStepFormatCosines checks every format's cosine against a direct
// float64 computation from the reference aggregates: FP32 is 1, G-Binary
// and G-Ternary are StepCosines', Int8 and BFP8 those of refSum.
func TestStepFormatCosines(t *testing.T) {
	m := nn.NewMLP(rand.New(rand.NewPCG(4, 0)), 30, []int{17}, 6)
	const w = 6
	grads := randGrads(m, w, 9)
	got, err := StepFormatCosines(m, grads)
	if err != nil {
		t.Fatal(err)
	}
	bin, ter := StepCosines(m, grads)
	if got[lowbit.Binary] != bin || got[lowbit.Ternary] != ter {
		t.Errorf("vote cosines %+v %+v; want StepCosines' %+v %+v", got[lowbit.Binary], got[lowbit.Ternary], bin, ter)
	}
	for _, f := range []lowbit.Format{lowbit.FP32, lowbit.Int8, lowbit.BFP8} {
		var dot, nu, nm [nn.NumGroups]float64
		for i, prm := range m.Params {
			var u []float32
			if f != lowbit.FP32 {
				u, _ = refSum(f.String(), grads, i)
			}
			for j := range grads[0][i] {
				var mean float32
				for k := range w {
					mean += grads[k][i][j]
				}
				mean *= 1 / float32(w)
				x := float64(mean)
				if u != nil {
					x = float64(u[j])
				}
				dot[prm.Group] += x * float64(mean)
				nu[prm.Group] += x * x
				nm[prm.Group] += float64(mean) * float64(mean)
			}
		}
		for g := range nn.NumGroups {
			want := dot[g] / math.Sqrt(nu[g]*nm[g])
			if d := math.Abs(got[f].Groups[g] - want); d > 1e-9 {
				t.Errorf("%v group %d cosine %v; want %v", f, g, got[f].Groups[g], want)
			}
		}
		if f == lowbit.FP32 && math.Abs(got[f].Global-1) > 1e-12 {
			t.Errorf("FP32 global cosine %v; want 1", got[f].Global)
		}
		if f != lowbit.FP32 && !(got[f].Global > 0.99 && got[f].Global < 1) {
			t.Errorf("%v global cosine %v; want just below 1 for 8-bit codes", f, got[f].Global)
		}
	}
	grads[1][0][3] = float32(math.NaN())
	if _, err := StepFormatCosines(m, grads); err == nil {
		t.Error("NaN gradient accepted")
	}
}

// TestInt8HandComputed is a case small enough to do by hand: 4 workers,
// tensor fc1.weight of tinyModel with handVals; the agreed max is 5
// (worker 1 of row 4), s = 5/127. Row 5 (all 3s): 3/s = 76.2 -> 76 per
// worker, sum 304, mean 304 * s / 4 = 2.992125...; row 3 (zeros): 0.
func TestInt8HandComputed(t *testing.T) {
	m := tinyModel()
	grads := handGrads(m, 4)
	a, err := NewAggregator(m, Uniform(RuleSpec{Rule: FormatRule(lowbit.Int8)}), 4, lowbit.WorkerMajor)
	if err != nil {
		t.Fatal(err)
	}
	dst := m.NewGrads()
	if err := a.Aggregate(grads, dst); err != nil {
		t.Fatal(err)
	}
	s := float64(float32(5) / 127)
	for _, c := range []struct {
		j    int
		want float32
	}{{5, float32(304 * s / 4)}, {3, 0}} {
		if got := dst[0][c.j]; got != c.want {
			t.Errorf("fc1.weight[%d] = %v; want %v", c.j, got, c.want)
		}
	}
}

func TestSumRulesNonFinite(t *testing.T) {
	m := tinyModel()
	for _, rule := range []Rule{FormatRule(lowbit.Int8), FormatRule(lowbit.BFP8)} {
		grads := handGrads(m, 4)
		grads[2][1][0] = float32(math.Inf(1))
		a, err := NewAggregator(m, Split(RuleSpec{Rule: FormatRule(lowbit.FP32)}, RuleSpec{Rule: rule}), 4, lowbit.WorkerMajor)
		if err != nil {
			t.Fatal(err)
		}
		// The Inf is in the backbone (fc1.bias), which trains FP32: fine.
		if err := a.Aggregate(grads, m.NewGrads()); err != nil {
			t.Errorf("%v head: Inf in an FP32 group rejected: %v", rule, err)
		}
		a, _ = NewAggregator(m, Uniform(RuleSpec{Rule: rule}), 4, lowbit.WorkerMajor)
		err = a.Aggregate(grads, m.NewGrads())
		if err == nil || !strings.Contains(err.Error(), "worker 2") || !strings.Contains(err.Error(), "fc1.bias") {
			t.Errorf("%v: Inf gradient: error %v; want one naming worker 2 and fc1.bias", rule, err)
		}
	}
}

func TestSumRulesPolicyAndTraffic(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Policy
		err  bool
	}{
		{in: "int8", want: Uniform(RuleSpec{Rule: FormatRule(lowbit.Int8)})},
		{in: "BFP", want: Uniform(RuleSpec{Rule: FormatRule(lowbit.BFP8)})},
		{in: "backbone=g-binary,head=fixed8@0.02", want: Split(RuleSpec{Rule: FormatRule(lowbit.Binary)}, RuleSpec{Rule: FormatRule(lowbit.Int8), LR: 0.02})},
		{in: "head=block-fp8,backbone=int-8", want: Split(RuleSpec{Rule: FormatRule(lowbit.Int8)}, RuleSpec{Rule: FormatRule(lowbit.BFP8)})},
		{in: "int8+ef", err: true},
		{in: "bfp8/margin:2", err: true},
		{in: "int16", err: true},
	} {
		got, err := ParsePolicy(tt.in)
		if (err != nil) != tt.err || (err == nil && got != tt.want) {
			t.Errorf("ParsePolicy(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
	if FormatRule(lowbit.Int8).Sign() || FormatRule(lowbit.BFP8).Sign() || !FormatRule(lowbit.Int8).Sum() || FormatRule(lowbit.Binary).Sum() {
		t.Error("Int8 and BFP8 decode to a mean: not sign rules, but summed ones")
	}
	if !FormatRule(lowbit.Int8).ViaController() || FormatRule(lowbit.Int8).Mode() != cxl.Aggregate(lowbit.Int8) || !FormatRule(lowbit.BFP8).ViaController() || FormatRule(lowbit.BFP8).Mode() != cxl.Aggregate(lowbit.BFP8) {
		t.Errorf("Int8 mode %v, BFP8 mode %v: want the controller's sum modes", FormatRule(lowbit.Int8).Mode(), FormatRule(lowbit.BFP8).Mode())
	}
	m := tinyModel() // backbone 6+2 elements in 2 tensors, head 4+2 in 2
	tr := PolicyTraffic(m, Split(RuleSpec{Rule: FormatRule(lowbit.BFP8)}, RuleSpec{Rule: FormatRule(lowbit.Int8)}))
	wantBits := 8*8.125 + 6*8.0
	if tr.Paper.Bits != wantBits || tr.Stored.Bits != wantBits || tr.Paper.Ratio != wantBits/(14*32) {
		t.Errorf("traffic %+v; want %v bits", tr, wantBits)
	}
	if tr.ScaleBits != 2*32 {
		t.Errorf("scale agreement %v bits; want 64 (two head tensors, one float32 each)", tr.ScaleBits)
	}
	if got := ScaleAgreementBits(m, Uniform(RuleSpec{Rule: FormatRule(lowbit.Int8)})); got != (PerGroup[float64]{64, 64}) {
		t.Errorf("ScaleAgreementBits = %v; want 64 per group", got)
	}
	if tr := PolicyTraffic(m, Uniform(RuleSpec{Rule: FormatRule(lowbit.Binary)})); tr.ScaleBits != 0 {
		t.Errorf("G-Binary sends no scales: %v", tr.ScaleBits)
	}
	if got := Split(RuleSpec{Rule: FormatRule(lowbit.Binary)}, RuleSpec{Rule: FormatRule(lowbit.Int8)}).Label(); got != "G-Binary backbone + INT8 head" {
		t.Errorf("label %q", got)
	}
}

// TestRunFormatDiagnostics: a run with DiagFormats records every format's
// cosines, its G-Binary and G-Ternary ones equal to the paper's pair, and
// the JSON round-trips; without it the record has no "formats" key.
func TestRunFormatDiagnostics(t *testing.T) {
	cfg := baseConfig()
	cfg.Epochs, cfg.DiagEpochs, cfg.DiagFormats = 2, []int{2}, true
	cfg.Policy = Split(RuleSpec{Rule: FormatRule(lowbit.Binary)}, RuleSpec{Rule: FormatRule(lowbit.Int8)})
	r, err := Run(context.Background(), cfg, synthSets(256, 1))
	if err != nil {
		t.Fatal(err)
	}
	d := r.Diags[0]
	if d.Formats == nil {
		t.Fatal("no format diagnostics")
	}
	for _, pair := range [][2]Cosines{{d.Formats[lowbit.Binary], d.Binary}, {d.Formats[lowbit.Ternary], d.Ternary}} {
		for g := range nn.NumGroups {
			if math.Abs(pair[0].Groups[g]-pair[1].Groups[g]) > 1e-12 {
				t.Errorf("format cosines %+v differ from the paper pair %+v", pair[0], pair[1])
			}
		}
	}
	if c := d.Formats[lowbit.Int8].Groups[nn.Head]; !(c > 0.9 && c <= 1) {
		t.Errorf("int8 head cosine %v", c)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Diag
	if err := json.Unmarshal(b, &back); err != nil || back.Formats == nil || *back.Formats != *d.Formats {
		t.Errorf("round trip of %s: %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"int9":{}}`), new(FormatCosines)); err == nil {
		t.Error("unknown format accepted")
	}
	cfg.DiagFormats = false
	r2, err := Run(context.Background(), cfg, synthSets(256, 1))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(r2.Diags[0]); strings.Contains(string(b), "formats") {
		t.Errorf("paper diagnostics carry format cosines: %s", b)
	}
	// Measuring every format changes nothing the run trains or records.
	r.Diags[0].Formats = nil
	b1, _ := json.Marshal(r)
	b2, _ := json.Marshal(r2)
	if string(b1) != string(b2) {
		t.Error("DiagFormats changed the run")
	}
}

func FuzzFormatCosinesJSON(f *testing.F) {
	f.Add([]byte(`{"fp32":{"global":1,"backbone":1,"head":1},"int8":{"global":0.5}}`))
	f.Add([]byte(`{"bfp8":{"head":-1}}`))
	f.Add([]byte(`{"int9":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fc FormatCosines
		if err := json.Unmarshal(b, &fc); err != nil {
			return
		}
		out, err := json.Marshal(fc)
		if err != nil {
			return // a NaN cannot come from JSON; an Inf from a huge literal cannot be written back
		}
		var back FormatCosines
		if err := json.Unmarshal(out, &back); err != nil || back != fc {
			t.Fatalf("round trip of %s: %s, %v", b, out, err)
		}
	})
}

// TestSumRulesThroughController: Int8 and BFP8 groups mixed with G-Binary
// groups aggregate through the controller model (their transactions are
// counted there) and give bit for bit the lowbit reference arithmetic of
// refSum, and the G-Binary groups the majority vote of a plain loop, for
// W = 1, 3, 8 (and 16 where no group needs an element-major packet),
// both layouts of the sign-plane regions (the sum regions are
// worker-major whatever the layout) and tensors of 510, 17, 102 and 6
// elements, none a multiple of 64.
func TestSumRulesThroughController(t *testing.T) {
	m := nn.NewMLP(rand.New(rand.NewPCG(4, 0)), 30, []int{17}, 6)
	for _, pol := range []string{"backbone=int8,head=g-binary", "backbone=g-binary,head=bfp8", "backbone=bfp8,head=int8", "int8", "bfp8"} {
		p, err := ParsePolicy(pol)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 3, 8, 16} {
			for _, layout := range []lowbit.Layout{lowbit.WorkerMajor, lowbit.ElementMajor} {
				if w > lowbit.MaxPacketWorkers && layout == lowbit.ElementMajor && p.packets() {
					continue // sign packets carry at most 8 workers
				}
				a, err := NewAggregator(m, p, w, layout)
				if err != nil {
					t.Fatalf("%s W=%d %v: %v", pol, w, layout, err)
				}
				for step := range 2 {
					grads := randGrads(m, w, uint64(10*w+step))
					dst := m.NewGrads()
					t0 := a.ControllerTransactions()
					if err := a.Aggregate(grads, dst); err != nil {
						t.Fatal(err)
					}
					if a.ControllerTransactions() == t0 {
						t.Fatalf("%s W=%d %v: no controller transactions", pol, w, layout)
					}
					for i, prm := range m.Params {
						var want []float32
						switch r := p[prm.Group].Rule; r {
						case FormatRule(lowbit.Int8), FormatRule(lowbit.BFP8):
							want, _ = refSum(r.String(), grads, i)
						case FormatRule(lowbit.Binary):
							want = make([]float32, prm.Len())
							for j := range want {
								c := 0
								for k := range w {
									if grads[k][i][j] > 0 {
										c++
									}
								}
								want[j] = float32(lowbit.RefSign(2*c - w))
							}
						}
						for j, v := range dst[i] {
							if math.Float32bits(v) != math.Float32bits(want[j]) {
								t.Fatalf("%s W=%d %v step %d: %s[%d] = %v; reference %v", pol, w, layout, step, prm.Name, j, v, want[j])
							}
						}
					}
				}
			}
		}
	}
}
