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
	tests := []struct {
		c, classes int
		want, head int
	}{
		{1, 10, 1*16*9 + bn(16) + stage(16, 16) + stage(16, 32) + stage(32, 64) + 64*10 + 10, 64*10 + 10},
		{2, 100, 2*16*9 + bn(16) + stage(16, 16) + stage(16, 32) + stage(32, 64) + stage(64, 128) + 128*100 + 100, 128*100 + 100},
	}
	for _, tt := range tests {
		m, err := NewResNet(rand.New(rand.NewPCG(1, 0)), StandInConfig(tt.c, 28, 28, tt.classes))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.NumParams(); got != tt.want || m.GroupParams(Head) != tt.head {
			t.Errorf("stand-in %d classes: %d parameters, head %d; want %d, %d", tt.classes, got, m.GroupParams(Head), tt.want, tt.head)
		}
		x := NewTensor(2, tt.c, 28, 28)
		if y := m.NewReplica().Forward(x, true); !sameShape(y.Shape, []int{2, tt.classes}) {
			t.Errorf("stand-in output %v", y)
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
