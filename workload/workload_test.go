package workload

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Published sizes: Hugging Face BertModel bert-large-uncased (335,141,888
// with pooler), GPT2Model gpt2-xl (1,557,611,200), ResNet-18 CIFAR
// (kuangliu/pytorch-cifar, torchsummary: 11,173,962 for 10 classes). GPT-3
// follows 12*L*d^2 + 13*L*d + (V + ctx)*d + 2*d (Brown et al. 2020 Table 2.1
// lists 175.0B).
func TestParamCounts(t *testing.T) {
	gpt3 := func(L, d, V, ctx int64) int64 { return 12*L*d*d + 13*L*d + (V+ctx)*d + 2*d }
	tests := []struct {
		name      string
		want      int64
		published float64 // the headline size
		tol       float64 // relative tolerance against the headline
		head      int64
	}{
		{"bert-large", 335_141_888, 340e6, 0.02, 1024*1024 + 1024},
		{"gpt2-xl", 1_557_611_200, 1.56e9, 0.01, 2 * 1600},
		{"gpt3", gpt3(96, 12288, 50257, 2048), 175e9, 0.01, 2 * 12288},
		{"resnet18-cifar10", 11_173_962, 11.2e6, 0.01, 512*10 + 10},
		{"resnet18-cifar100", 11_220_132, 11.2e6, 0.01, 512*100 + 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Builtin(tt.name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Params(); got != tt.want {
				t.Errorf("Params() = %d; want %d", got, tt.want)
			}
			if r := math.Abs(float64(p.Params())/tt.published - 1); r > tt.tol {
				t.Errorf("Params() = %d is %.2f%% from the published %g", p.Params(), 100*r, tt.published)
			}
			g := p.GroupParams()
			if g[Head] != tt.head || g[Backbone]+g[Head] != tt.want {
				t.Errorf("groups = %v; want head %d, backbone %d", g, tt.head, tt.want-tt.head)
			}
		})
	}
}

func TestGPT3Total(t *testing.T) {
	p, _ := Builtin("gpt3", 0)
	if got := p.Params(); got != 174_604_259_328 {
		t.Errorf("gpt3 Params() = %d; want 174604259328", got)
	}
}

// Kaplan et al. (2020): forward FLOPs per token = 2*N_nonembedding +
// 2*n_layer*n_ctx*d_attn (the causal half of attention counted in full
// here: 4*ctx*d per layer), plus the 2*d*V vocabulary projection.
func TestTransformerFLOPs(t *testing.T) {
	c := GPT2XLConfig
	p, err := GPT(c, 1024)
	if err != nil {
		t.Fatal(err)
	}
	L, d, V, s := float64(c.Layers), float64(c.D), float64(c.Vocab), 1024.0
	want := s * (2*L*12*d*d + 4*L*s*d + 2*d*V) // biases and LayerNorms cost no FLOPs here
	if got := p.FwdFLOPs(); math.Abs(got/want-1) > 1e-12 {
		t.Errorf("gpt2-xl FwdFLOPs() = %g; want %g", got, want)
	}
}

func TestResNetFLOPs(t *testing.T) {
	// Hand count: CIFAR ResNet-18 is 0.556 GMACs (ptflops/thop report
	// 0.56 GMac), i.e. about 1.11 GFLOPs per 32x32 image.
	p := ResNet18CIFAR(10)
	if got := p.FwdFLOPs(); math.Abs(got/1.1115e9-1) > 0.01 {
		t.Errorf("FwdFLOPs() = %g; want ~1.1115e9", got)
	}
}

// naiveBuckets is an independent oracle: it lists every element's
// production time, then cuts the list into fixed chunks.
func naiveBuckets(tl *Timeline, capElems int64) []Bucket {
	var times []int64
	for _, sp := range tl.Spans {
		for j := int64(0); j < sp.Elements; j++ {
			d := sp.EndPS - sp.StartPS
			times = append(times, sp.StartPS+int64(math.Floor(float64(d)*float64(j+1)/float64(sp.Elements))))
		}
	}
	var out []Bucket
	for i := int64(0); i < int64(len(times)); i += capElems {
		end := min(i+capElems, int64(len(times)))
		out = append(out, Bucket{Index: len(out), Elements: end - i, Bytes: 4 * (end - i), ReadyPS: times[end-1]})
	}
	return out
}

func smallProfile() *Profile {
	return &Profile{Name: "tiny", SeqLen: 1, Batch: 3, Layers: []Layer{
		{Name: "a", Group: Backbone, Tensors: []Tensor{{"w", []int64{7, 3}}, {"b", []int64{7}}}, FwdFLOPs: 1000},
		{Name: "core", Group: Backbone, FwdFLOPs: 333},
		{Name: "ln", Group: Backbone, Tensors: []Tensor{{"w", []int64{5}}}},
		{Name: "c", Group: Head, Tensors: []Tensor{{"w", []int64{11, 2}}, {"b", []int64{11}}}, FwdFLOPs: 777},
	}}
}

func TestBucketizeSplitOracle(t *testing.T) {
	p := smallProfile()
	tl, err := p.Timeline(Schedule{Accel: Accelerator{"x", 1e9, 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, capE := range []int64{1, 2, 5, 13, 61, 62, 1000} {
		t.Run(fmt.Sprint(capE), func(t *testing.T) {
			tr, err := Bucketize(tl, BucketOptions{CapBytes: 4 * capE})
			if err != nil {
				t.Fatal(err)
			}
			want := naiveBuckets(tl, capE)
			if len(tr.Buckets) != len(want) {
				t.Fatalf("%d buckets; want %d", len(tr.Buckets), len(want))
			}
			for i, b := range tr.Buckets {
				w := want[i]
				if b.Elements != w.Elements || b.Bytes != w.Bytes || b.ReadyPS != w.ReadyPS || b.Index != i {
					t.Errorf("bucket %d = %+v; want %+v", i, b, w)
				}
			}
		})
	}
}

func TestBucketizeWholeTensors(t *testing.T) {
	p := smallProfile()
	tl, _ := p.Timeline(Schedule{Accel: A100})
	// Reverse order tensors: c.b(11) c.w(22) ln.w(5) a.b(7) a.w(21).
	tr, err := Bucketize(tl, BucketOptions{CapBytes: 4 * 30, Mode: WholeTensors})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{33, 33} // 11+22 >= 30; 5+7+21 = 33 >= 30
	if len(tr.Buckets) != len(want) {
		t.Fatalf("buckets %+v", tr.Buckets)
	}
	for i, b := range tr.Buckets {
		if b.Elements != want[i] {
			t.Errorf("bucket %d has %d elements; want %d", i, b.Elements, want[i])
		}
	}
	if tr.Buckets[0].First != "c.b" || tr.Buckets[0].Last != "c.w" || tr.Buckets[1].Last != "a.w" {
		t.Errorf("names %+v", tr.Buckets)
	}
	if tr.Buckets[1].ReadyPS != tl.BackwardPS {
		t.Errorf("last bucket ready %d; want end of backward %d", tr.Buckets[1].ReadyPS, tl.BackwardPS)
	}
}

func TestBucketizeBuiltins(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, _ := Builtin(name, 0)
			tl, err := p.Timeline(Schedule{Accel: A100})
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []BucketMode{SplitTensors, WholeTensors} {
				tr, err := Bucketize(tl, BucketOptions{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if tr.Elements() != p.Params() {
					t.Errorf("%v: bucket elements %d; want %d", mode, tr.Elements(), p.Params())
				}
				prev := int64(-1)
				for i, b := range tr.Buckets {
					if b.ReadyPS < prev || b.ReadyPS > tl.BackwardPS {
						t.Fatalf("%v: bucket %d ready %d out of order (prev %d, backward %d)", mode, i, b.ReadyPS, prev, tl.BackwardPS)
					}
					if mode == SplitTensors && i < len(tr.Buckets)-1 && b.Bytes != PaperBucketBytes {
						t.Fatalf("bucket %d has %d bytes", i, b.Bytes)
					}
					prev = b.ReadyPS
				}
			}
		})
	}
}

func TestTimeline(t *testing.T) {
	p := smallProfile()
	acc := Accelerator{"x", 2e9, 0.5} // 1e9 FLOP/s achieved
	tl, err := p.Timeline(Schedule{Accel: acc, BackwardFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	// batch 3: forward (1000+333+777)*3 FLOPs at 1e9 = 6.33 us.
	if tl.ForwardPS != 6_330_000 {
		t.Errorf("ForwardPS = %d; want 6330000", tl.ForwardPS)
	}
	if tl.BackwardPS != 12_660_000 {
		t.Errorf("BackwardPS = %d; want 12660000", tl.BackwardPS)
	}
	if tl.Spans[0].Layer != "c" || tl.Spans[0].EndPS != 4_662_000 {
		t.Errorf("first span %+v", tl.Spans[0])
	}
}

func TestBuiltinErrors(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"nope", "unknown model"},
	} {
		if _, err := Builtin(tt.name, 0); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Builtin(%q) error %v; want %q", tt.name, err, tt.want)
		}
	}
	if _, err := Builtin("gpt2-xl", 4096); err == nil {
		t.Error("gpt2-xl with seq 4096 accepted")
	}
	if _, err := Builtin("resnet18", 7); err == nil {
		t.Error("resnet with seq 7 accepted")
	}
}

const goodYAML = `name: my-mlp
description: two-layer MLP
batch: 64
layers:
  - name: fc1
    tensors:
      - {name: weight, shape: [256, 784]}
      - {name: bias, shape: [256]}
  - name: fc2
    group: head
    tensors: [{name: weight, shape: [10, 256]}, {name: bias, shape: [10]}]
    fwd_flops: 5120
`

func TestParseProfileYAML(t *testing.T) {
	p, err := ParseProfileYAML([]byte(goodYAML), "mlp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Params() != 256*784+256+2570 || p.Batch != 64 || p.SeqLen != 1 {
		t.Errorf("profile %+v", p)
	}
	if p.Layers[0].FwdFLOPs != 2*(256*784+256) || p.Layers[1].FwdFLOPs != 5120 {
		t.Errorf("FLOPs %v %v", p.Layers[0].FwdFLOPs, p.Layers[1].FwdFLOPs)
	}
	if g := p.GroupParams(); g[Head] != 2570 {
		t.Errorf("groups %v", g)
	}
	bad := []struct{ name, text, want string }{
		{"empty", "", "empty file"},
		{"unknown field", "name: x\nlayerz: []\n", "field layerz not found"},
		{"no name", "layers: [{name: a, tensors: [{name: w, shape: [1]}]}]\n", "missing name"},
		{"no layers", "name: x\n", "no layers"},
		{"bad dim", "name: x\nlayers:\n  - name: a\n  - name: b\n    tensors: [{name: w, shape: [3, 0]}]\n", "bad.yaml:4: layer b: tensor w: dimension 0"},
		{"dup tensor", "name: x\nlayers:\n  - name: a\n    tensors: [{name: w, shape: [1]}, {name: w, shape: [2]}]\n", "duplicate tensor a.w"},
		{"neg flops", "name: x\nlayers:\n  - name: a\n    tensors: [{name: w, shape: [1]}]\n    fwd_flops: -1\n", "fwd_flops"},
		{"type", "name: x\nbatch: lots\nlayers: []\n", "line 2"},
		{"two docs", goodYAML + "---\nname: y\n", "more than one"},
		{"no params", "name: x\nlayers: [{name: a}]\n", "no parameters"},
		{"zero batch", "name: x\nbatch: 0\nlayers: [{name: a}]\n", "batch 0"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProfileYAML([]byte(tt.text), "bad.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bad.yaml") {
				t.Errorf("error %v; want it to name bad.yaml and contain %q", err, tt.want)
			}
		})
	}
}

func TestTraceRoundTrip(t *testing.T) {
	p, _ := Builtin("bert-large", 0)
	tl, _ := p.Timeline(Schedule{Accel: A100})
	tr, _ := Bucketize(tl, BucketOptions{})
	var jb, cb bytes.Buffer
	if err := tr.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteCSV(&cb); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ParseTraceJSON(jb.Bytes(), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	fromCSV, err := ParseTraceCSV(&cb, "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []*Trace{fromJSON, fromCSV} {
		if len(got.Buckets) != len(tr.Buckets) {
			t.Fatalf("%d buckets; want %d", len(got.Buckets), len(tr.Buckets))
		}
		for i, b := range got.Buckets {
			w := tr.Buckets[i]
			if b.Bytes != w.Bytes || b.ReadyPS != w.ReadyPS || b.Elements != w.Elements {
				t.Errorf("bucket %d = %+v; want %+v", i, b, w)
			}
		}
	}
	if fromJSON.BackwardPS != tr.BackwardPS || fromJSON.ForwardPS != tr.ForwardPS {
		t.Errorf("step times %d/%d; want %d/%d", fromJSON.ForwardPS, fromJSON.BackwardPS, tr.ForwardPS, tr.BackwardPS)
	}
}

func TestTraceErrors(t *testing.T) {
	jsonBad := []struct{ name, text, want string }{
		{"syntax", "{\n \"buckets\": [\n  {\"bytes\": 4,, \"ready_us\": 1}]}", "t.json:3:"},
		{"type", "{\"buckets\": [{\"bytes\": \"4\", \"ready_us\": 1}]}", "t.json:1:"},
		{"unknown", "{\"buckets\": [], \"bucket_cap\": 3}", "unknown field"},
		{"missing bytes", "{\"buckets\": [{\"ready_us\": 1}]}", "buckets[0]: missing bytes"},
		{"order", "{\"buckets\": [{\"bytes\": 4, \"ready_us\": 2}, {\"bytes\": 4, \"ready_us\": 1}]}", "buckets[1]: ready_us 1 is before"},
		{"neg", "{\"buckets\": [{\"bytes\": -4, \"ready_us\": 1}]}", "bytes -4"},
		{"align", "{\"buckets\": [{\"bytes\": 6, \"ready_us\": 1}]}", "not a multiple"},
		{"backward", "{\"backward_us\": 1, \"buckets\": [{\"bytes\": 4, \"ready_us\": 2}]}", "ends before"},
		{"none", "{\"buckets\": []}", "no buckets"},
		{"trailing", "{\"buckets\": [{\"bytes\": 4, \"ready_us\": 2}]} {}", "unexpected data"},
		{"elements", "{\"buckets\": [{\"bytes\": 8, \"ready_us\": 2, \"elements\": 3}]}", "disagrees"},
	}
	for _, tt := range jsonBad {
		t.Run("json/"+tt.name, func(t *testing.T) {
			_, err := ParseTraceJSON([]byte(tt.text), "t.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "t.json") {
				t.Errorf("error %v; want %q", err, tt.want)
			}
		})
	}
	csvBad := []struct{ name, text, want string }{
		{"empty", "", "empty file"},
		{"column", "bytes,when\n", "t.csv:1: unknown column \"when\""},
		{"missing", "bytes\n4\n", "missing column \"ready_us\""},
		{"number", "# comment\nbytes,ready_us\n4,1\nfour,2\n", "t.csv:4: bytes"},
		{"nan", "bytes,ready_us\n4,NaN\n", "t.csv:2: ready_us"},
		{"fields", "bytes,ready_us\n4,1,3\n", "t.csv:2: 3 fields"},
		{"order", "bytes,ready_us\n4,5\n4,1\n", "t.csv:3: ready_us 1 is before"},
	}
	for _, tt := range csvBad {
		t.Run("csv/"+tt.name, func(t *testing.T) {
			_, err := ParseTraceCSV(strings.NewReader(tt.text), "t.csv")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want %q", err, tt.want)
			}
		})
	}
}
