#!/usr/bin/env python3
"""Measurements of nfabric.torch on this machine (CPU, gloo):

1. encode / vote cost per MB of FP32 gradient (nfabric.lowbit on one
   tensor; --device cuda where a GPU is present);
2. the DDP hook's step time and bytes on the wire per mode against
   PyTorch's allreduce_hook, with --ranks processes and a ResNet-18-sized
   model (the paper's CIFAR ResNet-18, 11.17 M parameters).

    /usr/bin/python3 python/benchmarks/hook.py --ranks 4 --steps 3 --json out.json

Timings on a shared machine are noisy: compare modes within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Dict, List

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "torch"))

MODES = ["allreduce_hook", "fp32", "g-binary", "g-ternary", "backbone=g-binary,head=fp32"]


def noop_hook(_state, bucket):  # unannotated: DDP rejects string annotations
    """No communication at all (mode "noop"): the step's compute alone, the
    floor under every mode's step time."""
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def kernels(device: str, elements: int, reps: int) -> List[Dict]:
    from nfabric import lowbit
    g = torch.randn(elements, device=device)
    mb = elements * 4 / 2**20
    out = []

    def timeit(fn) -> float:
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    t = timeit(lambda: lowbit.encode_signs(g))
    out.append({"op": "encode_signs (incl. NaN/Inf check)", "workers": 1, "ms_per_mb": 1e3 * t / mb})
    for w in (4, 8):
        planes = torch.stack([lowbit.encode_signs(torch.randn(elements, device=device)) for _ in range(w)])
        for fmt in (lowbit.Format.BINARY, lowbit.Format.TERNARY):
            spec = lowbit.Spec(w, lowbit.Layout.WORKER_MAJOR, fmt)
            t = timeit(lambda: lowbit.vote_planes(planes, elements, spec, 0))
            out.append({"op": f"vote_planes {fmt}", "workers": w, "ms_per_mb": 1e3 * t / mb})
        spec = lowbit.Spec(w, lowbit.Layout.ELEMENT_MAJOR, lowbit.Format.BINARY)
        packet = lowbit.planes_to_packet(planes, elements)
        t = timeit(lambda: lowbit.vote_packet(packet, spec, 0))
        out.append({"op": "vote_packet g-binary", "workers": w, "ms_per_mb": 1e3 * t / mb})
    return out


def allreduce_seconds(params: int, reps: int) -> Dict[str, float]:
    """The FP32 path's all-reduce alone: the model's gradients in DDP's
    25 MB buckets, each all-reduced and waited for; the median over reps
    of the slowest rank's wall time, and of this process's CPU time (all
    its threads: gloo's too)."""
    cap = 25 * 2**20 // 4
    bufs = [torch.ones(min(cap, params - o)) for o in range(0, params, cap)]
    ts, cs = [], []
    for _ in range(reps + 1):
        dist.barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        for b in bufs:
            dist.all_reduce(b)
        t = torch.tensor([time.perf_counter() - t0, time.process_time() - c0])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        ts.append(float(t[0]))
        cs.append(float(t[1]))
    return {"wall_s": statistics.median(ts[1:]), "cpu_s": statistics.median(cs[1:])}


def rank_main(rank: int, world: int, init: str, steps: int, batch: int, outdir: str,
              modes: List[str] = MODES, interleave: bool = False, stem: str = "cifar", image: int = 32,
              warmup: int = 1) -> None:
    """One rank: each mode's DDP model timed over steps (after warmup
    untimed steps; the first builds the buckets); the step time is the
    slowest rank's, and so is the step's CPU time (the process's, all
    threads: compute, the hook and gloo's). interleave runs the modes' steps round-robin (all
    models alive at once), so a machine whose load drifts slows every
    mode alike. stem and image choose the ResNet-18 (models.ResNet's
    stem, square inputs of image pixels)."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    runs = []

    def run_steps(r: Dict, k: int) -> None:
        for s in range(r["done"], r["done"] + k):
            dist.barrier()
            t0, c0 = time.perf_counter(), time.process_time()
            r["opt"].zero_grad()
            torch.nn.functional.cross_entropy(r["ddp"](r["x"]), r["y"]).backward()
            r["opt"].step()
            t = torch.tensor([time.perf_counter() - t0, time.process_time() - c0])
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            if s >= warmup:
                r["times"].append(float(t[0]))
                r["cpus"].append(float(t[1]))
            elif s == warmup - 1 and r["fabric"] is not None:
                r["hook0"] = r["fabric"].stats.hook_seconds
                r["wait0"] = r["fabric"].stats.wait_seconds
                r["cpu0"] = r["fabric"].stats.hook_cpu_seconds
                r["steps0"] = r["fabric"].stats.steps
                r["bytes0"] = dict(r["fabric"].stats.bytes)
        r["done"] += k

    res = []
    for mode in modes:
        runs.append(_mode_run(mode, rank, batch, stem, image))
        if not interleave:
            run_steps(runs[-1], steps + warmup)
            res.append(_mode_row(runs.pop(), steps))
    if interleave:
        for s in range(steps + warmup):
            for r in runs:
                run_steps(r, 1)
        res = [_mode_row(r, steps) for r in runs]
    params = res[0]["parameters"]
    ar = allreduce_seconds(params, steps)
    if rank == 0:
        with open(os.path.join(outdir, "ddp.json"), "w") as f:
            json.dump({"modes": res, "allreduce_s": ar, "interleaved": interleave, "stem": stem, "image": image,
                       "warmup": warmup}, f)
    dist.destroy_process_group()


def _mode_run(mode: str, rank: int, batch: int, stem: str = "cifar", image: int = 32) -> Dict:
    import nfabric.torch as nt
    from models import resnet18
    from nfabric.policy import Policy
    torch.manual_seed(0)
    model = resnet18(10, stem)
    fabric = None
    if mode.startswith("fsdp:"):
        # FSDP2: each residual block a unit, then the root; "fsdp:own" is
        # FSDP2's own reduce-scatter, "fsdp:POLICY" nfabric's.
        from torch.distributed.fsdp import fully_shard
        for m in model.modules():
            if type(m).__name__ == "BasicBlock":
                fully_shard(m)
        fully_shard(model)
        if mode != "fsdp:own":
            fabric = nt.register(model, Policy.parse(mode[5:]))
        g = torch.Generator().manual_seed(rank)
        return {"mode": mode, "model": model, "ddp": model, "fabric": fabric, "done": 0, "times": [], "cpus": [],
                "hook0": 0.0, "wait0": 0.0, "cpu0": 0.0, "steps0": 0, "bytes0": {},
                "opt": torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                "x": torch.randn(batch, 3, image, image, generator=g), "y": torch.randint(10, (batch,), generator=g)}
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if mode == "allreduce_hook":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    elif mode == "noop":
        ddp.register_comm_hook(None, noop_hook)
    else:
        fabric = nt.register(ddp, Policy.parse(mode))
    g = torch.Generator().manual_seed(rank)
    return {"mode": mode, "model": model, "ddp": ddp, "fabric": fabric, "done": 0, "times": [], "cpus": [], "hook0": 0.0,
            "wait0": 0.0, "cpu0": 0.0, "steps0": 0, "bytes0": {},
            "opt": torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
            "x": torch.randn(batch, 3, image, image, generator=g), "y": torch.randint(10, (batch,), generator=g)}


def _mode_row(r: Dict, steps: int) -> Dict:
    """A mode's timings, and its bytes per step and rank on the wire split
    by collective: fp32_wire (all-reduced: FP32 groups, allreduce_hook's
    buckets) and lowbit_wire (the planes, all-gathered), from the hook's
    own counts over the timed steps."""
    row = {"mode": r["mode"], "step_s_median": statistics.median(r["times"]), "step_s": r["times"],
           "step_cpu_s_median": statistics.median(r["cpus"]), "step_cpu_s": r["cpus"],
           "parameters": sum(p.numel() for p in r["model"].parameters())}
    if r["mode"].startswith("fsdp:"):
        # FSDP2 also all-gathers the parameters in forward and again in
        # backward (reshard after forward): 2 x 4 B an element, gathered.
        row["fsdp"] = True
        row["gathered_param_bytes_per_step"] = 2 * 4.0 * row["parameters"]
    fabric = r["fabric"]
    if fabric is not None:
        st = fabric.stats.summary()
        per = st["steps"]
        timed = st["steps"] - r["steps0"]
        fp32_b = low_b = 0
        for key, b in fabric.stats.bytes.items():
            b -= r["bytes0"].get(key, 0)
            if key[1] == "fp32":
                fp32_b += b
            else:
                low_b += b
        row.update({"wire_bytes_per_step": st["bytes"] / per, "dense_bytes_per_step": st["dense_bytes"] / per,
                    "header_bytes_per_step": st["header_bytes"] / per, "ratio": st["ratio"],
                    "ratio_with_headers": st["ratio_with_headers"],
                    "fp32_wire_bytes_per_step": fp32_b / timed, "lowbit_wire_bytes_per_step": low_b / timed,
                    "hook_s_per_step": (st["hook_seconds"] - r["hook0"]) / steps,
                    "hook_own_s_per_step": (st["hook_seconds"] - r["hook0"] - st["wait_seconds"] + r["wait0"]) / steps,
                    "hook_cpu_s_per_step": (st["hook_cpu_seconds"] - r["cpu0"]) / steps})
    elif r["mode"] == "noop":
        row.update({"wire_bytes_per_step": 0.0, "ratio": 0.0, "fp32_wire_bytes_per_step": 0.0,
                    "lowbit_wire_bytes_per_step": 0.0})
    else:
        row.update({"wire_bytes_per_step": 4.0 * row["parameters"], "ratio": 1.0,
                    "fp32_wire_bytes_per_step": 4.0 * row["parameters"], "lowbit_wire_bytes_per_step": 0.0})
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per mode (after one untimed)")
    ap.add_argument("--batch", type=int, default=4, help="images per rank")
    ap.add_argument("--stem", default="cifar", choices=["cifar", "imagenet"],
                    help="ResNet-18 stem: the paper's CIFAR one or torchvision's (see examples/torch/models.py)")
    ap.add_argument("--image", type=int, default=32, help="input size in pixels")
    ap.add_argument("--elements", type=int, default=1 << 22, help="elements for the kernel timings")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--skip-ddp", action="store_true")
    ap.add_argument("--interleave", action="store_true", help="run the modes' steps round-robin")
    ap.add_argument("--modes", default=";".join(MODES),
                    help="';'-separated modes: policies, allreduce_hook, noop (no communication)")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"torch": torch.__version__, "threads_per_rank": 1, "device": args.device}
    out["kernels"] = kernels(args.device, args.elements, args.reps)
    print(f"nfabric.lowbit on {args.device}, {args.elements} elements ({args.elements * 4 / 2**20:.0f} MB FP32), "
          f"median of {args.reps}:")
    for k in out["kernels"]:
        print(f"  {k['op']:<38} W={k['workers']:<2} {k['ms_per_mb']:8.3f} ms/MB")
    if not args.skip_ddp:
        with tempfile.TemporaryDirectory() as tmp:
            modes = [m for m in args.modes.split(";") if m]
            mp.spawn(rank_main, args=(args.ranks, "file://" + os.path.join(tmp, "init"), args.steps, args.batch, tmp, modes,
                                        args.interleave, args.stem, args.image),
                     nprocs=args.ranks, join=True)
            got = json.load(open(os.path.join(tmp, "ddp.json")))
            out["ddp"], out["fp32_allreduce_s"] = got["modes"], got["allreduce_s"]
        base = next((r["step_s_median"] for r in out["ddp"] if r["mode"] == "allreduce_hook"), out["ddp"][0]["step_s_median"])
        print(f"DDP over gloo, {args.ranks} ranks x 1 thread, ResNet-18 ({args.stem} stem, {out['ddp'][0]['parameters']} "
              f"parameters, {args.image}x{args.image} inputs), "
              f"batch {args.batch}/rank, median of {args.steps} steps:")
        print(f"  {'mode':<30} {'step s':>8} {'vs allreduce_hook':>18} {'in hook s':>10} {'own s':>7} {'CPU s':>7} "
              f"{'wire B/step':>12} {'vs FP32':>9} {'+headers':>9}")

        def f3(v):
            return "-" if v is None else format(v, ".3f")
        for r in out["ddp"]:
            hk, own, cpu = r.get("hook_s_per_step"), r.get("hook_own_s_per_step"), r.get("hook_cpu_s_per_step")
            print(f"  {r['mode']:<30} {r['step_s_median']:8.3f} {r['step_s_median'] / base:18.2f} "
                  f"{f3(hk):>10} {f3(own):>7} {f3(cpu):>7} "
                  f"{r['wire_bytes_per_step']:12.0f} {r['ratio']:9.5f} "
                  f"{r.get('ratio_with_headers', 1.0):9.5f}")
        ar = out["fp32_allreduce_s"]
        print(f"  the FP32 path's all-reduce alone (the gradients in 25 MB buckets, waited): "
              f"{ar['wall_s']:.3f} s/step wall, {ar['cpu_s']:.3f} CPU s per rank")
        print("  in hook: wall time in the hook on rank 0; own: that less the time blocked in the hook's own "
              "collectives (transfer and waiting for slower ranks); CPU: the hook thread's CPU time")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
