package train

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
)

// updateGolden rewrites the golden files the Python package checks itself
// against (go test ./train -run Golden -update); without it the tests fail
// when a file is stale.
var updateGolden = flag.Bool("update", false, "rewrite the generated golden files")

// cosinesGoldenPath holds StepFormatCosines on W workers' gradients of a
// small model, which python/tests/test_cosines_golden.py replays through
// nfabric.torch.core.Cosines (the hook's diagnostics).
const cosinesGoldenPath = "testdata/format_cosines_golden.json"

type cosinesGoldenParam struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	N     int    `json:"n"`
}

type cosinesGoldenCase struct {
	Workers int                  `json:"workers"`
	Params  []cosinesGoldenParam `json:"params"`
	// Grads are float32 bit patterns, [worker][param][element].
	Grads [][][]uint32 `json:"grads"`
	// Cosines are StepFormatCosines per format name and group.
	Cosines map[string]map[string]float64 `json:"cosines"`
}

// cosinesGolden generates the cases: EdgeGradient values (zeros, -0,
// denormals: sign ties) with a per-tensor spread of magnitudes, at W = 1
// (every aggregate the worker's own), 3, 4 (ties in the vote) and 5, the
// last with an all-zero tensor.
func cosinesGolden(t *testing.T) []byte {
	r := rand.New(rand.NewPCG(30, 3))
	var cases []cosinesGoldenCase
	for ci, w := range []int{1, 3, 4, 5} {
		m := nn.NewMLP(rand.New(rand.NewPCG(uint64(ci), 1)), 30, []int{17, 9}, 6)
		grads := make([][][]float32, w)
		for k := range grads {
			grads[k] = m.NewGrads()
		}
		for i := range m.Params {
			scale := math.Pow(10, float64(r.IntN(7)-4))
			for k := range grads {
				for j := range grads[k][i] {
					if ci == 3 && i == 1 {
						continue // an all-zero tensor
					}
					grads[k][i][j] = lowbit.EdgeGradient(r) * float32(scale)
				}
			}
		}
		fc, err := StepFormatCosines(m, grads)
		if err != nil {
			t.Fatal(err)
		}
		c := cosinesGoldenCase{Workers: w, Cosines: map[string]map[string]float64{}}
		for _, p := range m.Params {
			c.Params = append(c.Params, cosinesGoldenParam{Name: p.Name, Group: p.Group.String(), N: p.Len()})
		}
		for k := range grads {
			var row [][]uint32
			for _, g := range grads[k] {
				b := make([]uint32, len(g))
				for j, x := range g {
					b[j] = math.Float32bits(x)
				}
				row = append(row, b)
			}
			c.Grads = append(c.Grads, row)
		}
		for _, f := range []lowbit.Format{lowbit.Binary, lowbit.Ternary, lowbit.Int8, lowbit.BFP8} {
			per := map[string]float64{}
			for _, g := range nn.Groups() {
				per[g.String()] = fc[f].Groups[g]
			}
			c.Cosines[f.String()] = per
		}
		cases = append(cases, c)
	}
	b, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestCosinesGoldenFile keeps the golden file current (the oracle of the
// Python side is StepFormatCosines itself, which TestStepFormatCosines
// checks against a direct computation).
func TestCosinesGoldenFile(t *testing.T) {
	want := cosinesGolden(t)
	if *updateGolden {
		if err := os.WriteFile(cosinesGoldenPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(cosinesGoldenPath)
	if err != nil {
		t.Fatalf("%v (run go test ./train -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (run go test ./train -run Golden -update)", cosinesGoldenPath)
	}
}
