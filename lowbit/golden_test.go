package lowbit

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files the Python package checks itself against, generated here from
// the format table and the kernels (go test ./lowbit -run Golden -update
// rewrites them; without -update the tests fail when they are stale, so CI
// keeps them current):
//
//   - testdata/fixed_golden.json: INT8 and BFP8 vectors (gradients, codes,
//     lane sums, decoded means, float32 values as bit patterns), which
//     python/tests/test_fixed.py replays through nfabric.fixed;
//   - ../python/nfabric/_formats.py: the format table (names, aliases,
//     numbering, family, bits per element, paper or extension), which the
//     Python package derives its format list from.
var update = flag.Bool("update", false, "rewrite the generated golden files")

const (
	fixedGoldenPath   = "testdata/fixed_golden.json"
	pythonFormatsPath = "../python/nfabric/_formats.py"
)

type fixedCase struct {
	Format  string     `json:"format"`
	Workers int        `json:"workers"`
	N       int        `json:"n"`
	Grads   [][]uint32 `json:"grads"` // float32 bits, [worker][element]
	// Int8: the agreed scale (float32 bits); BFP8: none.
	Scale uint32 `json:"scale,omitempty"`
	// Codes are the INT8 codes or BFP8 mantissas, [worker][element];
	// Exps the BFP8 block exponents, [worker][block].
	Codes [][]int8 `json:"codes"`
	Exps  [][]int8 `json:"exps,omitempty"`
	// Sum is the saturated lane sum; SumExp the BFP8 block maxima.
	Sum    []int16  `json:"sum"`
	SumExp []int8   `json:"sum_exp,omitempty"`
	Mean   []uint32 `json:"mean"` // float32 bits
}

// goldenGrads are w workers' gradients of n elements: randFixed's spread
// plus edge cases (-0, denormals, the largest finite values, exact halves).
func goldenGrads(r *rand.Rand, w, n int, edge bool) [][]float32 {
	g := randFixed(r, w, n)
	if !edge {
		return g
	}
	pool := []float32{float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1.1754942e-38,
		math.MaxFloat32, -math.MaxFloat32, 127, -127, 63.5, -0.5, 1.5, 2.5}
	for k := range g {
		for i := range g[k] {
			if r.IntN(3) == 0 {
				g[k][i] = pool[r.IntN(len(pool))]
			}
		}
	}
	return g
}

func bits32(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

func fixedGolden(t *testing.T) []byte {
	r := rand.New(rand.NewPCG(30, 8))
	var cases []fixedCase
	shapes := [][3]int{{1, 1, 0}, {2, 63, 1}, {3, 64, 0}, {4, 65, 1}, {8, 130, 1}, {2, 300, 0}, {13, 70, 1}}
	for _, f := range []Format{Int8, BFP8} {
		for _, sh := range shapes {
			g := goldenGrads(r, sh[0], sh[1], sh[2] == 1)
			cases = append(cases, fixedVector(t, f, g))
		}
		// Saturation: 259 workers at the largest code overflow int16.
		g := make([][]float32, 259)
		for k := range g {
			g[k] = []float32{0.99, -0.99, 0.5, 0.99, -0.99, 0, 0.99, 0.99}
		}
		cases = append(cases, fixedVector(t, f, g))
	}
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, c := range cases {
		e, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(e)
		if i < len(cases)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// fixedVector runs the kernels on g and records every stage.
func fixedVector(t *testing.T, f Format, g [][]float32) fixedCase {
	w, n := len(g), len(g[0])
	c := fixedCase{Format: f.String(), Workers: w, N: n, Codes: make([][]int8, w), Sum: make([]int16, n)}
	for _, gk := range g {
		c.Grads = append(c.Grads, bits32(gk))
	}
	mean := make([]float32, n)
	switch f {
	case Int8:
		var m float32
		for _, gk := range g {
			a, err := MaxAbs(gk)
			if err != nil {
				t.Fatal(err)
			}
			m = max(m, a)
		}
		s := Int8Scale(m)
		c.Scale = math.Float32bits(s)
		for k, gk := range g {
			c.Codes[k] = make([]int8, n)
			if err := EncodeInt8(c.Codes[k], gk, s); err != nil {
				t.Fatal(err)
			}
		}
		SumInt8(c.Sum, c.Codes)
		DecodeInt8(mean, c.Sum, s, w)
	case BFP8:
		c.Exps, c.SumExp = make([][]int8, w), make([]int8, BFPBlocks(n))
		for k, gk := range g {
			c.Codes[k], c.Exps[k] = make([]int8, n), make([]int8, BFPBlocks(n))
			if err := EncodeBFP8(c.Codes[k], c.Exps[k], gk); err != nil {
				t.Fatal(err)
			}
		}
		SumBFP8(c.Sum, c.SumExp, c.Codes, c.Exps)
		DecodeBFP8(mean, c.Sum, c.SumExp, w)
	}
	c.Mean = bits32(mean)
	return c
}

// pythonFormats writes the format table as a Python module.
func pythonFormats() []byte {
	var b bytes.Buffer
	b.WriteString(`"""The payload format table, generated from Go's lowbit.formatTraits.

Do not edit: go test ./lowbit -run Golden -update rewrites it, and the Go
tests fail when it is stale. Each entry is (number, name, aliases, family,
bits per element, paper): number as in Go and the payload header; family
"fp32" (the software collective), "vote" (G-Binary, G-Ternary: a sign vote)
or "sum" (INT8, BFP8: an integer lane sum decoded to the mean); bits per
element and worker under every accounting, None where the accounting
decides (G-Ternary: 1.58 by the paper's, 1 or 2 stored); paper: the paper
evaluates it.
"""

FORMATS = (
`)
	for f := range NumFormats {
		tr := formatTraits[f]
		family := "fp32"
		switch {
		case tr.vote:
			family = "vote"
		case tr.sum != nil:
			family = "sum"
		}
		al := make([]string, len(tr.aliases))
		for i, a := range tr.aliases {
			al[i] = fmt.Sprintf("%q", a)
		}
		aliases := "(" + strings.Join(al, ", ")
		if len(al) == 1 {
			aliases += ","
		}
		aliases += ")"
		bits := "None"
		if tr.bits != 0 {
			bits = fmt.Sprintf("%v", tr.bits)
			if !strings.ContainsAny(bits, ".e") {
				bits += ".0"
			}
		}
		paper := "False"
		if tr.paper {
			paper = "True"
		}
		fmt.Fprintf(&b, "    (%d, %q, %s, %q, %s, %s),\n", f, tr.name, aliases, family, bits, paper)
	}
	fmt.Fprintf(&b, ")\n\nBFP_BLOCK = %d\nINT8_MAX = %d\nSCALE_BITS = %d\nSUM_MIN, SUM_MAX = %d, %d\n", BFPBlock, Int8Max, ScaleBits, SumMin, SumMax)
	return b.Bytes()
}

func TestGoldenFiles(t *testing.T) {
	for _, f := range []struct {
		path string
		data []byte
	}{{fixedGoldenPath, fixedGolden(t)}, {pythonFormatsPath, pythonFormats()}} {
		if *update {
			if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatalf("%v (run go test ./lowbit -run Golden -update)", err)
		}
		if !bytes.Equal(old, f.data) {
			t.Errorf("%s is stale: run go test ./lowbit -run Golden -update", f.path)
		}
	}
}

// TestFixedGoldenAgainstReference checks the generated vectors against the
// reference twins, so the file the Python side replays is right as well as
// current.
func TestFixedGoldenAgainstReference(t *testing.T) {
	var cases []fixedCase
	if err := json.Unmarshal(fixedGolden(t), &cases); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		g := make([][]float32, c.Workers)
		for k := range g {
			g[k] = make([]float32, c.N)
			for j, b := range c.Grads[k] {
				g[k][j] = math.Float32frombits(b)
			}
		}
		var want []float32
		switch c.Format {
		case "int8":
			s := math.Float32frombits(c.Scale)
			codes := make([][]int8, c.Workers)
			for k := range g {
				codes[k] = RefEncodeInt8(g[k], s)
			}
			want = RefDecodeInt8(RefSumInt8(codes), s, c.Workers)
		case "bfp8":
			mant, exp := make([][]int8, c.Workers), make([][]int8, c.Workers)
			for k := range g {
				mant[k], exp[k] = RefEncodeBFP8(g[k])
			}
			sum, e := RefSumBFP8(mant, exp, c.N)
			want = RefDecodeBFP8(sum, e, c.Workers)
		}
		for j, b := range c.Mean {
			if math.Float32frombits(b) != want[j] && !(math.IsNaN(float64(want[j]))) {
				t.Fatalf("case %d (%s w=%d n=%d) element %d: %v; reference %v", i, c.Format, c.Workers, c.N, j, math.Float32frombits(b), want[j])
			}
		}
		if c.Workers == 259 && c.Sum[0] != SumMax {
			t.Errorf("case %d: the 259-worker sum %d does not saturate", i, c.Sum[0])
		}
	}
}
