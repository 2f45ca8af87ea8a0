"""Recording overhead of nfabric.torch's bucket-trace recorder, so the
cost of record= on a training job is a measured figure.

Trains the examples' CIFAR ResNet (width and blocks below) under DDP with
one gloo rank on the CPU, through the NEURON-Fabric hook
(backbone=g-binary, head=fp32), and alternates blocks of steps with
recording off and on (every step of an "on" block recorded). It prints

* the recorder's own time (Recorder.overhead_s: the code the recording
  adds to a step, timed from inside) as a percentage of the recorded
  steps' wall time: the figure the < 1% goal is about;
* the median step time of each arm, and their difference, which on a
  shared machine is dominated by noise (stated beside it).

  /usr/bin/python3 bench/record_overhead.py [--steps 30 --width 32 --image 16 --batch 32]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples" / "torch"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nfabric.torch as nt  # noqa: E402
from models import ResNet  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30, help="steps per arm")
    ap.add_argument("--block", type=int, default=5, help="steps per block of one arm")
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--image", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    store = tempfile.mktemp(prefix="nfabric-bench-store-")
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    tmp = tempfile.mkdtemp(prefix="nfabric-bench-")
    torch.manual_seed(0)
    x = torch.randn(args.batch, 3, args.image, args.image)
    y = torch.randint(10, (args.batch,))
    times = {False: [], True: []}
    overhead = 0.0
    recorded_wall = 0.0
    blocks = args.steps // args.block
    for b in range(2 * blocks + 1):
        on = b % 2 == 1  # a warm-up block first, then off/on alternating
        model = ResNet(10, args.width, (2, 2, 2, 2))
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        rec = dict(record=os.path.join(tmp, f"t{b}.json"), record_steps=list(range(1, args.block + 1))) if on else {}
        fabric = nt.register(ddp, "backbone=g-binary,head=fp32", **rec)
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)
        fabric.attach_optimizer(opt)
        for s in range(args.block + 1):
            t0 = time.perf_counter()
            opt.zero_grad()
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
            opt.step()
            dt = time.perf_counter() - t0
            if s >= 1 and b > 0:  # step 0 builds DDP's buckets
                times[on].append(dt)
                if on:
                    recorded_wall += dt
        if on:
            overhead += fabric.recorder.overhead_s
            assert fabric.recorder.written, "the recording was not written"
    dist.destroy_process_group()
    params = sum(p.numel() for p in model.parameters())
    off, onm = statistics.median(times[False]), statistics.median(times[True])
    print(f"ResNet width {args.width} ({params} parameters), batch {args.batch} of {args.image}x{args.image}, "
          f"1 gloo rank, {len(times[True])} recorded and {len(times[False])} unrecorded steps")
    print(f"recorder's own time: {overhead * 1e3:.3f} ms over {recorded_wall:.2f} s of recorded steps = "
          f"{100 * overhead / recorded_wall:.4f}% of step time")
    print(f"median step: off {off * 1e3:.1f} ms, on {onm * 1e3:.1f} ms ({100 * (onm - off) / off:+.2f}%; "
          f"step-time spread off {100 * statistics.pstdev(times[False]) / off:.1f}%, the noise this difference sits in)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
