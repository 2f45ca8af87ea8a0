//go:build !amd64 || noasm

package gemm

// packRows is never called where rowsAsm stays false.
func packRows(d, b []float32, ldb, kc, ns, nr int) bool {
	panic("gemm: packRows without AVX2")
}

// transpose6 is never called where transposeAsm stays false.
func transpose6(d, a []float32, lda, kc8 int) {
	panic("gemm: transpose6 without AVX2")
}
