#!/usr/bin/env python3
"""The DDP hook on a shaped link: 4 gloo ranks, each in its own network
namespace, joined through veth pairs to one Linux bridge (a switch), every
veth's egress rate-limited by tc (tbf) on both ends, so each rank's uplink
and downlink run at --rates (default 1 Gb/s and 10 Gb/s). Step time per mode
beside a no-communication run (mode "noop": the compute alone) for two
ResNet-18s of (nearly) the same parameter count, so the same bytes on the
wire, and different compute (--models):

* cifar: the paper's CIFAR ResNet-18 (3x3 stride-1 stem, no max-pool),
  32x32 inputs, 11,173,962 parameters with 10 classes;
* imagenet: torchvision's ResNet-18 layout (7x7 stride-2 stem, 3x3
  stride-2 max-pool), 10 classes, 11,181,642 parameters, 64x64 inputs
  (the smallest size at which batch 1 leaves layer4 2x2, enough for
  BatchNorm to train); its stages run on a quarter of the cifar model's
  rows and columns, so compute hides less of the link.

The modes' steps run round-robin, so load changes on a shared machine
slow every mode alike; the table's step time is the median over steps of
the slowest rank's. Beside each step: its bound, noop's step plus the
time the mode's bytes take at the rate (each rank sends 2(W-1)/W of the
all-reduced bytes, ring all-reduce, and W-1 times its gathered planes,
ring all-gather; TCP/IPv4 with timestamps in 1500-byte frames, 1448
payload bytes per 1514 bytes tbf counts), with no overlap of compute
and transfer (DDP overlaps them, so a step can come in under it).
FSDP2 modes ("fsdp:own", FSDP2's own reduce-scatter; "fsdp:POLICY", nfabric's
per unit; each residual block a unit) are compared with "fsdp:own"; their
bound counts (W-1)/W of the parameters all-gathered twice (forward and
backward), of the dense gradient reduce-scattered and of the planes
exchanged.

    sudo /usr/bin/python3 python/benchmarks/shaped_link.py [--models cifar,imagenet] [--rates 1gbit,10gbit]
        [--steps 5] [--warmup 2] [--json out.json]

Needs root, `ip netns` and tc's tbf qdisc; without them it says what is
missing and exits 0 without measuring (a benchmark, not a test). The added
latency is none: the links' round trip is measured (TCP, 1-byte ping-pong)
and printed beside each table; where the kernel has sch_netem,
--delay-us adds that much one-way delay per link end. Every rank runs at
nice --nice (default 19) with one torch thread. Everything it creates (namespaces nf28-K,
bridge nf28br) is removed at the end, also on error.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MODES = ["noop", "allreduce_hook", "fp32", "g-binary", "backbone=g-binary,head=fp32",
         "fsdp:own", "fsdp:g-binary", "fsdp:backbone=g-binary,head=fp32"]
# --models: name -> (models.ResNet stem, default input size in pixels).
MODELS = {"cifar": ("cifar", 32), "imagenet": ("imagenet", 64)}
# tc's rate units in bits per second (tc's own "bps" family means bytes
# per second: refused here, so a rate cannot be read 8x off).
RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
MTU = 1500
TCP_PAYLOAD = MTU - 20 - 32  # IPv4 header, TCP header with timestamps
FRAME = MTU + 14             # what tbf counts: the Ethernet header too
BRIDGE = "nf28br"
SUBNET = "10.28.0"


def parse_rate(s: str) -> float:
    """A tc rate ("1gbit", "250mbit", "10gbit") in bits per second."""
    t = s.strip().lower()
    for unit in sorted(RATE_UNITS, key=len, reverse=True):
        if t.endswith(unit):
            num = t[:-len(unit)]
            try:
                v = float(num)
            except ValueError:
                break
            if not (v > 0) or v == float("inf"):
                raise ValueError(f"rate {s!r} must be positive and finite")
            return v * RATE_UNITS[unit]
    raise ValueError(f"rate {s!r}: want a number and one of {', '.join(RATE_UNITS)} (tc's bit units)")


def sent_bytes(allreduced: float, gathered: float, world: int) -> float:
    """Bytes each rank sends per step: 2(W-1)/W of its all-reduced bytes
    (ring all-reduce: W-1 reduce-scatter and W-1 all-gather steps of 1/W)
    and W-1 times its gathered bytes (ring all-gather)."""
    return 2 * (world - 1) / world * allreduced + (world - 1) * gathered


def wire_seconds(payload: float, rate_bps: float) -> float:
    """Time payload bytes of TCP take through tbf at rate_bps: whole frames
    of FRAME bytes per TCP_PAYLOAD bytes of payload."""
    frames = -(-int(round(payload)) // TCP_PAYLOAD)
    return frames * FRAME * 8 / rate_bps


def fsdp_sent_bytes(row: Dict, world: int) -> float:
    """Bytes each FSDP2 rank sends per step: (W-1)/W of the parameters it
    all-gathers (forward and backward), of the dense gradient it
    reduce-scatters (ring) and of the planes or codes it exchanges with
    the other shards (all-to-all)."""
    return (world - 1) / world * (row["gathered_param_bytes_per_step"] + row["fp32_wire_bytes_per_step"] +
                                  row["lowbit_wire_bytes_per_step"])


def row_sent_bytes(row: Dict, world: int) -> float:
    if row.get("fsdp"):
        return fsdp_sent_bytes(row, world)
    return sent_bytes(row["fp32_wire_bytes_per_step"], row["lowbit_wire_bytes_per_step"], world)


def bound_seconds(noop_s: float, row: Dict, world: int, rate_bps: float) -> float:
    """noop's step plus the transfer time of the mode's bytes at the rate,
    without overlap: what the step would take if only the link added."""
    return noop_s + wire_seconds(row_sent_bytes(row, world), rate_bps)


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


def burst_bytes(rate_bps: float) -> int:
    """tbf's bucket: 2 ms of the rate, at least 256 KiB (a fixed 256 KiB
    bucket caps a 10 Gb/s link below its rate at the kernel's timer
    resolution)."""
    return max(256 << 10, int(rate_bps / 8 * 0.002))


def shape(dev: str, rate: str, delay_us: int, netns: str = "") -> None:
    pre = ["ip", "netns", "exec", netns] if netns else []
    burst = str(burst_bytes(parse_rate(rate)))
    sh(*pre, "tc", "qdisc", "del", "dev", dev, "root", check=False)
    if delay_us:
        sh(*pre, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay", f"{delay_us}us")
        sh(*pre, "tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "tbf", "rate", rate,
           "burst", burst, "latency", "100ms")
    else:
        sh(*pre, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", burst, "latency", "100ms")


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


def shape_all(world: int, rate: str, delay_us: int) -> str:
    """Shapes every link end; returns rank 0's uplink qdisc as tc shows it."""
    for k in range(world):
        shape(f"nf28h{k}", rate, delay_us)           # the switch port towards rank k: its downlink
        shape(f"nf28r{k}", rate, delay_us, ns(k))   # rank k's uplink
    return sh("ip", "netns", "exec", ns(0), "tc", "qdisc", "show", "dev", "nf28r0").stdout.strip()


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


def run_ranks(world: int, steps: int, warmup: int, batch: int, modes: List[str], stem: str, image: int,
              nice: int) -> Dict:
    with tempfile.TemporaryDirectory() as tmp:
        init = "file://" + os.path.join(tmp, "init")  # the namespaces share the filesystem
        procs = []
        for k in range(world):
            env = dict(os.environ, GLOO_SOCKET_IFNAME=f"nf28r{k}", OMP_NUM_THREADS="1",
                       PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
            cmd = ["ip", "netns", "exec", ns(k), "nice", "-n", str(nice), sys.executable, str(HERE / "shaped_link.py"),
                   "--rank", str(k), "--world", str(world), "--init", init, "--steps", str(steps),
                   "--warmup", str(warmup), "--batch", str(batch), "--out", tmp, "--modes", ";".join(modes),
                   "--stem", stem, "--image", str(image)]
            procs.append(subprocess.Popen(cmd, env=env))
        rcs = [p.wait() for p in procs]
        if any(rcs):
            raise RuntimeError(f"ranks exited with {rcs}")
        return json.load(open(os.path.join(tmp, "ddp.json")))


def table(model: str, rate: str, rtt: float, res: Dict, world: int) -> List[str]:
    """The printed table of one model and rate: step, bound, speedups."""
    rows = {r["mode"]: r for r in res["modes"]}
    bps = parse_rate(rate)
    base = rows["allreduce_hook"]["step_s_median"] if "allreduce_hook" in rows else None
    fbase = rows["fsdp:own"]["step_s_median"] if "fsdp:own" in rows else None
    noop = rows["noop"]["step_s_median"] if "noop" in rows else None
    ar = res["allreduce_s"]
    out = [f"{model} ResNet-18 ({rows[next(iter(rows))]['parameters']} parameters, {res['image']}x{res['image']} inputs), "
           f"link {rate} per rank and direction (tbf), TCP round trip {rtt:.0f} us; "
           f"FP32 all-reduce alone {ar['wall_s']:.3f} s/step ({ar['cpu_s']:.3f} CPU s per rank)",
           f"  {'mode':<34} {'step s':>8} {'bound s':>8} {'baseline / mode':>16} {'step - noop s':>14} "
           f"{'step CPU s':>11} {'hook CPU s':>11} {'sent B/step':>12}"]
    for m, r in rows.items():
        st = r["step_s_median"]
        bound = "-" if noop is None else format(bound_seconds(noop, r, world, bps), ".3f")
        over = "-" if noop is None else f"{st - noop:.3f}"
        cpu = r.get("hook_cpu_s_per_step")
        sent = row_sent_bytes(r, world)
        scpu = r.get("step_cpu_s_median")
        b = fbase if m.startswith("fsdp:") else base  # FSDP2 modes against FSDP2's own reduce-scatter
        out.append(f"  {m:<34} {st:8.3f} {bound:>8} {'-' if b is None else format(b / st, '.2f'):>16} {over:>14} "
                   f"{'-' if scpu is None else format(scpu, '.3f'):>11} {'-' if cpu is None else format(cpu, '.3f'):>11} "
                   f"{sent:12.0f}")
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The command line, checked: a bad rate, model, count or mode list is
    a usage error (exit status 2) naming the flag."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1gbit,10gbit", help="tc rates, comma-separated (bit, kbit, mbit, gbit)")
    ap.add_argument("--models", default="cifar,imagenet", help=f"comma-separated, of: {', '.join(MODELS)}")
    ap.add_argument("--image", type=int, help="input size in pixels for every model (default: the model's)")
    ap.add_argument("--delay-us", type=int, default=0, help="one-way netem delay per link end (needs sch_netem)")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per mode (after the warm-up)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per mode first (DDP builds its buckets)")
    ap.add_argument("--batch", type=int, default=1, help="images per rank")
    ap.add_argument("--modes", default=";".join(MODES), help="';'-separated modes (policies, allreduce_hook, noop)")
    ap.add_argument("--nice", type=int, default=19, help="the ranks' niceness (19: yield to everything else; "
                    "0: compete as equals, on a shared machine)")
    ap.add_argument("--json", help="write every figure here too")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--init", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--stem", default="cifar", choices=sorted({v[0] for v in MODELS.values()}), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        args.rate_list = [r.strip() for r in args.rates.split(",") if r.strip()]
        for r in args.rate_list:
            parse_rate(r)
    except ValueError as e:
        ap.error(f"--rates: {e}")
    if not args.rate_list:
        ap.error("--rates: no rate given")
    args.model_list = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.model_list if m not in MODELS]
    if unknown or not args.model_list:
        ap.error(f"--models: unknown model {', '.join(unknown) or '(none given)'} (want of: {', '.join(MODELS)})")
    for flag, v, lo in (("--world", args.world, 2), ("--steps", args.steps, 1), ("--warmup", args.warmup, 1),
                        ("--batch", args.batch, 1), ("--delay-us", args.delay_us, 0), ("--nice", args.nice, 0)):
        if v < lo:
            ap.error(f"{flag} {v}: want at least {lo}")
    if args.nice > 19:
        ap.error(f"--nice {args.nice}: want at most 19")
    if args.image is not None and args.image < 8:
        ap.error(f"--image {args.image}: want at least 8 pixels")
    args.mode_list = [m for m in args.modes.split(";") if m]
    if not args.mode_list:
        ap.error("--modes: no mode given")
    if args.json and not os.path.isdir(os.path.dirname(os.path.abspath(args.json))):
        ap.error(f"--json {args.json}: its directory does not exist")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.rank is not None:  # one rank, inside its namespace
        sys.path.insert(0, str(HERE))
        import hook
        hook.rank_main(args.rank, args.world, args.init, args.steps, args.batch, args.out, args.mode_list,
                       interleave=True, stem=args.stem, image=args.image or 32, warmup=args.warmup)
        return 0
    why = can_shape()
    if why:
        print(f"shaped_link: skipped: {why}")
        return 0
    out = {"world": args.world, "batch": args.batch, "steps": args.steps, "warmup": args.warmup, "nice": args.nice,
           "delay_us": args.delay_us, "argv": sys.argv, "runs": []}
    try:
        setup(args.world)
        for model in args.model_list:
            stem, image = MODELS[model]
            image = args.image or image
            for rate in args.rate_list:
                qdisc = shape_all(args.world, rate, args.delay_us)
                print(f"tc on rank 0's uplink: {qdisc}")
                rtt = rtt_us()
                t0, load0 = time.time(), os.getloadavg()
                res = run_ranks(args.world, args.steps, args.warmup, args.batch, args.mode_list, stem, image,
                                args.nice)
                print("\n".join(table(model, rate, rtt, res, args.world)), flush=True)
                print(f"  load average (1 min) {load0[0]:.1f} before, {os.getloadavg()[0]:.1f} after; step CPU: the "
                      "slowest rank's process CPU time per step (all its threads)", flush=True)
                out["runs"].append({"model": model, "rate": rate, "rate_bps": parse_rate(rate), "rtt_us": rtt, "qdisc": qdisc,
                                    "started": t0, "load_avg_start": load0, "load_avg": os.getloadavg(), **res})
    finally:
        teardown(args.world)
    if args.json:
        tmp = args.json + ".tmp"
        pathlib.Path(tmp).write_text(json.dumps(out, indent=2))
        os.replace(tmp, args.json)  # no half-written file
    return 0


if __name__ == "__main__":
    sys.exit(main())
