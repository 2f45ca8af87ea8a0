package train_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/lowbit"
	"github.com/neuronfabric/nfabric/nn"
	"github.com/neuronfabric/nfabric/train"
)

// The paper's Table 6 traffic column is the payload arithmetic of its
// ResNet-18 for 100 classes.
func ExamplePolicyTraffic() {
	m := nn.ResNet18(rand.New(rand.NewPCG(1, 0)), 100)
	for _, s := range []string{"g-binary", "backbone=g-ternary,head=fp32", "backbone=fp32,head=g-binary"} {
		p, _ := train.ParsePolicy(s)
		fmt.Printf("%-32s %s\n", p.Label(), train.FormatRatio(train.PolicyTraffic(m, p).Paper.Ratio))
	}
	// Output:
	// G-Binary all                     0.0313
	// G-Ternary backbone + FP32 head   0.0537
	// FP32 backbone + G-Binary head    0.9956
}

// An Aggregator turns W workers' gradients into one update per parameter;
// here G-Binary through the controller model for 3 workers.
func ExampleAggregator() {
	m := nn.NewMLP(rand.New(rand.NewPCG(1, 0)), 2, nil, 2) // fc1: weight 2x2, bias 2 (the head)
	p, _ := train.ParsePolicy("g-binary")
	a, _ := train.NewAggregator(m, p, 3, lowbit.WorkerMajor)
	grads := [][][]float32{
		{{1, -1, 2, 0}, {0.5, -0.5}},
		{{1, -2, -2, 0}, {0.5, 0.5}},
		{{-1, -3, 2, 1}, {-0.5, 0.5}},
	}
	dst := m.NewGrads()
	_ = a.Aggregate(grads, dst)
	fmt.Println(dst)
	// Output:
	// [[1 -1 1 -1] [1 1]]
}
