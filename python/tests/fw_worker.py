"""The per-rank side of the framework tests: the same model and data
trained by Lightning (DDP, the NFabric callback), by Accelerate (the
prepared DDP model and one nt.register line) and, where neither is
installed, by a stand-in that calls the callback in Lightning's order."""

from __future__ import annotations

import os
from typing import Any, List

import torch
from torch.utils.data import DataLoader, TensorDataset

import nfabric.torch as nt
from nfabric.policy import Policy

STEPS, PER_RANK = 4, 6
LR, SIGN_LR = 0.05, 0.01
POLICY = "backbone=g-binary+ef,head=fp32"


def make_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5))


def dataset(workers: int) -> TensorDataset:
    g = torch.Generator().manual_seed(7)
    n = workers * PER_RANK * STEPS
    return TensorDataset(torch.randn(n, 12, generator=g), torch.randint(5, (n,), generator=g))


def policy() -> Policy:
    return Policy.parse(POLICY, lr=LR, sign_lr=SIGN_LR)


def params(m: torch.nn.Module) -> dict:
    return {n: p.detach().clone() for n, p in m.named_parameters()}


try:
    import lightning.pytorch as L
except ImportError:  # the tests that need it skip
    L = None

if L is not None:
    from nfabric.torch.lightning import NFabric

    class Mod(L.LightningModule):
        def __init__(self, workers: int, out: str) -> None:
            super().__init__()
            self.net = make_net()
            self.workers, self.out = workers, out

        def training_step(self, batch, i):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=LR, momentum=0.9)

        def train_dataloader(self):
            return DataLoader(dataset(self.workers), batch_size=PER_RANK, shuffle=False)

        def on_train_end(self) -> None:
            cb = next(c for c in self.trainer.callbacks if isinstance(c, NFabric))
            torch.save({"params": params(self.net), "stats": cb.fabric.stats.summary(), "kind": cb.fabric.kind,
                        "state": cb.state_dict()},
                       os.path.join(self.out, f"lightning-rank{self.global_rank}.pt"))


def lightning_run(workers: int, out: str) -> None:
    """Trainer(strategy="ddp_spawn", devices=W, CPU) with the callback: the
    one added line is callbacks=[NFabric(...)]."""
    torch.set_num_threads(1)
    trainer = L.Trainer(accelerator="cpu", devices=workers, strategy="ddp_spawn", max_steps=STEPS, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[NFabric(policy())])
    trainer.fit(Mod(workers, out))


def accelerate_worker(rank: int, workers: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(workers), LOCAL_WORLD_SIZE=str(workers),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from accelerate import Accelerator
    acc = Accelerator(cpu=True)
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=0.9)
    dl = DataLoader(dataset(workers), batch_size=PER_RANK, shuffle=False)
    model, opt, dl = acc.prepare(net, opt, dl)
    fabric = nt.register(model, policy(), optimizer=opt)  # the one added line
    for x, y in dl:
        opt.zero_grad()
        acc.backward(torch.nn.functional.cross_entropy(model(x), y))
        opt.step()
    torch.save({"params": params(acc.unwrap_model(model)), "stats": fabric.stats.summary(), "kind": fabric.kind,
                "type": type(model).__name__}, os.path.join(out, f"accelerate-rank{rank}.pt"))
    acc.end_training()


class _Strategy:
    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model


class _Trainer:
    """What the callback reads of a Lightning Trainer."""

    def __init__(self, model: torch.nn.Module, optimizers: List[Any]) -> None:
        self.strategy, self.optimizers = _Strategy(model), optimizers


def standin_worker(rank: int, workers: int, init: str, out: str) -> None:
    """Lightning's order without Lightning: the callback exists first, fit
    wraps the model in DDP and makes the optimizer, on_fit_start binds,
    batches run with on_train_batch_end, on_train_end; a checkpoint's
    callback state is written (every rank gathers) and restored into a new
    callback before the model exists, as Lightning restores callbacks."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from nfabric.torch.lightning import NFabric as NFabricCb
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=workers)
    try:
        cb = NFabricCb(policy())
        ds = dataset(workers)
        model = DDP(make_net())
        opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
        cb.on_fit_start(_Trainer(model, [opt]), model.module)
        idx = list(range(rank, len(ds), workers))  # DistributedSampler(shuffle=False)
        state = None
        for s in range(STEPS):
            if s == 2:  # a checkpoint, then a restart into a new callback and model
                state = cb.state_dict()
                msd, osd = model.module.state_dict(), opt.state_dict()
                cb = NFabricCb(policy())
                cb.load_state_dict(state)
                model = DDP(make_net())
                model.module.load_state_dict(msd)
                opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
                opt.load_state_dict(osd)
                cb.on_fit_start(_Trainer(model, [opt]), model.module)
            x, y = ds[idx[s * PER_RANK:(s + 1) * PER_RANK]]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            cb.on_train_batch_end(None, model.module, {"loss": loss}, (x, y), s)
        cb.on_train_end(None, model.module)
        torch.save({"params": params(model.module), "stats": cb.fabric.stats.summary(), "kind": cb.fabric.kind,
                    "state_ranks": sorted(k for k in state if k.startswith("rank"))},
                   os.path.join(out, f"standin-rank{rank}.pt"))
    finally:
        dist.destroy_process_group()
