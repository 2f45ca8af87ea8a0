#!/usr/bin/env python3
"""nfabric.lowbit's CPU kernels beside the Go benchmarks of the same
kernels, measured in one run:

    /usr/bin/python3 python/benchmarks/kernels.py [--count 3] [--json out.json]

It runs ``go test -bench 'EncodeSigns|VotePlanes' ./lowbit`` (the kernel set
the library uses) and times the same operations on the same sizes from
Python: through the Go library (nfabric._golib, the default for CPU
tensors) and through the torch-op kernels. Bytes are counted as the Go
benchmarks count them (b.SetBytes): FP32 input bytes for the encoder,
packed bytes of all W = 8 planes for the vote; MB/s is 1e6 bytes/s.

Rows: ``encode_signs`` (the API: allocation, NaN/Inf check, ctypes call);
``planes`` (VotePlanes into result planes reused from call to call, what
Go's VotePlanes benchmark does, from Python); ``planes fresh`` (the same
into new tensors every call: their pages fault in on first touch, the
``minflt`` column, counted by getrusage around each call);
``vote_planes -> int8`` and ``vote_update -> fp32`` (the APIs; the DDP hook
runs vote_update; they write n int8 or FP32 values, 8 or 32 times the
packed bytes, so they are not Go's VotePlanes). One thread for torch.
Each figure is the best of single calls (Go: -benchtime 1x, 4 x --count
runs, half before and half after the Python rows; Python: 4 x --count
repetitions): on a shared machine that is the least disturbed one.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Tuple

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from nfabric import _golib, lowbit  # noqa: E402
from nfabric.lowbit import Format, Gate, Layout, Spec  # noqa: E402

SIZES = {"4MiB": 4 << 20, "64MiB": 64 << 20}
MODES = {"binary": (Format.BINARY, Gate()), "ternary": (Format.TERNARY, Gate())}
W = 8


def go_bench(impl: str, count: int) -> Dict[str, float]:
    """MB/s of each run per Go benchmark name."""
    pat = f"^Benchmark(EncodeSigns|VotePlanes)$/^impl={impl}$"  # -bench matches one level per '/'; sizes filtered below
    # One iteration a run (-benchtime 1x), as each Python repetition is one
    # call: the best of either side is then a single undisturbed call.
    r = subprocess.run(["go", "test", "-run", "^$", "-bench", pat, "-benchtime", "1x", "-count", str(count), "./lowbit"],
                       cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"go test -bench failed:\n{r.stdout}\n{r.stderr}")
    out: Dict[str, List[float]] = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^Benchmark(\S+?)-\d+\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) MB/s", line)
        if m and m.group(1).rsplit("size=", 1)[-1] in SIZES:
            out.setdefault(m.group(1).replace(f"/impl={impl}", ""), []).append(float(m.group(2)))
    return out


def timeit(fn: Callable[[], object], nbytes: int, reps: int) -> Tuple[float, float]:
    """MB/s of the fastest of reps calls, and the mean minor page faults
    a call."""
    fn()
    ts, faults = [], []
    for _ in range(reps):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    return nbytes / min(ts) / 1e6, statistics.mean(faults)


def python_rows(reps: int, torch_path: bool) -> Dict[str, Tuple[float, float]]:
    real = _golib.usable
    if torch_path:
        _golib.usable = lambda *t: False
    try:
        out = {}
        for sname, nbytes in SIZES.items():
            g = torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(1))
            out[f"EncodeSigns/size={sname}"] = timeit(lambda: lowbit.encode_signs(g), nbytes, reps)
            src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
            planes = src.view(W, nbytes // W)
            n = 8 * (nbytes // W)
            for mname, (fmt, gate) in MODES.items():
                spec = Spec(W, Layout.WORKER_MAJOR, fmt, gate)
                key = f"VotePlanes/mode={mname}/W=8/size={sname}"
                if not torch_path:
                    res = (torch.zeros(nbytes // W, dtype=torch.uint8), torch.zeros(nbytes // W, dtype=torch.uint8))
                    out[key + " planes"] = timeit(lambda: lowbit._go_vote_planes(planes, n, spec, 1, None, None, res),
                                                  nbytes, reps)
                    out[key + " planes fresh"] = timeit(lambda: lowbit._go_vote_planes(planes, n, spec, 1, None, None),
                                                        nbytes, reps)
                out[key + " int8"] = timeit(lambda: lowbit.vote_planes(planes, n, spec, 1), nbytes, reps)
                dst = torch.empty(n)
                out[key + " fp32"] = timeit(lambda: lowbit.vote_update(planes, n, spec, 0.5, 1, out=dst), nbytes, reps)
        return out
    finally:
        _golib.usable = real


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=3, help="go test -count, and Python repetitions x 2")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    impl = lowbit.kernels()
    if impl == "torch":
        print(f"the Go lowbit library is not available ({_golib.reason()}): only the torch-op rows", file=sys.stderr)
    # Go before and after the Python rows, so that load changes on a shared
    # machine hit both sides. Both sides report their best run (the least
    # disturbed by other processes): Go the fastest of its -count runs,
    # Python the fastest of its repetitions.
    go_impl = impl if impl != "torch" else "go"
    runs = go_bench(go_impl, 2 * args.count)
    lib = python_rows(4 * args.count, False) if impl != "torch" else {}
    tor = python_rows(max(2, args.count), True)
    for k, v in go_bench(go_impl, 2 * args.count).items():
        runs.setdefault(k, []).extend(v)
    go = {k: max(v) for k, v in runs.items()}
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"CPU {cpu}; Go kernels {impl}; torch {torch.__version__}, 1 thread; MB/s = 1e6 B/s as go test counts")
    print(f"  {'kernel':<50} {'Go bench':>9} {'py->Go':>9} {'% of Go':>8} {'minflt':>7} {'torch ops':>10} {'% of Go':>8}")
    rows = []
    for key in sorted({k.split(' ', 1)[0] for k in list(lib) + list(tor)}):
        ref = go.get(key)
        for suffix in ("", " planes", " planes fresh", " int8", " fp32"):
            k = key + suffix
            if k not in lib and k not in tor:
                continue
            (a, fl), (b, _) = lib.get(k, (None, None)), tor.get(k, (None, None))
            rows.append({"kernel": k, "go_mb_s": ref, "python_go_mb_s": a, "python_go_minflt": fl, "python_torch_mb_s": b})

            def f(v):
                return "-" if v is None else f"{v:.0f}"

            def pct(v):
                return "-" if v is None or not ref else f"{100 * v / ref:.0f}%"
            print(f"  {k:<50} {f(ref):>9} {f(a):>9} {pct(a):>8} {f(fl):>7} {f(b):>10} {pct(b):>8}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"cpu": cpu, "impl": impl, "torch": torch.__version__,
                                                       "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
