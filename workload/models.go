package workload

import "fmt"

// BERTConfig is a BERT encoder (Devlin et al. 2019) with its pooler, as in
// Hugging Face BertModel: no pre-training heads.
type BERTConfig struct {
	Name       string
	Layers     int
	Hidden     int
	Heads      int
	FFN        int
	Vocab      int
	MaxPos     int
	TypeVocab  int
	Batch      int // default per-worker batch
	DefaultSeq int // default tokens per sample
}

// BERTLargeConfig is BERT-large: 24 layers, hidden 1024, 16 heads, FFN 4096,
// vocab 30522, 512 positions, 2 token types. Default batch 8 x 512 tokens.
var BERTLargeConfig = BERTConfig{Name: "bert-large", Layers: 24, Hidden: 1024, Heads: 16, FFN: 4096,
	Vocab: 30522, MaxPos: 512, TypeVocab: 2, Batch: 8, DefaultSeq: 512}

// GPTConfig is a GPT-2/GPT-3 style decoder with learned positions, pre-norm
// blocks, a final LayerNorm and an LM head tied to the token embedding.
// Dense attention is assumed for the FLOPs (GPT-3 alternates dense and
// locally banded sparse attention; the parameter count is the same).
type GPTConfig struct {
	Name       string
	Layers     int
	D          int
	Heads      int
	FFN        int // 4*D in both models
	Vocab      int
	Ctx        int
	Batch      int // default per-worker batch
	DefaultSeq int
}

// GPT2XLConfig is GPT-2 XL: 48 layers, d 1600, 25 heads, vocab 50257, context
// 1024. Default batch 8 x 1024 tokens.
var GPT2XLConfig = GPTConfig{Name: "gpt2-xl", Layers: 48, D: 1600, Heads: 25, FFN: 6400, Vocab: 50257, Ctx: 1024, Batch: 8, DefaultSeq: 1024}

// GPT3Config is GPT-3 175B: 96 layers, d 12288, 96 heads, vocab 50257,
// context 2048. Default batch 1 x 2048 tokens per data-parallel worker.
var GPT3Config = GPTConfig{Name: "gpt3", Layers: 96, D: 12288, Heads: 96, FFN: 4 * 12288, Vocab: 50257, Ctx: 2048, Batch: 1, DefaultSeq: 2048}

// join names a tensor inside a sub-module ("" = the layer itself).
func join(module, name string) string {
	if module == "" {
		return name
	}
	return module + "." + name
}

// dense is a torch.nn.Linear: weight (out, in) and bias (out).
func dense(name string, in, out int) []Tensor {
	return []Tensor{{Name: join(name, "weight"), Shape: []int64{int64(out), int64(in)}}, {Name: join(name, "bias"), Shape: []int64{int64(out)}}}
}

// norm is a LayerNorm or BatchNorm affine pair: weight (d) and bias (d).
// BatchNorm running statistics are buffers, not parameters.
func norm(name string, d int) []Tensor {
	return []Tensor{{Name: join(name, "weight"), Shape: []int64{int64(d)}}, {Name: join(name, "bias"), Shape: []int64{int64(d)}}}
}

func cat(ts ...[]Tensor) []Tensor {
	var out []Tensor
	for _, t := range ts {
		out = append(out, t...)
	}
	return out
}

// BERT builds a BERT profile for seq tokens per sample (0 = DefaultSeq).
func BERT(c BERTConfig, seq int) (*Profile, error) {
	if seq == 0 {
		seq = c.DefaultSeq
	}
	if seq < 1 || seq > c.MaxPos {
		return nil, fmt.Errorf("%s: sequence length %d outside 1..%d", c.Name, seq, c.MaxPos)
	}
	d, s := c.Hidden, float64(seq)
	mm := func(in, out int) float64 { return 2 * float64(in) * float64(out) * s }
	p := &Profile{Name: c.Name, SeqLen: seq, Batch: c.Batch,
		Description: fmt.Sprintf("BERT: %d layers, hidden %d, %d heads, FFN %d, vocab %d, %d positions, %d token types, pooler", c.Layers, d, c.Heads, c.FFN, c.Vocab, c.MaxPos, c.TypeVocab)}
	p.Layers = append(p.Layers, Layer{Name: "embeddings", Group: Backbone, Tensors: cat(
		[]Tensor{{Name: "word_embeddings.weight", Shape: []int64{int64(c.Vocab), int64(d)}},
			{Name: "position_embeddings.weight", Shape: []int64{int64(c.MaxPos), int64(d)}},
			{Name: "token_type_embeddings.weight", Shape: []int64{int64(c.TypeVocab), int64(d)}}},
		norm("LayerNorm", d))})
	for i := 0; i < c.Layers; i++ {
		pre := fmt.Sprintf("encoder.layer.%d.", i)
		p.Layers = append(p.Layers,
			Layer{Name: pre + "attention.self", Group: Backbone, Tensors: cat(dense("query", d, d), dense("key", d, d), dense("value", d, d)), FwdFLOPs: 3 * mm(d, d)},
			Layer{Name: pre + "attention.core", Group: Backbone, FwdFLOPs: 4 * s * s * float64(d)},
			Layer{Name: pre + "attention.output", Group: Backbone, Tensors: cat(dense("dense", d, d), norm("LayerNorm", d)), FwdFLOPs: mm(d, d)},
			Layer{Name: pre + "intermediate", Group: Backbone, Tensors: dense("dense", d, c.FFN), FwdFLOPs: mm(d, c.FFN)},
			Layer{Name: pre + "output", Group: Backbone, Tensors: cat(dense("dense", c.FFN, d), norm("LayerNorm", d)), FwdFLOPs: mm(c.FFN, d)},
		)
	}
	// The pooler runs on the [CLS] token only.
	p.Layers = append(p.Layers, Layer{Name: "pooler", Group: Head, Tensors: dense("dense", d, d), FwdFLOPs: 2 * float64(d) * float64(d)})
	return p, p.Validate()
}

// GPT builds a GPT profile for seq tokens per sample (0 = DefaultSeq).
// Tensor shapes follow Hugging Face GPT2Model (Conv1D weights are (in, out)).
func GPT(c GPTConfig, seq int) (*Profile, error) {
	if seq == 0 {
		seq = c.DefaultSeq
	}
	if seq < 1 || seq > c.Ctx {
		return nil, fmt.Errorf("%s: sequence length %d outside 1..%d", c.Name, seq, c.Ctx)
	}
	d, s := c.D, float64(seq)
	mm := func(in, out int) float64 { return 2 * float64(in) * float64(out) * s }
	conv1d := func(name string, in, out int) []Tensor {
		return []Tensor{{Name: join(name, "weight"), Shape: []int64{int64(in), int64(out)}}, {Name: join(name, "bias"), Shape: []int64{int64(out)}}}
	}
	p := &Profile{Name: c.Name, SeqLen: seq, Batch: c.Batch,
		Description: fmt.Sprintf("GPT: %d layers, d %d, %d heads, FFN %d, vocab %d, context %d, tied embeddings", c.Layers, d, c.Heads, c.FFN, c.Vocab, c.Ctx)}
	p.Layers = append(p.Layers, Layer{Name: "transformer", Group: Backbone, Tensors: []Tensor{
		{Name: "wte.weight", Shape: []int64{int64(c.Vocab), int64(d)}},
		{Name: "wpe.weight", Shape: []int64{int64(c.Ctx), int64(d)}}}})
	for i := 0; i < c.Layers; i++ {
		pre := fmt.Sprintf("transformer.h.%d.", i)
		p.Layers = append(p.Layers,
			Layer{Name: pre + "ln_1", Group: Backbone, Tensors: norm("", d)},
			Layer{Name: pre + "attn.c_attn", Group: Backbone, Tensors: conv1d("c_attn", d, 3*d), FwdFLOPs: mm(d, 3*d)},
			Layer{Name: pre + "attn.core", Group: Backbone, FwdFLOPs: 4 * s * s * float64(d)},
			Layer{Name: pre + "attn.c_proj", Group: Backbone, Tensors: conv1d("c_proj", d, d), FwdFLOPs: mm(d, d)},
			Layer{Name: pre + "ln_2", Group: Backbone, Tensors: norm("", d)},
			Layer{Name: pre + "mlp.c_fc", Group: Backbone, Tensors: conv1d("c_fc", d, c.FFN), FwdFLOPs: mm(d, c.FFN)},
			Layer{Name: pre + "mlp.c_proj", Group: Backbone, Tensors: conv1d("c_proj", c.FFN, d), FwdFLOPs: mm(c.FFN, d)},
		)
	}
	p.Layers = append(p.Layers,
		Layer{Name: "transformer.ln_f", Group: Head, Tensors: norm("", d)},
		// The LM head's weight is wte (tied): it owns no tensor, but costs the
		// vocabulary projection.
		Layer{Name: "lm_head", Group: Head, FwdFLOPs: mm(d, c.Vocab)},
	)
	return p, p.Validate()
}

// ResNet18CIFAR builds the CIFAR form of ResNet-18 (He et al. 2016, as in
// the widely used kuangliu/pytorch-cifar): a 3x3 stride-1 stem convolution
// with 64 filters and no bias plus BatchNorm, no max-pool, four stages of
// two BasicBlocks with 64/128/256/512 filters (stride 2 from the second
// stage, with a 1x1 convolution plus BatchNorm shortcut when the shape
// changes), global average pooling and a fully connected classifier (the
// head). Inputs are 3x32x32 images; default batch 128 per worker.
func ResNet18CIFAR(classes int) *Profile {
	p := &Profile{Name: fmt.Sprintf("resnet18-cifar%d", classes), SeqLen: 1, Batch: 128,
		Description: fmt.Sprintf("ResNet-18 (CIFAR form): 3x3 stem, [2,2,2,2] BasicBlocks 64/128/256/512, 1x1 shortcuts, FC %d", classes)}
	conv := func(name string, cin, cout, k, hw int) Layer {
		return Layer{Name: name, Group: Backbone,
			Tensors:  []Tensor{{Name: "weight", Shape: []int64{int64(cout), int64(cin), int64(k), int64(k)}}},
			FwdFLOPs: 2 * float64(k*k*cin*cout) * float64(hw*hw)}
	}
	bnT := func(name string, c int) Layer {
		return Layer{Name: name, Group: Backbone, Tensors: norm("", c)}
	}
	p.Layers = append(p.Layers, conv("conv1", 3, 64, 3, 32), bnT("bn1", 64))
	in, hw := 64, 32
	for s, planes := range []int{64, 128, 256, 512} {
		for b := 0; b < 2; b++ {
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			out := hw / stride
			pre := fmt.Sprintf("layer%d.%d.", s+1, b)
			p.Layers = append(p.Layers,
				conv(pre+"conv1", in, planes, 3, out), bnT(pre+"bn1", planes),
				conv(pre+"conv2", planes, planes, 3, out), bnT(pre+"bn2", planes))
			if stride != 1 || in != planes {
				p.Layers = append(p.Layers, conv(pre+"shortcut.0", in, planes, 1, out), bnT(pre+"shortcut.1", planes))
			}
			in, hw = planes, out
		}
	}
	p.Layers = append(p.Layers, Layer{Name: "fc", Group: Head, Tensors: dense("", 512, classes), FwdFLOPs: 2 * 512 * float64(classes)})
	return p
}
