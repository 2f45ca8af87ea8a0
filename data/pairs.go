package data

import (
	"fmt"
	"math/rand/v2"
)

// DefaultPairsSeed is the seed Load uses for mnist-pairs100.
const DefaultPairsSeed = 1

// PairsDescription names mnist-pairs100 as what it is.
const PairsDescription = "MNIST digit pairs, 28x56 grey, 100 classes (label 10a+b): a stand-in for CIFAR-100 built from real images, not CIFAR-100"

// LoadMNISTPairs100 loads MNIST from dir (see LoadMNIST) and builds the
// 100-class pairs set from it with Pairs100.
func LoadMNISTPairs100(dir string, seed uint64) (*Sets, error) {
	m, err := LoadMNIST(dir)
	if err != nil {
		return nil, err
	}
	return Pairs100(m, seed)
}

// Pairs100 builds a 100-class task from a 10-class 28×28 set: image k is
// two source images side by side (28×56), left digit a and right digit b,
// with label 10a+b. The training split draws from the source training
// split only and has as many images; likewise the test split. For each
// image, a and b are uniform in 0..9 and each image is uniform among the
// source images of its class, all drawn from
// rand.New(rand.NewPCG(seed, split)) with split 0 (train) and 1 (test), so
// the set is a deterministic function of the seed.
func Pairs100(src *Sets, seed uint64) (*Sets, error) {
	s := &Sets{}
	for split, d := range []*Dataset{src.Train, src.Test} {
		if d.C != 1 || d.Classes != 10 {
			return nil, fmt.Errorf("data: pairs100: source %s is %dx%dx%d with %d classes, want 1 channel and 10 classes", d.Name, d.C, d.H, d.W, d.Classes)
		}
		byClass := make([][]int, 10)
		for i, l := range d.Labels {
			byClass[l] = append(byClass[l], i)
		}
		for c, idx := range byClass {
			if len(idx) == 0 {
				return nil, fmt.Errorf("data: pairs100: source %s has no image of class %d", d.Name, c)
			}
		}
		rng := rand.New(rand.NewPCG(seed, uint64(split)))
		n := d.Len()
		out := &Dataset{Name: "mnist-pairs100/" + [2]string{"train", "test"}[split], Description: PairsDescription,
			C: 1, H: d.H, W: 2 * d.W, Classes: 100, Pixels: make([]uint8, n*d.H*2*d.W), Labels: make([]int, n)}
		for k := 0; k < n; k++ {
			a, b := rng.IntN(10), rng.IntN(10)
			ia := byClass[a][rng.IntN(len(byClass[a]))]
			ib := byClass[b][rng.IntN(len(byClass[b]))]
			out.Labels[k] = 10*a + b
			dst := out.Image(k)
			for r := 0; r < d.H; r++ {
				copy(dst[r*2*d.W:], d.Image(ia)[r*d.W:(r+1)*d.W])
				copy(dst[r*2*d.W+d.W:], d.Image(ib)[r*d.W:(r+1)*d.W])
			}
		}
		if split == 0 {
			s.Train = out
		} else {
			s.Test = out
		}
	}
	setStats(s)
	return s, nil
}
