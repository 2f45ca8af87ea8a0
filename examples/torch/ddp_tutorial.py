#!/usr/bin/env python3
"""pytorch/examples' DDP tutorial job (distributed/ddp-tutorial-series,
multigpu_torchrun.py), adapted only for the CPU and synthetic data, with
nfabric's lines added (marked "nfabric"): the acceptance check that a
plain DDP job trains through the hook with no silent misconfiguration.

The tutorial's job: 2048 random samples of 20 features, a Linear(20, 1)
model, SGD at lr 1e-3, batch 32 per process, DistributedSampler, a
snapshot of the model every save_every epochs. Adapted: gloo instead of
NCCL, processes started by torch.multiprocessing instead of torchrun, and
MSE as the loss (the tutorial's CrossEntropyLoss over a single output is
identically zero, so its gradients are zero and nothing trains; with
G-Binary, zero gradients all vote -1 and the weights drift by sign_lr a
step: a trap worth knowing). The snapshot also holds the Fabric's state
(every rank's), so a restarted job resumes its step counter, residuals and
auto rates.

    python3 examples/torch/ddp_tutorial.py 10 5 --ranks 2 --policy g-binary --sign-lr auto --warmup 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

import nfabric.torch as nt  # nfabric
from nfabric.policy import Policy  # nfabric


class SyntheticRegression(Dataset):
    """The tutorial's MyTrainDataset in shape (20 features, one target),
    with a target a linear model can learn (the tutorial's is noise)."""

    def __init__(self, size: int, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.rand(size, 20, generator=g)
        w = torch.randn(20, 1, generator=g)
        self.y = self.x @ w + 0.1 * torch.randn(size, 1, generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every: int, snapshot_path: str, fabric) -> None:
        self.rank = dist.get_rank()
        self.train_data, self.optimizer, self.save_every = train_data, optimizer, save_every
        self.snapshot_path, self.epochs_run, self.losses = snapshot_path, 0, []
        self.model = DDP(model)
        self.fabric = fabric.bind(self.model, optimizer)  # nfabric (a plain script: no Lightning name clash)
        if os.path.exists(snapshot_path):
            self._load_snapshot(snapshot_path)

    def _load_snapshot(self, path: str) -> None:
        snap = torch.load(path, weights_only=False)
        self.model.module.load_state_dict(snap["MODEL_STATE"])
        self.optimizer.load_state_dict(snap["OPTIM_STATE"])
        self.fabric.load_state_dict(snap["NFABRIC_STATE"])  # nfabric
        self.epochs_run = snap["EPOCHS_RUN"]

    def _run_batch(self, source, targets) -> None:
        self.optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(source), targets)
        loss.backward()
        self.optimizer.step()
        self.fabric.observe(loss.item())  # nfabric: the controller sees the loss
        self.losses.append(loss.item())

    def _run_epoch(self, epoch: int) -> None:
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def _save_snapshot(self, epoch: int) -> None:
        state = self.fabric.all_ranks().state_dict()  # nfabric: every rank's residuals (a collective)
        if self.rank == 0:
            snap = {"MODEL_STATE": self.model.module.state_dict(), "OPTIM_STATE": self.optimizer.state_dict(),
                    "NFABRIC_STATE": state, "EPOCHS_RUN": epoch + 1}
            tmp = self.snapshot_path + ".tmp"
            torch.save(snap, tmp)
            os.replace(tmp, self.snapshot_path)

    def train(self, max_epochs: int) -> None:
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def run(rank: int, world: int, init: str, args: argparse.Namespace, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    torch.manual_seed(0)
    dataset = SyntheticRegression(2048)
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=False, sampler=DistributedSampler(dataset))
    steps = args.total_epochs * len(loader)
    sign_lr = args.sign_lr if args.sign_lr == "auto" else float(args.sign_lr)
    fabric = nt.Fabric(Policy.parse(args.policy, lr=args.lr, sign_lr=sign_lr),  # nfabric
                       groups={"head": ["*"]}, control=nt.control.Warmup(args.warmup), steps=steps)
    trainer = Trainer(model, loader, optimizer, args.save_every, args.snapshot, fabric)
    trainer.train(args.total_epochs)
    if rank == 0:
        tail = trainer.losses[-len(loader):] or trainer.losses
        with open(out, "w") as f:
            json.dump({"final_loss": sum(tail) / len(tail), "losses": trainer.losses,
                       "stats": trainer.fabric.stats.summary(), "auto_rates": trainer.fabric.auto.rate}, f)
    trainer.fabric.close()
    dist.destroy_process_group()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("total_epochs", type=int)
    ap.add_argument("save_every", type=int)
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3, help="the tutorial's SGD rate (policy.lr too)")
    ap.add_argument("--policy", default="g-binary")
    ap.add_argument("--sign-lr", default="auto", help="a number or auto")
    ap.add_argument("--warmup", type=int, default=20, help="FP32 steps first")
    ap.add_argument("--snapshot", default=None, help="snapshot path (default: a temporary one)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        args.snapshot = args.snapshot or os.path.join(tmp, "snapshot.pt")
        out = os.path.join(tmp, "result.json")
        mp.spawn(run, args=(args.ranks, "file://" + os.path.join(tmp, "init"), args, out), nprocs=args.ranks)
        res = json.load(open(out))
    st = res["stats"]
    print(f"final loss {res['final_loss']:.5f} (mean over the last epoch); {st['steps']} steps, low-bit step fraction "
          f"{st['low_bit_step_fraction']:.3f}, wire bytes/dense {st['ratio']:.4f}; auto rates {res['auto_rates']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
