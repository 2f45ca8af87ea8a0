#!/usr/bin/env python3
"""W = 8 write+aggregate through nfabric serve from Python: the message
path (payload bytes in a Transact's Write, the aggregate in its reply)
against the shared-memory path (payload stored into a SharedBuffer, one
Transact of shared_write + shared_read, the aggregate read from the
buffer), in the same run against the same server. The figures match
BenchmarkWriteAggregate in serve/bench_test.go: one batch is 4096 lines of
sign packets (256 KiB) written into a G-Binary region and read back; MB/s
counts payload bytes both ways (512 KiB per batch), per wall second and
per CPU second of client and server together.

Rows ``grpc`` and ``shared`` send one prebuilt request a batch (the
floor of each path: the host's stores, one call). Rows ``backend-em`` and
``backend-wm`` run what the DDP hook's ``backend="controller"`` runs for
one W = 8 tensor of the same payload (262144 elements: 4096 element-major
packet lines, or 8 x 512 worker-major plane lines): ControllerBackend
.aggregate on the shared path (mode latch, layout change, stores, one
Transact, decoding the aggregate to int8 updates).

    /usr/bin/python3 python/benchmarks/serve_shm.py [--cli path/to/nfabric] [--reps 200] [--json out.json]

It starts `nfabric serve` on a temporary socket (--cli, or a build of
this checkout), so that the server's CPU time is measured too. Timings on a shared machine are noisy:
compare the two paths within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

LINES = 4096


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(path: str, once, reps: int, server_pid: int) -> dict:
    """CPU and wall time of reps calls of once(), client and server."""
    cpu0, scpu0, t0 = time.process_time(), cpu_of(server_pid), time.perf_counter()
    for _ in range(reps):
        once()
    wall = time.perf_counter() - t0
    ccpu, scpu = time.process_time() - cpu0, cpu_of(server_pid) - scpu0
    cpu = ccpu + scpu
    nbytes = 2 * LINES * 64 * reps
    return {"path": path, "reps": reps, "ms_per_batch": 1e3 * wall / reps, "mb_per_s": nbytes / wall / 1e6,
            "mb_per_cpu_s": nbytes / cpu / 1e6, "cpu_ms_per_batch": 1e3 * cpu / reps,
            "client_cpu_ms_per_batch": 1e3 * ccpu / reps, "server_cpu_ms_per_batch": 1e3 * scpu / reps}


def backend(layout: str, sock: str, reps: int, server_pid: int) -> dict:
    """ControllerBackend.aggregate of one W = 8 G-Binary tensor of 256 KiB
    of payload, shared path; checked against lowbit's vote first."""
    import torch
    from nfabric import lowbit
    from nfabric.lowbit import Format, Layout, Spec
    from nfabric.torch import serve
    from nfabric.torch.groups import Assignment, ParamInfo
    n, w = LINES * 64, 8
    lay = Layout.ELEMENT_MAJOR if layout == "em" else Layout.WORKER_MAJOR
    params = [ParamInfo("p", torch.nn.Parameter(torch.zeros(n)), "g", 0)]
    asg = Assignment(groups=["g"], params=params, patterns={"g": ["*"]})
    planes = torch.randint(0, 256, (w, n // 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    be = serve.ControllerBackend(serve.Client(sock), asg, w, lay, {"g": lowbit.PAPER_GATE}, shared=True)
    items = [(params[0], planes, Format.BINARY)]
    want = lowbit.vote_planes(planes, n, Spec(w, Layout.WORKER_MAJOR, Format.BINARY))
    if not torch.equal(be.aggregate(items, 0)[0], want):
        raise SystemExit(f"backend-{layout}: the aggregate is not lowbit's G-Binary vote")
    step = [0]

    def once():
        step[0] += 1
        be.aggregate(items, step[0])
    r = measure(f"backend-{layout}", once, reps, server_pid)
    be.close()
    be.c.close()
    return r


def run(path: str, c, buf, payload, reps: int, server_pid: int) -> dict:
    import torch
    pb = c.cpb
    d = c.call(c.controller.OpenDevice, pb.OpenDeviceRequest(capacity_bytes=LINES * 64), "OpenDevice").device
    c.call(c.controller.MapRegion, pb.MapRegionRequest(device=d, size=LINES * 64, mode=pb.MODE_G_BINARY), "MapRegion")
    if path == "grpc":
        data = payload.numpy().tobytes()
        req = pb.TransactRequest(device=d, ops=[pb.Op(write=pb.Write(addr=0, data=data)), pb.Op(read=pb.Read(addr=0, lines=LINES))])

        def once():
            r = c.controller.Transact(req, timeout=c.timeout)
            return torch.frombuffer(bytearray(r.data), dtype=torch.uint8)
    else:
        t = buf.tensor()
        mem, src = t.numpy(), payload.numpy()
        req = pb.TransactRequest(device=d, ops=[buf.write_op(0, 0, LINES), buf.read_op(LINES * 64, 0, LINES)])

        def once():
            mem[:LINES * 64] = src  # the host's stores (numpy: a memcpy, no torch dispatch)
            c.controller.Transact(req, timeout=c.timeout)
            return t[LINES * 64:]
    agg = once()  # warm up, and check the aggregate against popcount
    ones = torch.tensor([bin(b).count("1") for b in range(256)], dtype=torch.uint8)
    if not torch.equal(agg, ones[payload.long()]):
        raise SystemExit(f"{path}: the aggregate is not the popcount of the packets")
    del agg
    r = measure(path, once, reps, server_pid)
    c.call(c.controller.CloseDevice, pb.CloseDeviceRequest(device=d), "CloseDevice")
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", help="the nfabric binary (default: go build this checkout)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if a.reps <= 0:
        ap.error(f"--reps {a.reps}: want a positive count")
    import torch
    from nfabric.torch import serve
    tmp = tempfile.mkdtemp(prefix="nfabric-shm-")
    cli = a.cli
    if cli is None:
        cli = os.path.join(tmp, "nfabric")
        subprocess.run(["go", "build", "-o", cli, "./cmd/nfabric"], cwd=ROOT, check=True)
    sock = os.path.join(tmp, "nf.sock")
    proc = subprocess.Popen([cli, "serve", "--socket", sock], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock) or proc.poll() is not None:
            break
        time.sleep(0.05)
    pid = proc.pid
    try:
        c = serve.Client(sock)
        buf = serve.SharedBuffer(c, 2 * LINES * 64)
        g = torch.Generator().manual_seed(1)
        payload = torch.randint(0, 256, (LINES * 64,), dtype=torch.uint8, generator=g)
        rows = [run(p, c, buf, payload, a.reps, pid) for p in ("grpc", "shared")]
        rows += [backend(lay, sock, a.reps, pid) for lay in ("em", "wm")]
        print(f"{'path':<10} {'ms/batch':>9} {'MB/s':>8} {'MB/CPU-s':>9} {'CPU ms/batch':>13} {'client':>7} {'server':>7}")
        for r in rows:
            print(f"{r['path']:<10} {r['ms_per_batch']:9.2f} {r['mb_per_s']:8.1f} {r['mb_per_cpu_s']:9.1f} {r['cpu_ms_per_batch']:13.2f} {r['client_cpu_ms_per_batch']:7.2f} {r['server_cpu_ms_per_batch']:7.2f}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"lines": LINES, "workers": 8, "rows": rows}, f, indent=1)
        buf.close()
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
