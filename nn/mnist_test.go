package nn_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/neuronfabric/nfabric/data"
	"github.com/neuronfabric/nfabric/nn"
)

func loadMNIST(tb testing.TB) *data.Sets {
	tb.Helper()
	s, err := data.Load("mnist", "")
	if errors.Is(err, data.ErrNotFound) {
		tb.Skipf("MNIST cannot be located: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// trainEpoch runs one epoch of data-parallel SGD: each batch is split over
// the replicas, their gradients are averaged, and SGD applies the mean.
func trainEpoch(m *nn.Model, reps []*nn.Replica, opt *nn.SGD, d *data.Dataset, batch int, seed uint64) {
	b, err := data.NewBatcher(d, batch, rand.New(rand.NewPCG(seed, 1)), true, data.Augment{})
	if err != nil {
		panic(err)
	}
	x := &nn.Tensor{Shape: append([]int{batch}, m.InShape...), Data: make([]float32, batch*d.ImageSize())}
	y := make([]int, batch)
	res := make([]nn.ShardResult, len(reps))
	agg := m.NewGrads()
	for n := b.Next(x.Data, y); n > 0; n = b.Next(x.Data, y) {
		xb := &nn.Tensor{Shape: append([]int{n}, m.InShape...), Data: x.Data[:n*d.ImageSize()]}
		nn.TrainShards(reps, xb, y[:n], res)
		nn.MeanGrads(agg, reps)
		opt.Step(agg)
	}
}

func accuracy(m *nn.Model, reps []*nn.Replica, d *data.Dataset) float64 {
	const batch = 500
	b, _ := data.NewBatcher(d, batch, nil, false, data.Augment{})
	x := make([]float32, batch*d.ImageSize())
	y := make([]int, batch)
	res := make([]nn.ShardResult, len(reps))
	correct := 0
	for n := b.Next(x, y); n > 0; n = b.Next(x, y) {
		nn.EvalShards(reps, &nn.Tensor{Shape: append([]int{n}, m.InShape...), Data: x[:n*d.ImageSize()]}, y[:n], res)
		for _, r := range res {
			correct += r.Correct
		}
	}
	return float64(correct) / float64(d.Len())
}

func TestMLPConvergesOnMNIST(t *testing.T) {
	s := loadMNIST(t)
	m := nn.NewMLP(rand.New(rand.NewPCG(1, 0)), 784, []int{256}, 10)
	reps := m.NewReplicas(4)
	opt := nn.NewSGD(m, 0.05, 0.9, 0)
	trainEpoch(m, reps, opt, s.Train, 128, 1)
	acc := accuracy(m, reps, s.Test)
	t.Logf("MLP 784-256-10, one epoch, 4 replicas: test accuracy %.4f", acc)
	if acc < 0.95 {
		t.Errorf("test accuracy %.4f after one epoch; want >= 0.95", acc)
	}
}
