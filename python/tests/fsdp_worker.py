"""The per-rank side of the FSDP2 tests: the same small model trained a few
steps under fully_shard (each Linear its own unit, then the root), under
DDP with the hook, or under FSDP2's own reduce-scatter, returning every
step's full parameters and gradients for the test process to compare
with each other and with a single-process virtual-worker run."""

from __future__ import annotations

import os
import pickle
import traceback
import warnings
from typing import Any, Dict, List, Optional

import torch
import torch.distributed as dist

import nfabric.torch as nt
from nfabric.policy import Policy
from nfabric.torch import control

STEPS = 4
PER_RANK = 6
LR, SIGN_LR = 0.05, 0.01
ARMED = [False]


class Poison(torch.nn.Module):
    """Identity; when armed, the gradient through it gets a NaN (so the
    Linear before it, unit "0", holds a NaN on this rank)."""

    def forward(self, x):
        return _PoisonFn.apply(x)


class _PoisonFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        if ARMED[0]:
            g = g.clone()
            g.view(-1)[3] = float("nan")
        return g


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    # 5 output rows of the last layer do not split evenly over 2 or 4 ranks:
    # FSDP pads, and rank 3 of 4 holds none of them.
    return torch.nn.Sequential(torch.nn.Linear(12, 520), Poison(), torch.nn.ReLU(), torch.nn.Linear(520, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 5))


def batch(step: int, workers: int):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(workers * PER_RANK, 12, generator=g)
    y = torch.randint(5, (workers * PER_RANK,), generator=g)
    return x, y


def full(t: torch.Tensor) -> torch.Tensor:
    ft = getattr(t, "full_tensor", None)
    return (ft() if callable(ft) else t).detach().clone()


class Flaky:
    def decide(self, ctx):
        if ctx.step == 2:
            raise ConnectionError("control service unreachable")
        return ctx.policy_modes


def wrap(model: torch.nn.Module, how: str, mp: Optional[str] = None) -> torch.nn.Module:
    if how == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, bucket_cap_mb=0.0005)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    kw = {}
    if mp == "bf16-reduce":
        kw["mp_policy"] = MixedPrecisionPolicy(reduce_dtype=torch.bfloat16)
    for i in (0, 3, 5):
        fully_shard(model[i], **kw)
    fully_shard(model, **kw)
    return model


def scenario(rank: int, workers: int, name: str, policy: str, how: str = "fsdp", hook: bool = True,
             ctl: Optional[str] = None, nan_rank: Optional[int] = None, groups=None, mp: Optional[str] = None,
             steps: int = STEPS, resume_at: Optional[int] = None, ckpt: Optional[str] = None,
             sign_lr: Any = SIGN_LR, record: Optional[str] = None) -> Dict[str, Any]:
    if isinstance(resume_at, dict):  # {workers: step}
        resume_at = resume_at[workers]
    model = wrap(make_model(), how, mp)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    fabric = None

    def new_fabric():
        c = {None: None, "warmup": control.Warmup(2), "flaky": Flaky()}[ctl]
        rec = {"record": record, "record_steps": [1]} if record else {}
        return nt.register(model, Policy.parse(policy, lr=LR, sign_lr=sign_lr), groups=groups, control=c,
                           optimizer=opt, **rec)
    if hook:
        fabric = new_fabric()
    inner = model.module if how == "ddp" else model
    out: Dict[str, Any] = {"params": [], "grads": [], "warnings": [], "modes": [], "buckets": []}
    for step in range(steps):
        if resume_at is not None and step == resume_at:
            model, opt, fabric = _restart(how, mp, policy, ckpt, model, opt, fabric, new_fabric_args=(ctl, groups, sign_lr))
            inner = model.module if how == "ddp" else model
        x, y = batch(step, workers)
        xs, ys = torch.tensor_split(x, workers)[rank], torch.tensor_split(y, workers)[rank]
        ARMED[0] = nan_rank == rank and step == 2
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xs), ys)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            loss.backward()
        ARMED[0] = False
        out["warnings"].append([str(m.message) for m in w])
        out["grads"].append({n: full(p.grad) for n, p in inner.named_parameters()})
        if fabric is not None:
            out["modes"].append({g: str(f) for g, f in fabric.modes.items()})
            out["buckets"].append(dict(fabric.buckets))
        opt.step()
        out["params"].append({n: full(p) for n, p in inner.named_parameters()})
    if fabric is not None:
        out["stats"] = fabric.stats.summary()
        out["history"] = fabric.stats.history
        fabric.close()
    return out


def _restart(how, mp, policy, ckpt, model, opt, fabric, new_fabric_args):
    """Saves model, optimizer and fabric with torch.distributed.checkpoint,
    then builds everything anew (as a restarted job does) and loads it."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd, "fabric": fabric}, checkpoint_id=ckpt)
    dist.barrier()
    ctl, groups, sign_lr = new_fabric_args
    model = wrap(make_model(), how, mp)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    c = {None: None, "warmup": control.Warmup(2), "flaky": Flaky()}[ctl]
    fabric = nt.register(model, Policy.parse(policy, lr=LR, sign_lr=sign_lr), groups=groups, control=c, optimizer=opt)
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "fabric": fabric}
    dcp.load(state, checkpoint_id=ckpt)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return model, opt, fabric


def refusals(rank: int, workers: int) -> Dict[str, Any]:
    """register on FSDP2 configurations it refuses: each message."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor import Shard
    out = {}

    def attempt(key, build, **kw):
        try:
            nt.register(build(), "g-binary", **kw)
            out[key] = None
        except (ValueError, TypeError, RuntimeError) as e:
            out[key] = str(e)

    def fp16():
        m = make_model()
        return fully_shard(m, mp_policy=MixedPrecisionPolicy(reduce_dtype=torch.float16))

    def shard1():
        m = make_model()
        return fully_shard(m, shard_placement_fn=lambda p: Shard(1) if p.dim() == 2 else Shard(0))

    def only_children():
        m = make_model()
        fully_shard(m[0])
        return m

    def hsdp():
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (2, workers // 2), mesh_dim_names=("replicate", "shard"))
        return fully_shard(make_model(), mesh=mesh)

    def divide():
        m = fully_shard(make_model())
        m.set_gradient_divide_factor(3.0)
        return m

    attempt("fp16", fp16)
    attempt("shard1", shard1)
    attempt("children", only_children)
    attempt("divide", divide)
    attempt("diag", lambda: fully_shard(make_model()), record="/nonexistent-dir-nfabric/x.json",
            record_diagnostics=True)
    if workers >= 4:
        attempt("hsdp", hsdp)
    # An fp16 reduce dtype is fine when nothing can run low-bit.
    try:
        nt.register(fp16(), "fp32")
        out["fp16-fp32"] = None
    except (ValueError, TypeError) as e:
        out["fp16-fp32"] = str(e)
    return out


def worker(rank: int, workers: int, init: str, result_dir: str, scenarios: List[Dict[str, Any]]) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=workers)
    results = {}
    try:
        for sc in scenarios:
            try:
                if sc["name"] == "refusals":
                    results["refusals"] = refusals(rank, workers)
                    continue
                results[sc["name"]] = scenario(rank, workers, **sc)
            except Exception:  # reported to the test process, which fails with it
                results[sc["name"]] = {"error": traceback.format_exc()}
                raise  # the other ranks may wait in a collective: end them all
    finally:
        with open(os.path.join(result_dir, f"rank{rank}.pkl"), "wb") as f:
            pickle.dump(results, f)
        dist.destroy_process_group()
