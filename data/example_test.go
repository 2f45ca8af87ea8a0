package data_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/neuronfabric/nfabric/data"
)

func ExampleLoad() {
	sets, err := data.Load("mnist", "") // located through the Go module cache
	if err != nil {
		fmt.Println(err)
		return
	}
	train := sets.Train
	b, _ := data.NewBatcher(train, 128, rand.New(rand.NewPCG(1, 0)), true, data.Augment{})
	x := make([]float32, 128*train.ImageSize())
	y := make([]int, 128)
	n := b.Next(x, y)
	fmt.Println(train.Len(), train.C, train.H, train.W, b.Batches(), n)
	// Output: 60000 1 28 28 469 128
}
