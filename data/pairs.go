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
//
// Global average pooling cannot tell the left digit from the right one,
// so a GAP network cannot learn this set beyond the unordered pair; use
// Stack100 for such networks.
func Pairs100(src *Sets, seed uint64) (*Sets, error) {
	return combine(src, seed, "mnist-pairs100", PairsDescription, 1, 2, func(dst, a, b []uint8, h, w int) {
		for r := 0; r < h; r++ {
			copy(dst[r*2*w:], a[r*w:(r+1)*w])
			copy(dst[r*2*w+w:], b[r*w:(r+1)*w])
		}
	})
}

// Stack100 builds a 100-class task from a 10-class one-channel set like
// Pairs100 (same draws of a, b and the source images for a seed), but
// image k holds the two source images in two channels of the source size
// (2×28×28): channel 0 shows class a, channel 1 class b, label 10a+b.
// Every position sees both channels, so a network with global average
// pooling and a linear head can learn it (the head adds a score for a and
// one for b). name and desc name the result, e.g. "fashion-stack100".
func Stack100(src *Sets, seed uint64, name, desc string) (*Sets, error) {
	return combine(src, seed, name, desc, 2, 1, func(dst, a, b []uint8, h, w int) {
		copy(dst, a)
		copy(dst[h*w:], b)
	})
}

// combine builds a 100-class set whose image k joins a source image of
// class a and one of class b (label 10a+b) with join into c channels of
// h × (wMul·w) bytes; see Pairs100 for the draws.
func combine(src *Sets, seed uint64, name, desc string, c, wMul int, join func(dst, a, b []uint8, h, w int)) (*Sets, error) {
	s := &Sets{}
	for split, d := range []*Dataset{src.Train, src.Test} {
		if d.C != 1 || d.Classes != 10 {
			return nil, fmt.Errorf("data: %s: source %s is %dx%dx%d with %d classes, want 1 channel and 10 classes", name, d.Name, d.C, d.H, d.W, d.Classes)
		}
		byClass := make([][]int, 10)
		for i, l := range d.Labels {
			byClass[l] = append(byClass[l], i)
		}
		for cl, idx := range byClass {
			if len(idx) == 0 {
				return nil, fmt.Errorf("data: %s: source %s has no image of class %d", name, d.Name, cl)
			}
		}
		rng := rand.New(rand.NewPCG(seed, uint64(split)))
		n := d.Len()
		out := &Dataset{Name: name + "/" + [2]string{"train", "test"}[split], Description: desc,
			C: c, H: d.H, W: wMul * d.W, Classes: 100, Pixels: make([]uint8, n*c*d.H*wMul*d.W), Labels: make([]int, n)}
		for k := 0; k < n; k++ {
			a, b := rng.IntN(10), rng.IntN(10)
			ia := byClass[a][rng.IntN(len(byClass[a]))]
			ib := byClass[b][rng.IntN(len(byClass[b]))]
			out.Labels[k] = 10*a + b
			join(out.Image(k), d.Image(ia), d.Image(ib), d.H, d.W)
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

// StackDescriptions name the two-channel stand-ins for CIFAR-100.
const (
	MNISTStackDescription   = "MNIST digit pairs in two channels, 2x28x28 grey, 100 classes (label 10a+b): a stand-in for CIFAR-100 built from real images, not CIFAR-100"
	FashionStackDescription = "Fashion-MNIST item pairs in two channels, 2x28x28 grey, 100 classes (label 10a+b): a stand-in for CIFAR-100 built from real images, not CIFAR-100"
)

// LoadMNISTStack100 loads MNIST from dir (see LoadMNIST) and builds
// "mnist-stack100" from it with Stack100.
func LoadMNISTStack100(dir string, seed uint64) (*Sets, error) {
	m, err := LoadMNIST(dir)
	if err != nil {
		return nil, err
	}
	return Stack100(m, seed, "mnist-stack100", MNISTStackDescription)
}

// LoadFashionStack100 loads Fashion-MNIST from dir (see LoadFashionMNIST)
// and builds "fashion-stack100" from it with Stack100.
func LoadFashionStack100(dir string, seed uint64) (*Sets, error) {
	m, err := LoadFashionMNIST(dir)
	if err != nil {
		return nil, err
	}
	return Stack100(m, seed, "fashion-stack100", FashionStackDescription)
}
