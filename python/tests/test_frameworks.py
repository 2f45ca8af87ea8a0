"""Lightning and Accelerate with their one added line (and, without them,
a stand-in of Lightning's call order): each trains 2 gloo ranks to the
same parameters as the virtual workers on the same shards, bit for bit
(the FP32 head exactly too: two ranks' mean rounds the same either way).
CI installs lightning 2.6.6 and accelerate 1.16.0 into its torch 2.15
environment; elsewhere those two tests skip, saying so."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys

import pytest
import torch
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
import fw_worker as F  # noqa: E402

from nfabric.torch import VirtualWorkers  # noqa: E402

W = 2


def virtual(batches) -> dict:
    net = F.make_net()
    v = VirtualWorkers(net, W, F.policy())
    opt = torch.optim.SGD(net.parameters(), lr=F.LR, momentum=0.9)
    v.attach_optimizer(opt)
    for b in batches:
        opt.zero_grad()
        v.step(b)
        opt.step()
    return F.params(net)


def contiguous_batches():
    """Accelerate's sharding (and the virtual workers' split): step s, rank
    r takes loader batch s * W + r."""
    x, y = F.dataset(W).tensors
    n = W * F.PER_RANK
    return [(x[s * n:(s + 1) * n], y[s * n:(s + 1) * n]) for s in range(F.STEPS)]


def interleaved_batches(shuffled: bool = False):
    """DistributedSampler: rank r takes positions r, r + W, ... of the
    sample order (shuffled: torch.randperm seeded 0, which Lightning's
    sampler for a training loader uses); the virtual batch stacks the
    ranks' batches in rank order."""
    x, y = F.dataset(W).tensors
    order = list(range(len(x)))
    if shuffled:
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0)).tolist()
    out = []
    for s in range(F.STEPS):
        idx = [order[i] for r in range(W) for i in list(range(r, len(x), W))[s * F.PER_RANK:(s + 1) * F.PER_RANK]]
        out.append((x[idx], y[idx]))
    return out


def check(tmp, prefix, want):
    for r in range(W):
        got = torch.load(os.path.join(tmp, f"{prefix}-rank{r}.pt"))
        assert got["kind"] == "ddp"
        for n, p in want.items():
            assert torch.equal(got["params"][n], p), f"{prefix} rank {r} {n}: max |d| {(got['params'][n] - p).abs().max()}"
        assert got["stats"]["steps"] == F.STEPS and got["stats"]["low_bit_step_fraction"] == 1.0
    return got


def test_lightning_callback_one_line(tmp_path):
    if importlib.util.find_spec("lightning") is None:
        pytest.skip("skipped: lightning is not installed (CI installs lightning==2.6.6 into its torch 2.15 env; "
                    "pip install lightning)")
    F.lightning_run(W, str(tmp_path))
    got = check(str(tmp_path), "lightning", virtual(interleaved_batches(shuffled=True)))
    assert sorted(k for k in got["state"] if k.startswith("rank")) == ["rank0", "rank1"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_accelerate_one_line(tmp_path):
    if importlib.util.find_spec("accelerate") is None:
        pytest.skip("skipped: accelerate is not installed (CI installs accelerate==1.16.0 into its torch 2.15 env; "
                    "pip install accelerate)")
    mp.spawn(F.accelerate_worker, args=(W, _port(), str(tmp_path)), nprocs=W, join=True)
    got = check(str(tmp_path), "accelerate", virtual(contiguous_batches()))
    assert got["type"] == "DistributedDataParallel"


def test_lightning_call_order_standin(tmp_path):
    """Without Lightning: the callback bound in on_fit_start, a checkpoint of
    every rank's state restored into a new callback before its model exists
    (as Lightning restores callbacks), the same parameters as an
    uninterrupted virtual run."""
    init = "file://" + os.path.join(str(tmp_path), "init")
    mp.spawn(F.standin_worker, args=(W, init, str(tmp_path)), nprocs=W, join=True)
    got = check(str(tmp_path), "standin", virtual(interleaved_batches()))
    assert got["state_ranks"] == ["rank0", "rank1"]
