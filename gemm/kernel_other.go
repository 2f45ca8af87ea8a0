//go:build !amd64 || noasm

package gemm

// packRows is never called where rowsAsm stays false.
func packRows(d, b []float32, ldb, kc, ns, nr int) bool {
	panic("gemm: packRows without AVX2")
}
