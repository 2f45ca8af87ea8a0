#!/usr/bin/env python3
"""The DDP hook on a shaped link: 4 gloo ranks, each in its own network
namespace, joined through veth pairs to one Linux bridge (a switch), every
veth's egress rate-limited by tc (tbf) on both ends, so each rank's uplink
and downlink run at --rates (default 1 Gb/s and 10 Gb/s). Step time per mode
for the ResNet-18-sized model (the paper's CIFAR ResNet-18, 11.17 M
parameters), beside a no-communication run (mode "noop": the compute alone).
The modes' steps run round-robin, so load changes on a shared machine
slow every mode alike; the table's step time is the median over steps of
the slowest rank's.

    sudo /usr/bin/python3 python/benchmarks/shaped_link.py [--rates 1gbit,10gbit] [--steps 3] [--json out.json]

Needs root, `ip netns` and tc's tbf qdisc; without them it says what is
missing and exits 0 without measuring (a benchmark, not a test). The added
latency is none: the links' round trip is measured (TCP, 1-byte ping-pong)
and printed beside each table; where the kernel has sch_netem,
--delay-us adds that much one-way delay per link end. Every rank runs at
nice 19 with one torch thread. Everything it creates (namespaces nf28-K,
bridge nf28br) is removed at the end, also on error.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODES = ["noop", "allreduce_hook", "g-binary", "backbone=g-binary,head=fp32"]
BRIDGE = "nf28br"
SUBNET = "10.28.0"


def ns(k: int) -> str:
    return f"nf28-{k}"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


def can_shape() -> str:
    """'' when this machine can build the shaped network, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and tc)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "needs iproute2's ip and tc"
    probe = "nf28-probe"
    r = sh("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"'ip netns add' does not work here: {r.stderr.strip()}"
    try:
        sh("ip", "netns", "exec", probe, "ip", "link", "add", "p0", "type", "veth", "peer", "name", "p1")
        r = sh("ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "p0", "root", "tbf", "rate", "1gbit",
               "burst", "256kb", "latency", "100ms", check=False)
        if r.returncode != 0:
            return f"tc's tbf qdisc is not available: {r.stderr.strip()}"
    finally:
        sh("ip", "netns", "del", probe, check=False)
    return ""


def teardown(world: int) -> None:
    for k in range(world):
        sh("ip", "netns", "del", ns(k), check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def shape(dev: str, rate: str, delay_us: int, netns: str = "") -> None:
    pre = ["ip", "netns", "exec", netns] if netns else []
    sh(*pre, "tc", "qdisc", "del", "dev", dev, "root", check=False)
    if delay_us:
        sh(*pre, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay", f"{delay_us}us")
        sh(*pre, "tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "tbf", "rate", rate,
           "burst", "256kb", "latency", "100ms")
    else:
        sh(*pre, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "256kb", "latency", "100ms")


def setup(world: int) -> None:
    teardown(world)
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "link", "set", BRIDGE, "up")
    for k in range(world):
        n, host, inner = ns(k), f"nf28h{k}", f"nf28r{k}"
        sh("ip", "netns", "add", n)
        sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
        sh("ip", "link", "set", inner, "netns", n)
        sh("ip", "link", "set", host, "master", BRIDGE)
        sh("ip", "link", "set", host, "up")
        sh("ip", "netns", "exec", n, "ip", "addr", "add", f"{SUBNET}.{k + 1}/24", "dev", inner)
        sh("ip", "netns", "exec", n, "ip", "link", "set", inner, "up")
        sh("ip", "netns", "exec", n, "ip", "link", "set", "lo", "up")


def shape_all(world: int, rate: str, delay_us: int) -> None:
    for k in range(world):
        shape(f"nf28h{k}", rate, delay_us)           # the switch port towards rank k: its downlink
        shape(f"nf28r{k}", rate, delay_us, ns(k))   # rank k's uplink


PING = r"""
import socket, statistics, sys, time
role, addr = sys.argv[1], sys.argv[2]
if role == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((addr, 29529)); s.listen(1)
    c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        b = c.recv(1)
        if not b:
            break
        c.sendall(b)
else:
    for _ in range(50):
        try:
            c = socket.create_connection((addr, 29529)); break
        except OSError:
            time.sleep(0.1)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ts = []
    for _ in range(200):
        t0 = time.perf_counter(); c.sendall(b"x"); c.recv(1); ts.append(time.perf_counter() - t0)
    print(statistics.median(ts) * 1e6)
"""


def rtt_us() -> float:
    """Median TCP round trip between rank 0 and rank 1 through the bridge."""
    srv = subprocess.Popen(["ip", "netns", "exec", ns(0), sys.executable, "-c", PING, "server", f"{SUBNET}.1"])
    try:
        r = sh("ip", "netns", "exec", ns(1), sys.executable, "-c", PING, "client", f"{SUBNET}.1")
        return float(r.stdout.strip())
    finally:
        srv.wait(10)


def run_ranks(world: int, steps: int, batch: int, modes: List[str]) -> Dict:
    with tempfile.TemporaryDirectory() as tmp:
        init = "file://" + os.path.join(tmp, "init")  # the namespaces share the filesystem
        procs = []
        for k in range(world):
            env = dict(os.environ, GLOO_SOCKET_IFNAME=f"nf28r{k}", OMP_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
            cmd = ["ip", "netns", "exec", ns(k), "nice", "-n", "19", sys.executable, str(HERE / "shaped_link.py"),
                   "--rank", str(k), "--world", str(world), "--init", init, "--steps", str(steps),
                   "--batch", str(batch), "--out", tmp, "--modes", ";".join(modes)]
            procs.append(subprocess.Popen(cmd, env=env))
        rcs = [p.wait() for p in procs]
        if any(rcs):
            raise RuntimeError(f"ranks exited with {rcs}")
        return json.load(open(os.path.join(tmp, "ddp.json")))


def print_table(rate: str, rtt: float, res: Dict) -> None:
    rows = {r["mode"]: r for r in res["modes"]}
    base = rows["allreduce_hook"]["step_s_median"]
    comp = rows["noop"]["step_s_median"] if "noop" in rows else None
    ar = res["allreduce_s"]
    print(f"link {rate} per rank and direction (tbf), TCP round trip {rtt:.0f} us; "
          f"FP32 all-reduce alone {ar['wall_s']:.3f} s/step ({ar['cpu_s']:.3f} CPU s per rank)")
    print(f"  {'mode':<30} {'step s':>8} {'allreduce_hook / mode':>22} {'step - noop s':>14} {'in hook s':>10} "
          f"{'hook CPU s':>11} {'wire B/step':>12}")
    for m, r in rows.items():
        st = r["step_s_median"]
        over = "-" if comp is None else f"{st - comp:.3f}"
        hk, cpu = r.get("hook_s_per_step"), r.get("hook_cpu_s_per_step")
        print(f"  {m:<30} {st:8.3f} {base / st:22.2f} {over:>14} {'-' if hk is None else format(hk, '.3f'):>10} "
              f"{'-' if cpu is None else format(cpu, '.3f'):>11} {r['wire_bytes_per_step']:12.0f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1gbit,10gbit", help="tc rates, comma-separated")
    ap.add_argument("--delay-us", type=int, default=0, help="one-way netem delay per link end (needs sch_netem)")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per mode (after one untimed)")
    ap.add_argument("--batch", type=int, default=1, help="images per rank")
    ap.add_argument("--modes", default=";".join(MODES), help="';'-separated modes")
    ap.add_argument("--json")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--init", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    modes = [m for m in args.modes.split(";") if m]
    if args.rank is not None:  # one rank, inside its namespace
        sys.path.insert(0, str(HERE))
        import hook
        hook.rank_main(args.rank, args.world, args.init, args.steps, args.batch, args.out, modes, interleave=True)
        return 0
    why = can_shape()
    if why:
        print(f"shaped_link: skipped: {why}")
        return 0
    out = {"world": args.world, "batch": args.batch, "steps": args.steps, "delay_us": args.delay_us, "links": []}
    try:
        setup(args.world)
        for rate in args.rates.split(","):
            shape_all(args.world, rate, args.delay_us)
            rtt = rtt_us()
            res = run_ranks(args.world, args.steps, args.batch, modes)
            print_table(rate, rtt, res)
            out["links"].append({"rate": rate, "rtt_us": rtt, **res})
    finally:
        teardown(args.world)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
