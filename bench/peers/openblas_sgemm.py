#!/usr/bin/env python3
"""OpenBLAS's sgemm at gemm's ResNet-18 shapes, one thread: the peer of
gemm.BenchmarkResNetShapes (workers=1).

It loads Debian's libopenblas0-pthread
(/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0, or the path
in OPENBLAS_LIB) through ctypes, sets one thread (openblas_set_num_threads,
and OPENBLAS_NUM_THREADS=1 before loading), and times cblas_sgemm on the
same shapes and transposes as gemm/bench_test.go's resnetShapes (row-major,
alpha 1, beta 0), printing one line per shape in the benchmark's form:
GFLOP per wall-clock second and per CPU-second of the process
(time.process_time), the latter the per-core figure on a shared machine.
OpenBLAS picks its kernels from the CPU (DYNAMIC_ARCH); OPENBLAS_CORETYPE
overrides it (Haswell: AVX2+FMA, the peer of gemm under
GODEBUG=cpu.avx512f=off; SkylakeX: AVX-512), and the first line names the
core in use.

    python3 bench/peers/openblas_sgemm.py [REPS]
"""
import ctypes
import os
import random
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
LIB = os.environ.get("OPENBLAS_LIB", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0")

# name, transA, transB, m, n, k: gemm/bench_test.go's resnetShapes.
SHAPES = [
    ("fwd/64x16384x576", False, False, 64, 16384, 576),
    ("fwd/128x4096x1152", False, False, 128, 4096, 1152),
    ("fwd/256x1024x2304", False, False, 256, 1024, 2304),
    ("fwd/512x256x4608", False, False, 512, 256, 4608),
    ("dW/64x576x16384", False, True, 64, 576, 16384),
    ("dW/256x2304x1024", False, True, 256, 2304, 1024),
    ("dcol/576x16384x64", True, False, 576, 16384, 64),
    ("dcol/2304x1024x256", True, False, 2304, 1024, 256),
]

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    if reps < 1:
        print("usage: openblas_sgemm.py [REPS >= 1]", file=sys.stderr)
        sys.exit(2)
    try:
        blas = ctypes.CDLL(LIB)
    except OSError as e:
        print(f"openblas_sgemm.py: cannot load {LIB}: {e} (apt-get install libopenblas0-pthread)", file=sys.stderr)
        sys.exit(1)
    blas.openblas_set_num_threads(1)
    get_config = getattr(blas, "openblas_get_config", None)
    if get_config is not None:
        get_config.restype = ctypes.c_char_p
        core = ""
        get_core = getattr(blas, "openblas_get_corename", None)
        if get_core is not None:
            get_core.restype = ctypes.c_char_p
            core = " core: " + get_core().decode()
        print("openblas:", get_config().decode(), "threads:", blas.openblas_get_num_threads(), core)
    sgemm = blas.cblas_sgemm
    f = ctypes.c_float
    i = ctypes.c_int
    p = ctypes.POINTER(ctypes.c_float)
    sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    rng = random.Random(1)
    for name, ta, tb, m, n, k in SHAPES:
        a = (ctypes.c_float * (m * k))(*[rng.gauss(0, 1) for _ in range(m * k)])
        b = (ctypes.c_float * (k * n))(*[rng.gauss(0, 1) for _ in range(k * n)])
        c = (ctypes.c_float * (m * n))()
        lda = m if ta else k
        ldb = k if tb else n

        def call():
            sgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k,
                  1.0, a, lda, b, ldb, 0.0, c, n)

        call()  # warm-up
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            call()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        flop = 2.0 * m * n * k * reps
        print(f"OpenBLAS/{name}\t{reps}\t{flop / wall / 1e9:.1f} GFLOP/s\t{flop / cpu / 1e9:.1f} GFLOP/cpu-s")


if __name__ == "__main__":
    main()
