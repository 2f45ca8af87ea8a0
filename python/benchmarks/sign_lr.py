#!/usr/bin/env python3
"""sign_lr="auto" against fixed low-bit step sizes (the paper's 1e-4 among
them) on three small jobs, through the virtual workers (the hook's
semantics in one process; W workers, each its shard of every batch):

* tutorial: pytorch/examples' DDP tutorial job as examples/torch/
  ddp_tutorial.py runs it (Linear(20, 1), MSE, SGD lr 1e-3, 32 samples a
  worker), 2 workers;
* mlp: a 12-520-512-5 MLP classifier on synthetic data (the tests' model),
  SGD lr 0.05 momentum 0.9, 4 workers;
* resnet: examples/torch/models.ResNet at width 8, one block a stage, on 16x16
  synthetic CIFAR-shaped images, SGD lr 0.05 momentum 0.9, 4 workers.

Each: FP32 throughout, then G-Binary after an FP32 warm-up at each fixed
sign_lr and at "auto". The figure is the training loss averaged over the
last tenth of the steps (lower is better), beside FP32's.

    python3 python/benchmarks/sign_lr.py [--json out.json] [--steps-scale 1.0]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any, Callable, Dict, List

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "torch"))

import nfabric.torch as nt  # noqa: E402
from nfabric.policy import Policy  # noqa: E402

FIXED = [1e-4, 1e-3, 1e-2]


def tutorial_job():
    from ddp_tutorial import SyntheticRegression
    ds = SyntheticRegression(2048)
    w, b = 2, 32

    def model():
        torch.manual_seed(0)
        return torch.nn.Linear(20, 1)

    def batches(epochs: int):
        for e in range(epochs):
            perm = torch.randperm(len(ds), generator=torch.Generator().manual_seed(e))
            for i in range(0, len(ds) - w * b + 1, w * b):
                idx = perm[i:i + w * b]
                yield ds.x[idx], ds.y[idx]
    loss = (lambda m, s: torch.nn.functional.mse_loss(m(s[0]), s[1]))
    return {"model": model, "batches": lambda: batches(10), "loss": loss, "lr": 1e-3, "momentum": 0.0,
            "workers": w, "warmup": 20, "groups": {"head": ["*"]}}


def mlp_job():
    w = 4

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(12, 520), torch.nn.ReLU(), torch.nn.Linear(520, 512),
                                   torch.nn.ReLU(), torch.nn.Linear(512, 5))
    g = torch.Generator().manual_seed(3)
    teacher = torch.randn(12, 5, generator=g)

    def batches():
        gg = torch.Generator().manual_seed(4)
        for _ in range(300):
            x = torch.randn(w * 16, 12, generator=gg)
            yield x, (x @ teacher).argmax(1)
    return {"model": model, "batches": batches, "loss": None, "lr": 0.05, "momentum": 0.9, "workers": w,
            "warmup": 30, "groups": None}


def resnet_job():
    from models import ResNet
    w = 4

    def model():
        torch.manual_seed(0)
        return ResNet(10, width=8, blocks=(1, 1, 1, 1))
    g = torch.Generator().manual_seed(5)
    protos = torch.randn(10, 3, 16, 16, generator=g)

    def batches():
        gg = torch.Generator().manual_seed(6)
        for _ in range(120):
            y = torch.randint(10, (w * 8,), generator=gg)
            yield protos[y] + 0.8 * torch.randn(w * 8, 3, 16, 16, generator=gg), y
    return {"model": model, "batches": batches, "loss": None, "lr": 0.05, "momentum": 0.9, "workers": w,
            "warmup": 20, "groups": None}


def train(job: Dict[str, Any], policy: str, sign_lr: Any) -> Dict[str, Any]:
    torch.set_num_threads(1)
    m = job["model"]()
    ctl = nt.control.Warmup(job["warmup"]) if policy != "fp32" else None
    v = nt.VirtualWorkers(m, job["workers"], Policy.parse(policy, lr=job["lr"], sign_lr=sign_lr),
                          groups=job["groups"], control=ctl, loss_fn=job["loss"])
    opt = torch.optim.SGD(m.parameters(), lr=job["lr"], momentum=job["momentum"])
    v.attach_optimizer(opt)
    losses: List[float] = []
    for b in job["batches"]():
        opt.zero_grad()
        losses.append(v.step(b))
        opt.step()
    k = max(1, len(losses) // 10)
    return {"final_loss": sum(losses[-k:]) / k, "steps": len(losses), "rates": dict(v.auto.rate)}


JOBS: Dict[str, Callable[[], Dict[str, Any]]] = {"tutorial": tutorial_job, "mlp": mlp_job, "resnet": resnet_job}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for name in a.jobs.split(","):
        job = JOBS[name]()
        row = {"job": name, "fp32": train(job, "fp32", 1e-4)["final_loss"]}
        for s in FIXED:
            row[f"{s:g}"] = train(job, "g-binary", s)["final_loss"]
        auto = train(job, "g-binary", "auto")
        row["auto"], row["auto_rates"] = auto["final_loss"], auto["rates"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    cols = ["fp32"] + [f"{s:g}" for s in FIXED] + ["auto"]
    print(f"\nfinal training loss (mean of the last tenth of the steps), G-Binary after an FP32 warm-up")
    print(f"{'job':<10}" + "".join(f"{c:>12}" for c in cols) + "   auto rate(s)")
    for r in rows:
        rates = ", ".join(f"{g} {v:.3g}" for g, v in r["auto_rates"].items())
        print(f"{r['job']:<10}" + "".join(f"{r[c]:12.4f}" for c in cols) + f"   {rates}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
