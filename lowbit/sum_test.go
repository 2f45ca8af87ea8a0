package lowbit

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSumCodecs checks each integer-sum format's registry kernels
// (EncodeCodes, SumCodes, DecodeSums, RefSumCodes) against the format's
// own Ref twins, called by name: the registry must route every format to
// its kernels and pass the side plane and scale through.
func TestSumCodecs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 36))
	for _, f := range Formats() {
		if !f.Sum() {
			continue
		}
		for _, n := range []int{1, 63, 64, 65, 200} {
			const w = 5
			g := make([][]float32, w)
			codes, exps := make([][]int8, w), make([][]int8, w)
			var m float32
			for k := range g {
				g[k] = make([]float32, n)
				for i := range g[k] {
					g[k][i] = float32(rng.NormFloat64()) * float32(1+i%7)
				}
				mk, _ := MaxAbs(g[k])
				m = max(m, mk)
			}
			scale := Int8Scale(m)
			for k := range g {
				codes[k], exps[k] = make([]int8, n), make([]int8, BFPBlocks(n))
				if err := f.EncodeCodes(codes[k], exps[k], g[k], scale); err != nil {
					t.Fatal(err)
				}
				var wantC, wantE []int8
				switch {
				case f.Scaled():
					wantC = RefEncodeInt8(g[k], scale)
				case f.BlockExponents():
					wantC, wantE = RefEncodeBFP8(g[k])
				}
				if !slices.Equal(codes[k], wantC) || (wantE != nil && !slices.Equal(exps[k], wantE)) {
					t.Fatalf("%v n=%d worker %d: EncodeCodes differs from its Ref twin", f, n, k)
				}
			}
			sums, se := make([]int16, n), make([]int8, BFPBlocks(n))
			f.SumCodes(sums, se, codes, exps)
			rs, re := f.RefSumCodes(codes, exps, n)
			if !slices.Equal(sums, rs) || (f.BlockExponents() && !slices.Equal(se, re)) || (!f.BlockExponents() && re != nil) {
				t.Fatalf("%v n=%d: SumCodes %v %v, RefSumCodes %v %v", f, n, sums, se, rs, re)
			}
			got := make([]float32, n)
			f.DecodeSums(got, sums, se, scale, w)
			var want []float32
			if f.Scaled() {
				want = RefDecodeInt8(rs, scale, w)
			} else {
				want = RefDecodeBFP8(rs, re, w)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%v n=%d: DecodeSums differs from its Ref twin", f, n)
			}
		}
	}
}

// TestSumKernelsOnlyForSumFormats: the sum methods of a vote format or FP32
// panic rather than run another format's kernel.
func TestSumKernelsOnlyForSumFormats(t *testing.T) {
	for _, f := range []Format{FP32, Binary, Ternary, Format(NumFormats)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v.SumCodes did not panic", f)
				}
			}()
			f.SumCodes(make([]int16, 1), nil, [][]int8{{1}}, nil)
		}()
	}
}

// TestFormatLabels: the labels are the spellings the paper and the
// reports use, and every valid format has a distinct one.
func TestFormatLabels(t *testing.T) {
	want := map[Format]string{FP32: "FP32", Binary: "G-Binary", Ternary: "G-Ternary", Int8: "INT8", BFP8: "BFP8"}
	seen := map[string]bool{}
	for _, f := range Formats() {
		l := f.Label()
		if w, ok := want[f]; ok && l != w {
			t.Errorf("%v.Label() = %q, want %q", f, l, w)
		}
		if l == "" || seen[l] {
			t.Errorf("%v: label %q empty or repeated", f, l)
		}
		seen[l] = true
	}
}
