#!/usr/bin/env python3
"""CIFAR-10/100 ResNet-18 under NEURON-Fabric aggregation: the paper's
Table 6 (seven layer-aware policies, CIFAR-100, 8 workers).

What it reproduces: Table 6's final accuracy and gradient-traffic columns,
for one policy (--policy SPEC) or all seven (--policy table6), with the
traffic ratio measured from the bytes the aggregation sent; with --fig6
and --serve, Fig. 6's four traces (always-FP32, always-G-Binary, and the
Go control plane's FP32-default admission and G-Binary-default recovery,
with --fault-epochs injecting a degradation window), each with its
low-bit step fraction and traffic. The paper's numbers appear only in
columns labelled "paper".

Modes:
  one process, W virtual workers (the paper's methodology):
    python3 examples/torch/cifar_resnet18.py --data cifar100 --data-dir DIR --device cuda
  DDP, one rank per worker (torchrun; gloo on CPU, nccl on GPUs):
    torchrun --nproc-per-node 8 examples/torch/cifar_resnet18.py --data cifar100 --data-dir DIR
  synthetic data and a small random-init ResNet (what the tests run):
    python3 examples/torch/cifar_resnet18.py --synthetic 128 --width 4 --blocks 1,1 --epochs 1

Data: the CIFAR "binary version" (cifar-10-batches-bin/ or
cifar-100-binary/ under --data-dir, https://www.cs.toronto.edu/~kriz/cifar.html).
Time on one GPU: not measured (the session that wrote this had no GPU);
the script prints each policy's wall time, and the README's PyTorch
section gives the CPU step times we did measure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import time
from typing import Dict, List, Optional, Tuple

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from models import ResNet  # noqa: E402

import nfabric.torch as nt  # noqa: E402
from nfabric.policy import TABLE6, Policy  # noqa: E402

# The paper's Table 6 (CIFAR-100, three seeds): final accuracy (%) and traffic vs FP32.
PAPER_TABLE6 = {
    "FP32 all": ("74.45 ± 0.28", 1.0000), "G-Binary all": ("62.33 ± 0.31", 0.0313),
    "G-Ternary all": ("62.22 ± 0.64", 0.0494), "G-Binary backbone + FP32 head": ("73.11 ± 0.11", 0.0357),
    "G-Ternary backbone + FP32 head": ("73.04 ± 0.32", 0.0537), "FP32 backbone + G-Binary head": ("72.46 ± 0.36", 0.9956),
    "FP32 backbone + G-Ternary head": ("67.26 ± 0.30", 0.9957),
}
# The paper's Fig. 6 / Sec. 8 (CIFAR-10): the G-Binary-default trace keeps
# 81.11% of steps low-bit, at 0.214x FP32 traffic, ending at 90.87 ± 1.04 %.
PAPER_FIG6 = {"G-Binary-default": ("90.87 ± 1.04", 0.214, 0.8111)}
MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


def load_cifar(name: str, root: str) -> Tuple[Tuple[torch.Tensor, torch.Tensor], Tuple[torch.Tensor, torch.Tensor], int]:
    """The CIFAR binary version: uint8 images [N, 3, 32, 32] and labels."""
    base = pathlib.Path(root)
    if name == "cifar10":
        d = base / "cifar-10-batches-bin" if (base / "cifar-10-batches-bin").is_dir() else base
        train, test, rec, off, classes = [d / f"data_batch_{i}.bin" for i in range(1, 6)], [d / "test_batch.bin"], 3073, 0, 10
    else:
        d = base / "cifar-100-binary" if (base / "cifar-100-binary").is_dir() else base
        train, test, rec, off, classes = [d / "train.bin"], [d / "test.bin"], 3074, 1, 100

    def read(files: List[pathlib.Path]) -> Tuple[torch.Tensor, torch.Tensor]:
        parts = []
        for f in files:
            if not f.is_file():
                raise SystemExit(f"cifar_resnet18: {f} not found: download the CIFAR binary version into --data-dir")
            raw = f.read_bytes()
            if len(raw) % rec:
                raise SystemExit(f"cifar_resnet18: {f}: {len(raw)} bytes is not a whole number of {rec}-byte records")
            parts.append(torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, rec))
        t = torch.cat(parts)
        return t[:, rec - 3072:].reshape(-1, 3, 32, 32).clone(), t[:, off].long().clone()

    return read(train), read(test), classes


def synthetic(n: int, classes: int, size: int, seed: int):
    """Learnable stand-in data: a fixed random template per class plus noise."""
    g = torch.Generator().manual_seed(seed)
    templates = torch.rand(classes, 3, size, size, generator=g) * 255

    def make(m: int):
        y = torch.randint(classes, (m,), generator=g)
        x = (0.6 * templates[y] + 0.4 * torch.rand(m, 3, size, size, generator=g) * 255).to(torch.uint8)
        return x, y

    return make(n), make(max(n // 4, classes)), classes


def normalize(x: torch.Tensor) -> torch.Tensor:
    m = torch.tensor(MEAN, device=x.device).view(1, 3, 1, 1)
    s = torch.tensor(STD, device=x.device).view(1, 3, 1, 1)
    return (x.float() / 255 - m) / s


def augment(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """Pad 4 and random crop, random horizontal flip (the Go trainer's Aug)."""
    n, _, h, w = x.shape
    p = torch.nn.functional.pad(x, (4, 4, 4, 4))
    ox, oy = torch.randint(9, (n,), generator=g).tolist(), torch.randint(9, (n,), generator=g).tolist()
    flip = (torch.rand(n, generator=g) < 0.5).tolist()
    out = torch.stack([p[i, :, oy[i]:oy[i] + h, ox[i]:ox[i] + w] for i in range(n)])
    idx = [i for i in range(n) if flip[i]]
    if idx:
        out[idx] = out[idx].flip(3)
    return out


def evaluate(model: torch.nn.Module, data: Tuple[torch.Tensor, torch.Tensor], device: str, batch: int = 500) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(data[1]), batch):
            x = normalize(data[0][i:i + batch].to(device))
            correct += int((model(x).argmax(1) == data[1][i:i + batch].to(device)).sum())
    model.train()
    return 100.0 * correct / len(data[1])


def make_control(kind: Optional[str], args):
    """Fig. 6's controllers: None (a fixed policy), or a session with the
    nfabric serve control plane at --serve: "fp32" (FP32-default
    admission on diagnostics) or "lowbit" (G-Binary-default recovery)."""
    if kind is None:
        return None
    return nt.serve.ServeControl(args.serve, default=kind, diag_every=args.diag_every,
                                 **({"warmup": args.warmup} if args.warmup is not None else {}))


def make_profiler(args, dist_info: Optional[Tuple[int, int]]):
    """torch.profiler over one warm-up step and --profile-steps steps, with
    the tensor shapes recorded (the collectives' sizes); on the last one it
    exports the Chrome trace `nfabric whatif --trace` reads (rank r of a
    distributed run writes TRACE.r.json)."""
    if not args.profile:
        return None
    from torch.profiler import ProfilerActivity, profile, schedule
    if not torch.autograd.kineto_available():
        print("warning: this torch is built without Kineto: its profiler exports no tensor shapes, and "
              "`nfabric whatif` cannot size the collectives (profile with a Kineto build: pip install torch)",
              file=sys.stderr)
    path = args.profile
    if dist_info is not None:
        base, ext = os.path.splitext(path)
        path = f"{base}.{dist_info[0]}{ext or '.json'}"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device.startswith("cuda") else [])
    prof = profile(activities=acts, record_shapes=True, schedule=schedule(wait=0, warmup=1, active=args.profile_steps, repeat=1),
                   on_trace_ready=lambda p: p.export_chrome_trace(path))
    prof.start()
    return prof


def run_policy(label: str, spec: str, args, train, test, classes: int, dist_info: Optional[Tuple[int, int]],
               control_kind: Optional[str] = None) -> Dict:
    torch.manual_seed(args.seed)
    blocks = [int(b) for b in args.blocks.split(",")]
    model = ResNet(classes, args.width, blocks).to(args.device)
    policy = Policy.parse(spec, lr=args.lr, sign_lr=args.sign_lr, layout=args.layout)
    ctl = make_control(control_kind, args)
    rec = dict(record=args.record, record_steps=[int(s) for s in args.record_steps.split(",")],
               record_diagnostics=args.record_diagnostics) if args.record else {}
    if dist_info is None:
        runner = nt.VirtualWorkers(model, args.workers, policy, control=ctl, **rec)
        net, fabric = model, runner
    else:
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        fabric = nt.register(ddp, policy, control=ctl, **rec)
        net, runner = ddp, None
    fault = tuple(int(e) for e in args.fault_epochs.split(":")) if args.fault_epochs else None
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.wd)
    fabric.attach_optimizer(opt)
    n = len(train[1])
    steps_per_epoch = n // args.batch
    if steps_per_epoch < 1:
        raise SystemExit(f"cifar_resnet18: {n} training images is less than one batch of {args.batch}")
    prof = make_profiler(args, dist_info)
    t0 = time.perf_counter()
    loss = math.nan
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed * 1000 + epoch)
        perm = torch.randperm(n, generator=g)
        for s in range(steps_per_epoch):
            idx = perm[s * args.batch:(s + 1) * args.batch]
            x = normalize(augment(train[0][idx], g).to(args.device))
            y = train[1][idx].to(args.device)
            if fault and fault[0] <= epoch < fault[1]:
                # The injected degradation: every label replaced at random.
                y = torch.randint(classes, y.shape, generator=g).to(args.device)
            opt.zero_grad()
            if runner is not None:
                loss = runner.step((x, y))
                runner.observe(loss)
            else:
                rank, world = dist_info
                xs, ys = torch.tensor_split(x, world)[rank], torch.tensor_split(y, world)[rank]
                out = torch.nn.functional.cross_entropy(net(xs), ys)
                out.backward()
                loss = float(out.detach())
                fabric.observe(loss)
            opt.step()
            if prof is not None:
                prof.step()
        if not math.isfinite(loss):
            break
    if prof is not None:
        prof.stop()
    secs = time.perf_counter() - t0
    fabric.close()  # writes a recording cut short by the end of training
    st = fabric.stats.summary()
    paper = PAPER_TABLE6.get(label)
    if label in PAPER_FIG6:
        paper = PAPER_FIG6[label][:2]
    # The paper's accounting (FP32 32, G-Binary 1, G-Ternary 1.58 bits an
    # element) on this model's groups, beside the bytes actually sent.
    bits = {"fp32": 32.0, "g-binary": 1.0, "g-ternary": 1.58}
    acc = sum(fabric.assignment.elements(g) * bits[str(policy.spec(g).rule)] for g in fabric.assignment.groups)
    paper_acct = acc / (32.0 * fabric.assignment.total()) if ctl is None else None  # modes vary under control
    return {"policy": label, "spec": str(policy), "final_loss": loss, "test_accuracy": evaluate(model, test, args.device),
            "traffic_vs_fp32": st["ratio"], "traffic_with_headers": st["ratio_with_headers"],
            "traffic_paper_accounting": paper_acct,
            "low_bit_step_fraction": st["low_bit_step_fraction"], "recovery_events": len(st["recovery_events"]),
            "steps": st["steps"], "seconds": secs, "parameters": sum(p.numel() for p in model.parameters()),
            "head_parameters": fabric.assignment.elements("head"),
            "paper_accuracy": paper[0] if paper and not args.synthetic and args.data == ("cifar10" if label in PAPER_FIG6 else "cifar100") else "-",
            "paper_low_bit_step_fraction": PAPER_FIG6[label][2] if label in PAPER_FIG6 else "-",
            "paper_traffic": paper[1] if paper else "-"}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", choices=["cifar10", "cifar100"], default="cifar100")
    ap.add_argument("--data-dir", help="directory holding the CIFAR binary version")
    ap.add_argument("--synthetic", type=int, default=0, metavar="N", help="N synthetic images instead of CIFAR")
    ap.add_argument("--image", type=int, default=32, help="synthetic image size")
    ap.add_argument("--policy", default="table6", help="a policy spec (e.g. backbone=g-binary,head=fp32) or table6")
    ap.add_argument("--workers", type=int, default=8, help="virtual workers W (ignored under torchrun)")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--batch", type=int, default=128, help="global batch, split into W shards")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--sign-lr", type=float, default=1e-4)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--layout", default="worker-major")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--blocks", default="2,2,2,2")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--fig6", action="store_true", help="Fig. 6's four traces instead of Table 6 (needs --serve)")
    ap.add_argument("--serve", help="address of a running `nfabric serve` (its control plane steers --fig6)")
    ap.add_argument("--warmup", type=int, help="control plane warm-up steps (default: the plane's)")
    ap.add_argument("--diag-every", type=int, default=10, help="steps between cosine diagnostics (--fig6)")
    ap.add_argument("--fault-epochs", help="A:B: random labels in epochs A..B-1 (the injected degradation)")
    ap.add_argument("--record", metavar="TRACE.json",
                    help="record steps --record-steps as a bucket trace for `nfabric whatif` (one policy only)")
    ap.add_argument("--record-steps", default="1,2,3", help="comma-separated steps to record")
    ap.add_argument("--profile", metavar="TRACE.json",
                    help="profile --profile-steps steps (after one warm-up step) with torch.profiler and export its Chrome "
                         "trace for `nfabric whatif --trace` (rank r of a distributed run writes TRACE.r.json)")
    ap.add_argument("--profile-steps", type=int, default=2, help="steps to profile")
    ap.add_argument("--record-diagnostics", action="store_true",
                    help="also measure the FP32 groups' cosine diagnostics on the recorded steps (whatif --plan recorded)")
    args = ap.parse_args(argv)
    if args.record and (args.policy == "table6" or args.fig6):
        ap.error("--record records one run: give one --policy (not table6 or --fig6)")
    if args.profile and (args.policy == "table6" or args.fig6):
        ap.error("--profile profiles one run: give one --policy (not table6 or --fig6)")
    if args.profile_steps < 1:
        ap.error("--profile-steps must be >= 1")

    dist_info = None
    if "WORLD_SIZE" in os.environ:
        backend = "nccl" if args.device.startswith("cuda") else "gloo"
        torch.distributed.init_process_group(backend)
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        if args.device.startswith("cuda"):
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}"
            torch.cuda.set_device(args.device)
        dist_info = (rank, world)
        args.workers = world
    if args.synthetic:
        classes = 10 if args.data == "cifar10" else 100
        train, test, classes = synthetic(args.synthetic, classes, args.image, args.seed)
    else:
        if not args.data_dir:
            ap.error("--data-dir is required without --synthetic")
        train, test, classes = load_cifar(args.data, args.data_dir)
    if args.fig6:
        if not args.serve:
            ap.error("--fig6 needs --serve ADDRESS of a running `nfabric serve`")
        runs = [("always-FP32", "fp32", None), ("always-G-Binary", "g-binary", None),
                ("FP32-default", "g-binary", "fp32"), ("G-Binary-default", "g-binary", "lowbit")]
        results = [run_policy(label, spec, args, train, test, classes, dist_info, kind) for label, spec, kind in runs]
    else:
        policies = list(TABLE6.items()) if args.policy == "table6" else [(args.policy, args.policy)]
        results = [run_policy(label, spec, args, train, test, classes, dist_info) for label, spec in policies]
    if dist_info is None or dist_info[0] == 0:
        src = f"synthetic ({args.synthetic} images {args.image}x{args.image})" if args.synthetic else args.data
        print(f"{src}, ResNet width {args.width} blocks {args.blocks}, W={args.workers}, {args.epochs} epochs")
        print("traffic: measured = bytes sent / FP32 bytes (1 bit per low-bit element, the positional gate needs no "
              "bits); paper acct. = the paper's 32/1/1.58 bits on this model's groups")
        print(f"{'policy':<32} {'acc %':>7} {'paper acc %':>13} {'measured':>9} {'paper acct.':>11} {'paper':>7} "
              f"{'low-bit':>7}")
        for r in results:
            pt = r["paper_traffic"]
            print(f"{r['policy']:<32} {r['test_accuracy']:7.2f} {r['paper_accuracy']:>13} {r['traffic_vs_fp32']:9.4f} "
                  f"{'-' if r['traffic_paper_accounting'] is None else format(r['traffic_paper_accounting'], '.4f'):>11} "
                  f"{pt if pt == '-' else format(pt, '.4f'):>7} "
                  f"{r['low_bit_step_fraction']:7.2f}")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    if dist_info is not None:
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
