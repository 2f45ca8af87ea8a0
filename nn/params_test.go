package nn

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestResNet18ParamCount(t *testing.T) {
	tests := []struct {
		classes    int
		want, head int
	}{
		{10, 11173962, 512*10 + 10},
		{100, 11220132, 512*100 + 100},
	}
	for _, tt := range tests {
		m := ResNet18(rand.New(rand.NewPCG(1, 0)), tt.classes)
		if got := m.NumParams(); got != tt.want {
			t.Errorf("ResNet18(%d).NumParams() == %d; want %d", tt.classes, got, tt.want)
		}
		if got := m.GroupParams(Head); got != tt.head {
			t.Errorf("ResNet18(%d).GroupParams(Head) == %d; want %d", tt.classes, got, tt.head)
		}
		if got := m.GroupParams(Backbone) + m.GroupParams(Head); got != tt.want {
			t.Errorf("groups sum to %d; want %d", got, tt.want)
		}
	}
}

// TestStandInParamCount checks the stand-ins' sizes against a count by
// hand (stem, then per stage conv1, conv2, downsample and their BN γ, β).
func TestStandInParamCount(t *testing.T) {
	bn := func(c int) int { return 2 * c }
	stage := func(in, out int) int {
		n := in*out*9 + bn(out) + out*out*9 + bn(out)
		if in != out {
			n += in*out + bn(out)
		}
		return n
	}
	small10 := 1*16*9 + bn(16) + stage(16, 16) + stage(16, 32) + stage(32, 64) + 64*10 + 10
	tests := []struct {
		cfg        func(c, h, w, classes int) ResNetConfig
		c, classes int
		want, head int
		maxShare   float64 // the head's largest share of the parameters
	}{
		{StandInConfig, 1, 10, small10, 64*10 + 10, 0.01},
		{StandInConfig, 2, 100, 2*8*9 + bn(8) + stage(8, 8) + stage(8, 16) + stage(16, 32) + stage(32, 256) + 2*stage(256, 256) + 256*100 + 100, 256*100 + 100, 0.01},
		{SmallStandInConfig, 1, 10, small10, 64*10 + 10, 0.01},
		{SmallStandInConfig, 2, 100, 2*16*9 + bn(16) + stage(16, 16) + stage(16, 32) + stage(32, 64) + stage(64, 128) + 128*100 + 100, 128*100 + 100, 0.05},
	}
	for _, tt := range tests {
		m, err := NewResNet(rand.New(rand.NewPCG(1, 0)), tt.cfg(tt.c, 28, 28, tt.classes))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.NumParams(); got != tt.want || m.GroupParams(Head) != tt.head {
			t.Errorf("%s %d classes: %d parameters, head %d; want %d, %d", m.Name, tt.classes, got, m.GroupParams(Head), tt.want, tt.head)
		}
		if share := float64(tt.head) / float64(tt.want); share >= tt.maxShare {
			t.Errorf("%s %d classes: head share %.4f, want under %.2f", m.Name, tt.classes, share, tt.maxShare)
		}
		x := NewTensor(2, tt.c, 28, 28)
		if y := m.NewReplica().Forward(x, true); !sameShape(y.Shape, []int{2, tt.classes}) {
			t.Errorf("stand-in output %v", y)
		}
	}
}

// TestResNetWidths checks per-stage widths: the parameter shapes follow
// Widths, not Width·2^s, and a Widths list of the wrong length or with a
// zero width is refused.
func TestResNetWidths(t *testing.T) {
	cfg := ResNetConfig{Blocks: []int{1, 2}, Width: 4, Widths: []int{4, 12}, InChannels: 1, H: 8, W: 8, Classes: 3}
	m, err := NewResNet(rand.New(rand.NewPCG(1, 0)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int{"layer2.0.conv1.weight": {12, 4, 3, 3}, "layer2.1.conv2.weight": {12, 12, 3, 3}, "fc.weight": {3, 12}} {
		i := m.ParamIndex(name)
		if i < 0 || !sameShape(m.Params[i].Shape, want) {
			t.Errorf("%s: index %d; want shape %v", name, i, want)
		}
	}
	for _, bad := range [][]int{{4}, {4, 0}} {
		c := cfg
		c.Widths = bad
		if _, err := NewResNet(rand.New(rand.NewPCG(1, 0)), c); err == nil || !strings.Contains(err.Error(), "Widths") {
			t.Errorf("Widths %v: err %v", bad, err)
		}
	}
}

func TestParamNames(t *testing.T) {
	m := ResNet18(rand.New(rand.NewPCG(1, 0)), 10)
	for _, name := range []string{"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight",
		"layer2.0.conv1.weight", "layer2.0.downsample.0.weight", "layer2.0.downsample.1.bias",
		"layer4.1.bn2.weight", "fc.weight", "fc.bias"} {
		if m.ParamIndex(name) < 0 {
			t.Errorf("ResNet18 has no parameter %q", name)
		}
	}
	if m.ParamIndex("layer1.0.downsample.0.weight") >= 0 {
		t.Errorf("layer1.0 must use an identity shortcut")
	}
	seen := map[string]bool{}
	for _, p := range m.Params {
		if seen[p.Name] {
			t.Errorf("duplicate parameter name %q", p.Name)
		}
		seen[p.Name] = true
		wantGroup := Backbone
		if p.Name == "fc.weight" || p.Name == "fc.bias" {
			wantGroup = Head
		}
		if p.Group != wantGroup {
			t.Errorf("%s in group %v; want %v", p.Name, p.Group, wantGroup)
		}
		if p.Len() != numel(p.Shape) {
			t.Errorf("%s: Len %d != numel%v", p.Name, p.Len(), p.Shape)
		}
	}
}
