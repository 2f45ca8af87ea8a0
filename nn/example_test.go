package nn_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/nn"
)

// Example trains a ResNet for one step with four virtual workers: each
// replica computes the FP32 gradient of its own shard, the gradients are
// aggregated (here by their mean; the training package substitutes a
// low-bit aggregate), and SGD applies the aggregate.
func Example() {
	rng := rand.New(rand.NewPCG(42, 0))
	m, err := nn.NewResNet(rng, nn.ResNetConfig{Blocks: []int{1, 1}, Width: 8, InChannels: 3, H: 8, W: 8, Classes: 10})
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Name, m.NumParams(), "parameters,", m.GroupParams(nn.Head), "in the head")
	for _, p := range m.Params[:3] {
		fmt.Println(p.Name, p.Shape, p.Group)
	}

	const workers, batch = 4, 32
	reps := m.NewReplicas(workers)
	x := nn.NewTensor(batch, 3, 8, 8)
	for i := range x.Data {
		x.Data[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = rng.IntN(10)
	}
	res := make([]nn.ShardResult, workers)
	nn.TrainShards(reps, x, labels, res) // shard k -> reps[k], in parallel

	// reps[k].Grads[i] is worker k's gradient of m.Params[i].
	fc := m.ParamIndex("fc.weight")
	fmt.Println("worker gradients of fc.weight:", len(reps), "x", len(reps[0].Grads[fc]))

	agg := m.NewGrads()
	nn.MeanGrads(agg, reps)
	opt := nn.NewSGD(m, 0.1, 0.9, 5e-4)
	opt.Step(agg)
	fmt.Println("shard sizes:", res[0].N, res[1].N, res[2].N, res[3].N)
	// Output:
	// resnet6-w8 5266 parameters, 170 in the head
	// conv1.weight [8 3 3 3] backbone
	// bn1.weight [8] backbone
	// bn1.bias [8] backbone
	// worker gradients of fc.weight: 4 x 160
	// shard sizes: 8 8 8 8
}
