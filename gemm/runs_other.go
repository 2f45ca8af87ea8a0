//go:build !amd64 || noasm

package gemm

// runs16 is never called where runsAsm stays false.
func runs16(d *float32, ldd int, x *float32, a *int32, n int, runs *int32, nrun int) {
	panic("gemm: runs16 without AVX-512")
}

// transpose8 is never called where transposeAsm stays false.
func transpose8(d *float32, ldd int, a *float32, lda int, kc8 int) {
	panic("gemm: transpose8 without AVX2")
}
