package train_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/data"
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

// A driver runs the one training loop and adds its work through hooks:
// here it counts the steps on which a group ran a sign rule and prints
// each epoch's step count and policy.
func ExampleLoop() {
	d := &data.Dataset{Name: "tiny", C: 1, H: 2, W: 2, Classes: 2, Mean: []float32{0.5}, Std: []float32{0.25}}
	for i := range 64 {
		c := i % 2
		d.Pixels = append(d.Pixels, uint8(60+120*c), uint8(180-120*c), uint8(60+120*c), uint8(180-120*c))
		d.Labels = append(d.Labels, c)
	}
	p, _ := train.ParsePolicy("backbone=g-binary,head=fp32")
	cfg := train.Config{Model: "mlp", Hidden: []int{4}, Workers: 4, Batch: 16, Epochs: 2, LR: 0.05, SignLR: 0.01, Policy: p, Seed: 1}
	m, _ := train.NewModel(cfg, d, cfg.Seed)
	agg, _ := train.NewAggregator(m, cfg.Policy, cfg.Workers, cfg.Layout)
	l := train.NewLoop(cfg, m, agg, d, d)
	var signSteps [nn.NumGroups]int
	l.Hooks = train.Hooks{
		AfterAggregate: func(s *train.Step) error {
			for _, g := range nn.Groups() {
				if s.Policy[g].Rule.Sign() {
					signSteps[g]++
				}
			}
			return nil
		},
		EndEpoch: func(e *train.EpochStat) error {
			fmt.Printf("epoch %d: %d steps; sign steps backbone %d head %d\n", e.Epoch, l.Timing.Steps, signSteps[nn.Backbone], signSteps[nn.Head])
			return nil
		},
	}
	if err := l.Run(context.Background(), 1, cfg.Epochs); err != nil {
		fmt.Println(err)
	}
	// Output:
	// epoch 1: 4 steps; sign steps backbone 4 head 0
	// epoch 2: 8 steps; sign steps backbone 8 head 0
}
