package gemm_test

import (
	"fmt"

	"github.com/neuronfabric/nfabric/gemm"
)

// C = 2·A·Bᵀ − C for a 2×3 A and a 2×3 B (so op(B) = Bᵀ is 3×2).
func ExampleSgemm() {
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{1, 0, 1, 0, 1, 1} // rows of B are the columns of op(B)
	c := []float32{1, 1, 1, 1}
	gemm.Sgemm(false, true, 2, 2, 3, 2, a, 3, b, 3, -1, c, 2)
	fmt.Println(c)
	// Output: [7 9 19 21]
}

// A PackedA multiplies one matrix by several others without repacking it,
// as a convolution does with its weights and each image's patches.
func ExamplePackedA() {
	w := []float32{1, 2, 3, 4} // 2×2
	var pa gemm.PackedA
	pa.Pack(false, 2, 2, w, 2)
	for _, x := range [][]float32{{1, 0, 0, 1}, {0, 1, 1, 0}} {
		y := make([]float32, 4)
		pa.Mul(1, false, 2, 1, x, 2, 0, y, 2)
		fmt.Println(y)
	}
	// Output:
	// [1 2 3 4]
	// [2 1 4 3]
}
