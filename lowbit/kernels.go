package lowbit

// kernelSet is one implementation of the hot loops behind the exported
// API. The portable set (genericKernels) is always available; an
// architecture file may register faster sets in archKernels at init time
// and make the fastest the default. Every set must give results identical
// to the reference loops in ref.go: the tests run each registered set
// against them, and `go test -tags noasm` runs the whole suite on the
// portable set alone.
type kernelSet struct {
	name string
	// encodeSigns writes PlaneBytes(len(g)) bytes of sign bits and reports
	// false if g holds a NaN or Inf.
	encodeSigns func(dst []byte, g []float32) bool
	// encodeGates is encodeSigns for bit = 1{|g| > tau}, where tau is the
	// IEEE bits of a finite, non-negative threshold (never -0).
	encodeGates func(dst []byte, g []float32, tau uint32) bool
	countPacket func(dst, src []byte, w int)
	votePacket  func(dst []int8, src []byte, s Spec, base int)
	votePlanes  func(pos, nz []byte, signs, gates [][]byte, n int, s Spec, base int)
	countPlanes func(dst []uint16, planes [][]byte, n int)
}

// genericKernels is the portable implementation, in plain Go.
var genericKernels = kernelSet{
	name:        "go",
	encodeSigns: encodeSignsGeneric,
	encodeGates: encodeGatesGeneric,
	countPacket: countPacketGeneric,
	votePacket:  votePacketGeneric,
	votePlanes:  votePlanesGeneric,
	countPlanes: countPlanesGeneric,
}

var (
	// archKernels lists the architecture-specific sets this CPU supports.
	archKernels []kernelSet
	// kernels is the set the exported API uses.
	kernels = genericKernels
)

// Implementation returns the name of the kernel set in use: "go" for the
// portable kernels, "avx2" for the amd64 AVX2 assembly.
func Implementation() string { return kernels.name }
