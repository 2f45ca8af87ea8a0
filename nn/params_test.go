package nn

import (
	"math/rand/v2"
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
