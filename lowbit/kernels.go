package lowbit

// The kernels below are the portable implementations; an architecture file
// may replace them at init time with faster ones that must give identical
// results (the tests compare every kernel with the reference loops in
// ref.go).
var (
	encodeSigns = encodeSignsGeneric
	countPacket = countPacketGeneric
	votePacket  = votePacketGeneric
	votePlanes  = votePlanesGeneric
)
