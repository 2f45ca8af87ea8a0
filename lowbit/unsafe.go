package lowbit

import "unsafe"

// int8sAsBytes views an []int8 as []byte (same size, same alignment), so
// the byte kernels can write vote results in place.
func int8sAsBytes(s []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// unsafeInt8s views a []byte as []int8.
func unsafeInt8s(b []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}
