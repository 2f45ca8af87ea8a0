#!/usr/bin/python3
"""numpy peer for the lowbit Go benchmarks (the speed goals are Go benchmarks compared with peers).

Times what a researcher would write in numpy for the same work the Go
kernels in lowbit do, on the same sizes, and prints the results as Go
benchmark lines so that benchstat can put them beside the Go figures:

    /usr/bin/python3 bench/peers/numpy_lowbit.py -count 6 > numpy.txt
    go run golang.org/x/perf/cmd/benchstat@latest numpy.txt

Benchmarks (MB/s counts the input bytes, as the Go benchmarks' SetBytes):
  NumpyEncodeSigns    np.packbits(g > 0, bitorder='little') on FP32 g
  NumpyVotePacket     element-major W=8 packets: unpackbits, sum over the
                      8 worker bits, > 4, packbits (the majority bit only)
  NumpyVotePlanes     worker-major W=8 bit-planes: unpackbits each plane,
                      sum over workers, > 4, packbits
  NumpyVotePacketLUT  the same packets through a 256-entry int8 table of
                      sgn(2 popcount(b) - 8): one gather per element, the
                      fastest numpy spelling we found, and the same output
                      as the Go VotePacket (one int8 per element, tie -> 0)
  NumpyVotePlanesCSA  the same planes as uint64 words through the
                      carry-save adder tree the Go kernel uses (bitwise
                      numpy ops on whole arrays): pos and nz planes out
  NumpyCopy           np.copyto of the same bytes, the bandwidth reference

The vote sums use dtype=uint8, the fastest of the obvious spellings, so
the peer is not handicapped by int64 temporaries.
"""

import argparse
import platform
import sys
import time

import numpy as np

SIZES = [("4KiB", 4 << 10), ("256KiB", 256 << 10), ("4MiB", 4 << 20), ("64MiB", 64 << 20)]


def encode_signs(g):
    return np.packbits(g > 0, bitorder="little")


def vote_packet(src):
    bits = np.unpackbits(src, bitorder="little").reshape(-1, 8)
    c = bits.sum(axis=1, dtype=np.uint8)
    return np.packbits(c > 4, bitorder="little")


def vote_planes(planes):
    bits = np.unpackbits(planes, axis=1, bitorder="little")
    c = bits.sum(axis=0, dtype=np.uint8)
    return np.packbits(c > 4, bitorder="little")


_LUT = np.array([np.sign(2 * bin(b).count("1") - 8) for b in range(256)], dtype=np.int8)


def vote_packet_lut(src):
    return _LUT[src]


def _fa(a, b, c):
    t = a ^ b
    return t ^ c, (a & b) | (c & t)


def vote_planes_csa(planes):
    x = planes.view(np.uint64)
    s1, c1 = _fa(x[0], x[1], x[2])
    s2, c2 = _fa(x[3], x[4], x[5])
    s3, c3 = _fa(s1, s2, x[6])
    b0, h = s3 ^ x[7], s3 & x[7]
    t, c4 = _fa(c1, c2, c3)
    b1, h2 = t ^ h, t & h
    b2, b3 = c4 ^ h2, c4 & h2
    pos = b3 | (b2 & (b1 | b0))
    nz = pos | ~(b3 | b2)
    return pos, nz


def check(rng):
    """Cross-check the numpy spellings on a small input against plain loops."""
    g = rng.standard_normal(1000).astype(np.float32)
    g[::7] = 0
    g[::11] = -0.0
    bits = encode_signs(g)
    for i, v in enumerate(g):
        assert ((bits[i >> 3] >> (i & 7)) & 1) == (1 if v > 0 else 0)
    src = rng.integers(0, 256, 256, dtype=np.uint8)
    maj = vote_packet(src)
    for i, b in enumerate(src):
        assert ((maj[i >> 3] >> (i & 7)) & 1) == (1 if bin(int(b)).count("1") > 4 else 0)
    lut = vote_packet_lut(src)
    for i, b in enumerate(src):
        assert lut[i] == np.sign(2 * bin(int(b)).count("1") - 8)
    planes = rng.integers(0, 256, (8, 32), dtype=np.uint8)
    pos, nz = vote_planes_csa(planes)
    pos, nz = pos.view(np.uint8), nz.view(np.uint8)
    for i in range(256):
        c = sum((int(planes[k, i >> 3]) >> (i & 7)) & 1 for k in range(8))
        assert ((pos[i >> 3] >> (i & 7)) & 1) == (1 if c > 4 else 0)
        assert ((nz[i >> 3] >> (i & 7)) & 1) == (1 if c != 4 else 0)
    maj = vote_planes(planes)
    for i in range(256):
        c = sum((int(planes[k, i >> 3]) >> (i & 7)) & 1 for k in range(8))
        assert ((maj[i >> 3] >> (i & 7)) & 1) == (1 if c > 4 else 0)


def timeit(fn, nbytes, min_time):
    """Runs fn in batches until min_time seconds; returns (iterations, ns/op)."""
    fn()  # warm up (page faults of fresh outputs, caches)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 30:
            return n, dt * 1e9 / n
        n = max(n * 2, int(n * min_time / max(dt, 1e-9) * 1.2))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-count", type=int, default=6, help="repetitions of each benchmark (for benchstat)")
    ap.add_argument("-benchtime", type=float, default=0.5, help="seconds per repetition")
    ap.add_argument("-only", default="", help="comma-separated subset: encode,packet,planes,copy")
    ap.add_argument("-seed", type=int, default=1)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    rng = np.random.default_rng(args.seed)
    check(rng)

    print(f"goos: {sys.platform}")
    print(f"goarch: {platform.machine()}")
    print(f"pkg: numpy {np.__version__} python {platform.python_version()}")
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    print("cpu:", line.split(":", 1)[1].strip())
                    break
    except OSError:
        pass

    cases = []
    for name, nbytes in SIZES:
        if not only or "encode" in only:
            g = rng.standard_normal(nbytes // 4).astype(np.float32)
            cases.append((f"NumpyEncodeSigns/size={name}", nbytes, lambda g=g: encode_signs(g)))
        if not only or "packet" in only:
            src = rng.integers(0, 256, nbytes, dtype=np.uint8)
            cases.append((f"NumpyVotePacket/W=8/size={name}", nbytes, lambda s=src: vote_packet(s)))
            cases.append((f"NumpyVotePacketLUT/W=8/size={name}", nbytes, lambda s=src: vote_packet_lut(s)))
        if not only or "planes" in only:
            planes = rng.integers(0, 256, (8, nbytes // 8), dtype=np.uint8)
            cases.append((f"NumpyVotePlanes/W=8/size={name}", nbytes, lambda p=planes: vote_planes(p)))
            cases.append((f"NumpyVotePlanesCSA/W=8/size={name}", nbytes, lambda p=planes: vote_planes_csa(p)))
        if not only or "copy" in only:
            a = rng.integers(0, 256, nbytes, dtype=np.uint8)
            b = np.empty_like(a)
            cases.append((f"NumpyCopy/size={name}", nbytes, lambda a=a, b=b: np.copyto(b, a)))

    for bench, nbytes, fn in cases:
        for _ in range(args.count):
            n, ns = timeit(fn, nbytes, args.benchtime)
            mbs = nbytes / ns * 1e3
            print(f"Benchmark{bench}\t{n:10d}\t{ns:14.1f} ns/op\t{mbs:10.2f} MB/s", flush=True)


if __name__ == "__main__":
    main()
