package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/neuronfabric/nfabric/strictyaml"
	"gopkg.in/yaml.v3"
)

// yamlProfile is the YAML form of a profile.
type yamlProfile struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	SeqLen      *int        `yaml:"seq_len"`
	Batch       *int        `yaml:"batch"`
	Layers      []yamlLayer `yaml:"layers"`
}

type yamlLayer struct {
	Name     string   `yaml:"name"`
	Group    string   `yaml:"group"`
	Tensors  []Tensor `yaml:"tensors"`
	FwdFLOPs *float64 `yaml:"fwd_flops"`
}

// ParseProfileYAML reads a user profile. The format, with every field but
// name and layers optional:
//
//	name: my-mlp            # required
//	description: two-layer MLP on MNIST
//	seq_len: 1              # tokens per sample (default 1)
//	batch: 64               # default per-worker batch (default 1)
//	layers:                 # forward order; backward runs them in reverse
//	  - name: fc1
//	    group: backbone     # backbone (default), head, or any group name
//	    tensors:
//	      - {name: weight, shape: [256, 784]}
//	      - {name: bias, shape: [256]}
//	    fwd_flops: 401408   # forward FLOPs per sample (default 2*params*seq_len)
//	  - name: fc2
//	    group: head
//	    tensors: [{name: weight, shape: [10, 256]}, {name: bias, shape: [10]}]
//
// Unknown fields are errors. name is used in errors (usually the file
// path); errors carry the line of the offending layer.
func ParseProfileYAML(data []byte, name string) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var y yamlProfile
	if err := dec.Decode(&y); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("profile %s: empty file", name)
		}
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("profile %s: more than one YAML document", name)
	}
	if err := strictyaml.CheckIntsIn(data, &y); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	// Line numbers of the layers, for errors.
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	lines := layerLines(&root)
	lineOf := func(i int) string {
		if i < len(lines) {
			return fmt.Sprintf("%s:%d", name, lines[i])
		}
		return name
	}
	p := &Profile{Name: strings.TrimSpace(y.Name), Description: y.Description, SeqLen: 1, Batch: 1}
	if y.SeqLen != nil {
		p.SeqLen = *y.SeqLen
	}
	if y.Batch != nil {
		p.Batch = *y.Batch
	}
	if p.Name == "" {
		return nil, fmt.Errorf("profile %s: missing name", name)
	}
	if p.SeqLen < 1 {
		return nil, fmt.Errorf("profile %s: seq_len %d must be >= 1", name, p.SeqLen)
	}
	if p.Batch < 1 {
		return nil, fmt.Errorf("profile %s: batch %d must be >= 1", name, p.Batch)
	}
	if len(y.Layers) == 0 {
		return nil, fmt.Errorf("profile %s: no layers", name)
	}
	for i, yl := range y.Layers {
		l := Layer{Name: strings.TrimSpace(yl.Name), Group: strings.TrimSpace(yl.Group), Tensors: yl.Tensors}
		if l.Group == "" {
			l.Group = Backbone
		}
		if l.Name == "" {
			return nil, fmt.Errorf("profile %s: layer %d has no name", lineOf(i), i)
		}
		for _, t := range l.Tensors {
			for _, d := range t.Shape {
				if d < 1 {
					return nil, fmt.Errorf("profile %s: layer %s: tensor %s: dimension %d must be >= 1", lineOf(i), l.Name, t.Name, d)
				}
			}
		}
		// Validate shapes before computing a default FLOP count from them.
		probe := Profile{Name: p.Name, SeqLen: 1, Batch: 1, Layers: []Layer{l}}
		if err := probe.Validate(); err != nil && len(l.Tensors) > 0 {
			return nil, fmt.Errorf("%s: %w", lineOf(i), err)
		}
		if yl.FwdFLOPs != nil {
			l.FwdFLOPs = *yl.FwdFLOPs
		} else {
			l.FwdFLOPs = 2 * float64(l.Params()) * float64(p.SeqLen)
		}
		if math.IsNaN(l.FwdFLOPs) || math.IsInf(l.FwdFLOPs, 0) || l.FwdFLOPs < 0 {
			return nil, fmt.Errorf("profile %s: layer %s: fwd_flops %v must be finite and >= 0", lineOf(i), l.Name, l.FwdFLOPs)
		}
		p.Layers = append(p.Layers, l)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// layerLines returns the source line of each element of the top-level
// "layers" sequence.
func layerLines(root *yaml.Node) []int {
	if root == nil || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "layers" && m.Content[i+1].Kind == yaml.SequenceNode {
			var out []int
			for _, n := range m.Content[i+1].Content {
				out = append(out, n.Line)
			}
			return out
		}
	}
	return nil
}

// LoadProfile returns the built-in profile called nameOrPath, or reads a
// YAML profile when nameOrPath ends in .yaml or .yml. seq overrides the
// sequence length of built-in profiles (0 = default); YAML profiles carry
// their own.
func LoadProfile(nameOrPath string, seq int) (*Profile, error) {
	low := strings.ToLower(nameOrPath)
	if strings.HasSuffix(low, ".yaml") || strings.HasSuffix(low, ".yml") {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("read profile: %w", err)
		}
		p, err := ParseProfileYAML(data, nameOrPath)
		if err != nil {
			return nil, err
		}
		if seq != 0 && seq != p.SeqLen {
			return nil, fmt.Errorf("profile %s: sequence length is fixed by the file (seq_len %d); drop --seq", nameOrPath, p.SeqLen)
		}
		return p, nil
	}
	return Builtin(nameOrPath, seq)
}
