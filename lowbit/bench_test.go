package lowbit

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The benchmarks run over a size ladder up to 64 MiB (the target
// size) once per kernel set, so that benchstat can compare the portable Go
// with the assembly and with a plain copy of the same bytes:
//
//	go test -run='^$' -bench='Copy|EncodeSigns|VotePacket|VotePlanes' -count=6 ./lowbit > go.txt
//	/usr/bin/python3 bench/peers/numpy_lowbit.py -count 6 > numpy.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl go.txt
//
// b.SetBytes is always the input: FP32 bytes for the encoders, packed bytes
// (all W workers) for the aggregates, so MB/s compares across kernels.
var benchSizes = []struct {
	name  string
	bytes int
}{{"4KiB", 4 << 10}, {"256KiB", 256 << 10}, {"4MiB", 4 << 20}, {"64MiB", 64 << 20}}

var benchData = map[int][]byte{}

// benchBytes returns n random bytes, the same ones on every call.
func benchBytes(n int) []byte {
	if b, ok := benchData[n]; ok {
		return b
	}
	r := rand.New(rand.NewPCG(uint64(n), 1))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for q := range 8 {
			b[i+q] = byte(v >> (8 * q))
		}
	}
	benchData[n] = b
	return b
}

var benchGrads = map[int][]float32{}

// benchFloats returns n normal float32 gradients, the same on every call.
func benchFloats(n int) []float32 {
	if g, ok := benchGrads[n]; ok {
		return g
	}
	r := rand.New(rand.NewPCG(uint64(n), 2))
	g := make([]float32, n)
	for i := range g {
		g[i] = float32(r.NormFloat64())
	}
	benchGrads[n] = g
	return g
}

// forEachImpl runs f as a sub-benchmark impl=NAME for every kernel set.
func forEachImpl(b *testing.B, f func(b *testing.B)) {
	for _, ks := range kernelSets() {
		b.Run("impl="+ks.name, func(b *testing.B) {
			useKernels(b, ks)
			f(b)
		})
	}
}

// BenchmarkCopy is the bandwidth reference: a plain copy of the bytes.
func BenchmarkCopy(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run("size="+sz.name, func(b *testing.B) {
			src, dst := benchBytes(sz.bytes), make([]byte, sz.bytes)
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}

func BenchmarkEncodeSigns(b *testing.B) {
	forEachImpl(b, func(b *testing.B) {
		for _, sz := range benchSizes {
			b.Run("size="+sz.name, func(b *testing.B) {
				g := benchFloats(sz.bytes / 4)
				dst := make([]byte, PlaneBytes(len(g)))
				b.SetBytes(int64(sz.bytes))
				b.ReportAllocs()
				for b.Loop() {
					if err := EncodeSigns(dst, g); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

func BenchmarkEncodeGates(b *testing.B) {
	forEachImpl(b, func(b *testing.B) {
		for _, sz := range benchSizes {
			b.Run("size="+sz.name, func(b *testing.B) {
				g := benchFloats(sz.bytes / 4)
				dst := make([]byte, PlaneBytes(len(g)))
				b.SetBytes(int64(sz.bytes))
				b.ReportAllocs()
				for b.Loop() {
					if err := EncodeGates(dst, g, 0.5); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

var benchModes = []struct {
	name   string
	format Format
	gate   Gate
}{{"binary", Binary, Gate{}}, {"ternary", Ternary, PaperGate}}

func BenchmarkCountPacket(b *testing.B) {
	forEachImpl(b, func(b *testing.B) {
		for _, sz := range benchSizes {
			b.Run("W=8/size="+sz.name, func(b *testing.B) {
				src := benchBytes(sz.bytes)
				dst := make([]byte, len(src))
				b.SetBytes(int64(sz.bytes))
				b.ReportAllocs()
				for b.Loop() {
					CountPacket(dst, src, 8)
				}
			})
		}
	})
}

func BenchmarkVotePacket(b *testing.B) {
	forEachImpl(b, func(b *testing.B) {
		for _, m := range benchModes {
			for _, sz := range benchSizes {
				b.Run(fmt.Sprintf("mode=%s/W=8/size=%s", m.name, sz.name), func(b *testing.B) {
					src := benchBytes(sz.bytes)
					dst := make([]int8, len(src))
					s := Spec{Workers: 8, Layout: ElementMajor, Format: m.format, Gate: m.gate}
					b.SetBytes(int64(sz.bytes))
					b.ReportAllocs()
					for b.Loop() {
						if err := VotePacket(dst, src, nil, s, 1); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	})
}

// benchPlanes splits n random bytes into w planes.
func benchPlanes(nbytes, w int) [][]byte {
	src := benchBytes(nbytes)
	nb := nbytes / w
	planes := make([][]byte, w)
	for k := range planes {
		planes[k] = src[k*nb : (k+1)*nb : (k+1)*nb]
	}
	return planes
}

// BenchmarkVotePlanes votes W workers' planes holding sz bytes in all
// (W=4: the 4-rank DDP benchmark's case; W=3 an odd count).
func BenchmarkVotePlanes(b *testing.B) {
	forEachImpl(b, func(b *testing.B) {
		for _, m := range benchModes {
			for _, w := range []int{8, 4, 3} {
				for _, sz := range benchSizes {
					if w != 8 && sz.bytes < 256<<10 {
						continue
					}
					b.Run(fmt.Sprintf("mode=%s/W=%d/size=%s", m.name, w, sz.name), func(b *testing.B) {
						planes := benchPlanes(sz.bytes, w)
						nb := len(planes[0])
						pos, nz := make([]byte, nb), make([]byte, nb)
						s := Spec{Workers: w, Layout: WorkerMajor, Format: m.format, Gate: m.gate}
						b.SetBytes(int64(w * nb))
						b.ReportAllocs()
						for b.Loop() {
							if err := VotePlanes(pos, nz, planes, nil, 8*nb, s, 1); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	})
}

func BenchmarkCountPlanes(b *testing.B) {
	forEachImpl(b, func(b *testing.B) {
		for _, sz := range benchSizes[:3] {
			b.Run("W=8/size="+sz.name, func(b *testing.B) {
				planes := benchPlanes(sz.bytes, 8)
				n := 8 * len(planes[0])
				dst := make([]uint16, n)
				b.SetBytes(int64(sz.bytes))
				b.ReportAllocs()
				for b.Loop() {
					CountPlanes(dst, planes, n)
				}
			})
		}
	})
}

// BenchmarkDecodePlanes is the FP32 update written from W=8-sized result
// planes (the DDP hook's last pass); bytes are the FP32 output.
func BenchmarkDecodePlanes(b *testing.B) {
	for _, sz := range benchSizes[1:] {
		b.Run("size="+sz.name, func(b *testing.B) {
			n := sz.bytes / 4
			pos, nz := benchBytes(PlaneBytes(n)), benchBytes(PlaneBytes(n) + 1)[1:]
			dst := make([]float32, n)
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			for b.Loop() {
				DecodePlanes(dst, pos, nz, n, 0.5)
			}
		})
	}
}

// BenchmarkUnpackPlanes is the int8 form of DecodePlanes; bytes are the
// int8 output.
func BenchmarkUnpackPlanes(b *testing.B) {
	for _, sz := range benchSizes[1:] {
		b.Run("size="+sz.name, func(b *testing.B) {
			n := sz.bytes
			pos, nz := benchBytes(PlaneBytes(n)), benchBytes(PlaneBytes(n) + 1)[1:]
			dst := make([]int8, n)
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			for b.Loop() {
				UnpackPlanes(dst, pos, nz, n)
			}
		})
	}
}

// BenchmarkPlanesToPacket gathers W=8 planes into packets (the runtime's
// layout change for element-major regions); bytes are the planes'.
func BenchmarkPlanesToPacket(b *testing.B) {
	for _, sz := range benchSizes[:3] {
		b.Run("W=8/size="+sz.name, func(b *testing.B) {
			planes := benchPlanes(sz.bytes, 8)
			n := 8 * len(planes[0])
			dst := make([]byte, n)
			b.SetBytes(int64(sz.bytes))
			b.ReportAllocs()
			for b.Loop() {
				PlanesToPacket(dst, planes, n)
			}
		})
	}
}
