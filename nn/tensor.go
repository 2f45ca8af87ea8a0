package nn

import "fmt"

// Tensor is a dense float32 array in row-major order.
// len(Data) == product of Shape. A zero Tensor has no shape and no data.
type Tensor struct {
	Shape []int
	Data  []float32
	// cm marks a 4-D activation whose Data is channel-major, (C, N, H, W)
	// for Shape (N, C, H, W): the layout a convolution's GEMM produces for
	// a whole batch, which a ResNet's layers keep between convolutions so
	// that no pass regroups it (see Conv2d). Only the layers inside the
	// network see such tensors.
	cm bool
}

// NewTensor returns a zeroed tensor of the given shape.
func NewTensor(shape ...int) *Tensor {
	t := &Tensor{}
	t.resize(shape...)
	return t
}

// Len returns the number of elements, the product of Shape.
func (t *Tensor) Len() int { return numel(t.Shape) }

// Dim returns Shape[i].
func (t *Tensor) Dim(i int) int { return t.Shape[i] }

// String gives the shape, e.g. "Tensor(16x3x32x32)".
func (t *Tensor) String() string { return fmt.Sprintf("Tensor(%s)", joinInts(t.Shape, "x")) }

// resize sets the shape, reusing the backing array when it is large enough.
// The contents are unspecified afterwards. resize does not allocate when the
// capacity suffices and len(shape) <= cap(t.Shape).
func (t *Tensor) resize(shape ...int) {
	n := numel(shape)
	if cap(t.Data) >= n {
		t.Data = t.Data[:n]
	} else {
		t.Data = make([]float32, n)
	}
	if cap(t.Shape) >= len(shape) {
		t.Shape = t.Shape[:len(shape)]
	} else {
		t.Shape = make([]int, len(shape), 4)
	}
	copy(t.Shape, shape)
}

// planeStrides returns how many planes (H×W blocks) apart the planes of
// two consecutive images and of two consecutive channels of a 4-D tensor
// lie: (C, 1) in NCHW order, (1, N) channel-major.
func (t *Tensor) planeStrides() (img, ch int) {
	if t.cm {
		return 1, t.Shape[0]
	}
	return t.Shape[1], 1
}

// rows returns the leading dimension and the product of the others.
func (t *Tensor) rows() (n, d int) {
	n = t.Shape[0]
	if n == 0 {
		return 0, numel(t.Shape[1:])
	}
	return n, len(t.Data) / n
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// joinInts writes ns in decimal separated by sep: a tensor's shape
// ("128x3x32x32") or a model's stage widths in its name ("8.16.32.256").
func joinInts(ns []int, sep string) string {
	s := ""
	for i, d := range ns {
		if i > 0 {
			s += sep
		}
		s += fmt.Sprint(d)
	}
	return s
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func zero(s []float32) {
	for i := range s {
		s[i] = 0
	}
}
