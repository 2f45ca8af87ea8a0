package payload

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neuronfabric/nfabric/lowbit"
)

// TestEncodeStreamMatchesEncode checks the chunked encoder against the
// whole-file path (Encode then WriteTo) byte for byte, with chunks small
// enough that several are written and the last is partial.
func TestEncodeStreamMatchesEncode(t *testing.T) {
	gates := []struct {
		name string
		f    lowbit.Format
		g    lowbit.Gate
	}{
		{"binary", lowbit.Binary, lowbit.Gate{}},
		{"pattern", lowbit.Ternary, lowbit.PaperGate},
		{"pattern:5", lowbit.Ternary, lowbit.Gate{Kind: lowbit.GatePattern, Period: 5}},
		{"worker", lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateWorker}},
		{"margin:2", lowbit.Ternary, lowbit.Gate{Kind: lowbit.GateMargin, Threshold: 2}},
		{"int8", lowbit.Int8, lowbit.Gate{}},
		{"bfp8", lowbit.BFP8, lowbit.Gate{}},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, layout := range []lowbit.Layout{lowbit.ElementMajor, lowbit.WorkerMajor} {
		for _, gt := range gates {
			if gt.f.Sum() && layout != lowbit.WorkerMajor {
				continue
			}
			for _, n := range []int{0, 1, 511, 512, 3*512 + 77, 5000} {
				for _, chunk := range []int{1, 512, 1024, 1 << 20} {
					name := fmt.Sprintf("%v/%s/n=%d/chunk=%d", layout, gt.name, n, chunk)
					t.Run(name, func(t *testing.T) {
						s := lowbit.Spec{Layout: layout, Format: gt.f, Gate: gt.g, Workers: 5}
						h := Header{Spec: s, Base: 1001}
						g := grads(r, s.Workers, n)
						want := new(bytes.Buffer)
						f, err := Encode(h, g, 0.3)
						if err != nil {
							t.Fatal(err)
						}
						if _, err := f.WriteTo(want); err != nil {
							t.Fatal(err)
						}
						h.Elements = int64(n)
						got := new(bytes.Buffer)
						calls := 0
						src := func(k int, off int64, dst []float32) error { copy(dst, g[k][off:]); return nil }
						err = EncodeStream(got, h, src, 0.3, chunk, func(done, total int64) {
							calls++
							if done > total {
								t.Errorf("progress %d of %d", done, total)
							}
						})
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got.Bytes(), want.Bytes()) {
							t.Fatalf("streamed %d bytes differ from Encode's %d", got.Len(), want.Len())
						}
						if calls == 0 {
							t.Error("no progress calls")
						}
					})
				}
			}
		}
	}
}

// TestEncodeStreamNonFinite checks that a NaN in a later chunk is named by
// its index in the whole input.
func TestEncodeStreamNonFinite(t *testing.T) {
	g := grads(rand.New(rand.NewPCG(1, 2)), 3, 2000)
	g[2][1500] = float32(math.NaN())
	h := Header{Spec: lowbit.Spec{Layout: lowbit.WorkerMajor, Format: lowbit.Binary, Workers: 3}, Elements: 2000}
	src := func(k int, off int64, dst []float32) error { copy(dst, g[k][off:]); return nil }
	err := EncodeStream(new(bytes.Buffer), h, src, 0, 512, nil)
	if err == nil || !strings.Contains(err.Error(), "worker 2") || !strings.Contains(err.Error(), "1500") {
		t.Fatalf("err = %v, want worker 2 element 1500", err)
	}
}
