//go:build !amd64 || noasm

package gemm

// runs16 is never called where runsAsm stays false.
func runs16(d *float32, ldd int, x *float32, a *int32, n int, runs *int32, nrun int) {
	panic("gemm: runs16 without AVX-512")
}
