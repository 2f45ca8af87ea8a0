"""The per-rank side of the DDP tests: each scenario trains a small model
for a few steps under DistributedDataParallel (gloo, CPU) and returns what
every step produced, for the test process to compare with a
single-process virtual-worker run and with PyTorch's own allreduce_hook."""

from __future__ import annotations

import os
import pickle
import traceback
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import nfabric.torch as nt
from nfabric.torch import control

STEPS = 4
PER_RANK = 6
LR, SIGN_LR = 0.05, 0.01


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    # The middle layer (266,240 weights) is bigger than DDP's 1 MB first
    # bucket, so the model spans several buckets after DDP rebuilds them.
    return torch.nn.Sequential(torch.nn.Linear(12, 520), torch.nn.ReLU(), torch.nn.Linear(520, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 5))


def batch(step: int, workers: int):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(workers * PER_RANK, 12, generator=g)
    y = torch.randint(5, (workers * PER_RANK,), generator=g)
    return x, y


class RankSplit:
    """A controller whose answer depends on the rank it runs on: only rank
    0's may count, so every rank must run g-binary."""

    def __init__(self, rank: int):
        self.rank = rank

    def decide(self, ctx):
        return {g: ("g-binary" if self.rank == 0 else "fp32") for g in ctx.policy_modes}


class Flaky:
    """A controller that fails at step 2 (a lost control service)."""

    def decide(self, ctx):
        if ctx.step == 2:
            raise ConnectionError("control service unreachable")
        return ctx.policy_modes


def scenario(rank: int, workers: int, name: str, policy: str, hook: str = "nfabric", ctl: Optional[str] = None,
             nan_rank: Optional[int] = None, bucket_cap_mb: float = 0.0005, backend: str = "collective",
             serve: Optional[str] = None, layout: str = "worker-major", rungs: Optional[str] = None,
             record: Optional[str] = None, dtype: str = "float32", compiled: Optional[str] = None) -> Dict[str, Any]:
    if compiled and not hasattr(torch, "compile"):
        return {"skipped": f"torch {torch.__version__} has no torch.compile"}
    if dtype == "bfloat16" and int(torch.__version__.split(".")[0]) < 2:
        return {"skipped": f"gloo in torch {torch.__version__} has no bfloat16 all-reduce"}
    model = make_model().to(getattr(torch, dtype))
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    fabric = None
    if hook == "allreduce":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    else:
        if ctl == "serve-admit":
            c = nt.serve.ServeControl(serve, default="fp32", warmup=2, ladder_rungs="g-binary:-1,g-ternary:0.5",
                                      diag_every=1)
        elif ctl == "serve-diag":  # the controller's ladder (rungs; None: the paper's two), diagnostics every step
            kw = {"ladder_rungs": rungs} if rungs is not None else {}
            c = nt.serve.ServeControl(serve, default="fp32", warmup=1, diag_every=1, **kw)
        else:
            c = {None: None, "warmup": control.Warmup(2), "ranksplit": RankSplit(rank), "flaky": Flaky()}[ctl]
        from nfabric.policy import Policy
        rec = {"record": record, "record_steps": [1], "record_diagnostics": True} if record else {}
        fabric = nt.register(ddp, Policy.parse(policy, lr=LR, sign_lr=SIGN_LR, layout=layout), control=c,
                             backend=backend, serve=serve, **rec)
    run = torch.compile(ddp, backend=compiled) if compiled else ddp
    opt = torch.optim.SGD(ddp.parameters(), lr=LR, momentum=0.9)
    out: Dict[str, Any] = {"params": [], "grads": [], "raw": [], "buckets": [], "warnings": [], "modes": []}
    names = [n for n, _ in model.named_parameters()]
    raw: Dict[str, torch.Tensor] = {}
    target = "2.weight"
    armed = [False]

    def poison(g):
        if not armed[0]:
            return g
        g = g.clone()
        g.view(-1)[3] = float("nan")
        return g
    # Registered before the capture hooks, so "raw" sees the poisoned value.
    dict(model.named_parameters())[target].register_hook(poison)
    for n, p in model.named_parameters():
        def capture(g, n=n):
            raw[n] = g.detach().clone()
            return g
        p.register_hook(capture)
    for step in range(STEPS):
        x, y = batch(step, workers)
        xs, ys = torch.tensor_split(x, workers)[rank], torch.tensor_split(y, workers)[rank]
        xs = xs.to(getattr(torch, dtype))
        armed[0] = nan_rank == rank and step == 2
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(run(xs).float(), ys)
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            loss.backward()
        out["warnings"].append([str(m.message) for m in w])
        out["grads"].append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
        out["raw"].append(dict(raw))
        if fabric is not None:
            out["buckets"].append(dict(fabric.buckets))
            out["modes"].append({g: str(f) for g, f in fabric.modes.items()})
        opt.step()
        out["params"].append({n: p.detach().clone() for n, p in model.named_parameters()})
    out["names"] = names
    if fabric is not None:
        if ctl == "serve-admit" and rank == 0:
            out["replay"] = c.replay_matches()
            out["actions"] = list(c.actions)
        if ctl == "serve-diag" and rank == 0:
            out["diag"] = sent_diagnostics(c)
            out["replay"] = c.replay_matches()
        out["stats"] = fabric.stats.summary()
        out["history"] = fabric.stats.history
        fabric.close()
    return out


def worker(rank: int, workers: int, init: str, result_dir: str, scenarios: List[Dict[str, Any]]) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=workers)
    results = {}
    try:
        for sc in scenarios:
            try:
                if sc["name"] == "rank0-control":
                    results[sc["name"]] = control_on_rank0_only(rank, workers)
                    continue
                results[sc["name"]] = scenario(rank, workers, **sc)
            except Exception:  # reported to the test process, which fails with it
                results[sc["name"]] = {"error": traceback.format_exc()}
                raise
    finally:
        with open(os.path.join(result_dir, f"rank{rank}.pkl"), "wb") as f:
            pickle.dump(results, f)
        dist.destroy_process_group()


def control_on_rank0_only(rank: int, workers: int) -> Dict[str, Any]:
    """register with a controller on rank 0 only must fail on every rank."""
    ddp = DDP(make_model())
    try:
        nt.register(ddp, "g-binary", control=control.Warmup(1) if rank == 0 else None)
    except ValueError as e:
        return {"error_message": str(e)}
    return {"error_message": None}


def sent_diagnostics(ctl) -> List[Any]:
    """The diag events the plane received in ctl's session (its Dump):
    (step, group, G-Binary's cosine, G-Ternary's, {other mode name: cosine})."""
    c = ctl.client
    dump = c.call(c.control.Dump, c.kpb.DumpRequest(session=ctl.session), "Dump")
    out = []
    for e in dump.events:
        if e.event.WhichOneof("event") == "diag":
            d = e.event.diag
            cos = {c.cpb.Mode.Name(m.mode): m.cosine for m in d.cosines}
            out.append((d.step, d.group, cos.pop("MODE_G_BINARY"), cos.pop("MODE_G_TERNARY"), cos))
    return out
