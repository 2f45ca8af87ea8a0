package workload

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Group names used by the built-in profiles.
const (
	Backbone = "backbone"
	Head     = "head"
)

// Tensor is one parameter tensor: its state_dict name and shape.
type Tensor struct {
	Name  string  `json:"name" yaml:"name"`
	Shape []int64 `json:"shape" yaml:"shape"`
}

// Elements returns the product of the shape (1 for a scalar, shape []).
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Layer is one module of a model in forward order.
type Layer struct {
	Name string `json:"name"`
	// Group is Backbone or Head (or any user group name).
	Group   string   `json:"group"`
	Tensors []Tensor `json:"tensors,omitempty"`
	// FwdFLOPs is the forward cost of one sample (2 FLOPs per MAC).
	FwdFLOPs float64 `json:"fwd_flops"`
}

// Params returns the number of parameters the layer owns.
func (l Layer) Params() int64 {
	var n int64
	for _, t := range l.Tensors {
		n += t.Elements()
	}
	return n
}

// Profile is a model described layer by layer.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// SeqLen is the tokens per sample the FLOPs were computed for (1 for
	// images).
	SeqLen int `json:"seq_len"`
	// Batch is the default per-worker batch in samples.
	Batch  int     `json:"batch"`
	Layers []Layer `json:"layers"`
}

// Params returns the total number of parameters.
func (p *Profile) Params() int64 {
	var n int64
	for _, l := range p.Layers {
		n += l.Params()
	}
	return n
}

// GroupParams returns the parameters per group.
func (p *Profile) GroupParams() map[string]int64 {
	m := map[string]int64{}
	for _, l := range p.Layers {
		m[l.Group] += l.Params()
	}
	return m
}

// Groups returns the group names in order of first appearance.
func (p *Profile) Groups() []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range p.Layers {
		if !seen[l.Group] {
			seen[l.Group] = true
			out = append(out, l.Group)
		}
	}
	return out
}

// FwdFLOPs returns the forward FLOPs of one sample.
func (p *Profile) FwdFLOPs() float64 {
	var f float64
	for _, l := range p.Layers {
		f += l.FwdFLOPs
	}
	return f
}

// Tensors returns the number of parameter tensors.
func (p *Profile) Tensors() int {
	n := 0
	for _, l := range p.Layers {
		n += len(l.Tensors)
	}
	return n
}

// maxElements bounds one model's parameters (2^50, about 10^15) so that
// byte counts of any format stay far inside int64.
const maxElements = int64(1) << 50

// Validate checks names, shapes and FLOPs; the error names the layer and
// tensor at fault.
func (p *Profile) Validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return fmt.Errorf("profile has no name")
	}
	if p.SeqLen < 1 {
		return fmt.Errorf("profile %s: seq_len %d must be >= 1", p.Name, p.SeqLen)
	}
	if p.Batch < 1 {
		return fmt.Errorf("profile %s: batch %d must be >= 1", p.Name, p.Batch)
	}
	if len(p.Layers) == 0 {
		return fmt.Errorf("profile %s: no layers", p.Name)
	}
	seen := map[string]bool{}
	var total int64
	for i, l := range p.Layers {
		if strings.TrimSpace(l.Name) == "" {
			return fmt.Errorf("profile %s: layer %d has no name", p.Name, i)
		}
		if strings.TrimSpace(l.Group) == "" {
			return fmt.Errorf("profile %s: layer %s has no group", p.Name, l.Name)
		}
		if math.IsNaN(l.FwdFLOPs) || math.IsInf(l.FwdFLOPs, 0) || l.FwdFLOPs < 0 {
			return fmt.Errorf("profile %s: layer %s: forward FLOPs %v must be finite and >= 0", p.Name, l.Name, l.FwdFLOPs)
		}
		for _, t := range l.Tensors {
			full := l.Name + "." + t.Name
			if strings.TrimSpace(t.Name) == "" {
				return fmt.Errorf("profile %s: layer %s has a tensor without a name", p.Name, l.Name)
			}
			if seen[full] {
				return fmt.Errorf("profile %s: duplicate tensor %s", p.Name, full)
			}
			seen[full] = true
			n := int64(1)
			for _, d := range t.Shape {
				if d < 1 {
					return fmt.Errorf("profile %s: tensor %s: dimension %d must be >= 1", p.Name, full, d)
				}
				if n > maxElements/d {
					return fmt.Errorf("profile %s: tensor %s: too many elements", p.Name, full)
				}
				n *= d
			}
			total += n
			if total > maxElements {
				return fmt.Errorf("profile %s: more than %d parameters", p.Name, maxElements)
			}
		}
	}
	if total == 0 {
		return fmt.Errorf("profile %s: no parameters", p.Name)
	}
	return nil
}

// builder builds a built-in profile for a sequence length (0 = default).
type builder struct {
	name, desc string
	build      func(seq int) (*Profile, error)
}

var builtins = []builder{
	{"bert-large", "BERT-large (Devlin et al. 2019), uncased, with pooler", func(seq int) (*Profile, error) { return BERT(BERTLargeConfig, seq) }},
	{"gpt2-xl", "GPT-2 XL (Radford et al. 2019), tied embeddings", func(seq int) (*Profile, error) { return GPT(GPT2XLConfig, seq) }},
	{"gpt3", "GPT-3 175B (Brown et al. 2020), tied embeddings", func(seq int) (*Profile, error) { return GPT(GPT3Config, seq) }},
	{"resnet18-cifar10", "ResNet-18 for CIFAR-10 (3x3 stem, 10 classes)", func(seq int) (*Profile, error) { return resnetSeq(10, seq) }},
	{"resnet18-cifar100", "ResNet-18 for CIFAR-100 (3x3 stem, 100 classes)", func(seq int) (*Profile, error) { return resnetSeq(100, seq) }},
}

var aliases = map[string]string{
	"bert":       "bert-large",
	"gpt2":       "gpt2-xl",
	"gpt-2-xl":   "gpt2-xl",
	"gpt3-175b":  "gpt3",
	"gpt-3":      "gpt3",
	"resnet18":   "resnet18-cifar10",
	"resnet-18":  "resnet18-cifar10",
	"cifar10":    "resnet18-cifar10",
	"cifar100":   "resnet18-cifar100",
	"resnet18-c": "resnet18-cifar10",
}

func resnetSeq(classes, seq int) (*Profile, error) {
	if seq > 1 {
		return nil, fmt.Errorf("resnet18: a sequence length (%d) does not apply to images", seq)
	}
	return ResNet18CIFAR(classes), nil
}

// Names returns the built-in profile names.
func Names() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.name
	}
	return out
}

// Builtin returns the named built-in profile for sequence length seq (0
// selects the model's context length; image models take 0 or 1).
func Builtin(name string, seq int) (*Profile, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	for _, b := range builtins {
		if b.name == n {
			return b.build(seq)
		}
	}
	names := Names()
	sort.Strings(names)
	return nil, fmt.Errorf("unknown model %q (built-in: %s; or a YAML profile file)", name, strings.Join(names, ", "))
}
