"""Virtual workers: shards, the NaN/Inf fallback, error feedback and the
learning-rate hand-off, each against a closed form."""

from __future__ import annotations

import torch

import nfabric.torch as nt
from nfabric.lowbit import Format
from nfabric.policy import Policy


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))


def test_split_sizes_and_structures() -> None:
    x = torch.arange(10)
    assert [len(s) for s in nt.virtual.split(x, 4)] == [3, 3, 2, 2]
    parts = nt.virtual.split(({"a": torch.zeros(8, 2)}, torch.ones(8)), 4)
    assert len(parts) == 4 and parts[0][0]["a"].shape == (2, 2) and parts[3][1].shape == (2,)


def test_gbinary_update_is_the_scaled_majority_vote() -> None:
    model = mlp()
    v = nt.VirtualWorkers(model, 3, Policy.parse("g-binary", lr=0.1, sign_lr=0.002))
    batch = (torch.randn(9, 5), torch.randint(3, (9,)))
    grads, _ = v.shard_grads(batch)
    v.step(batch)
    for g, gr in grads.items():
        u = torch.sign(2 * (gr > 0).sum(0) - 3).float()
        got = torch.cat([p.param.grad.reshape(-1) for p in v.assignment.members(g)])
        assert torch.equal(got, u * torch.tensor(0.002 / 0.1, dtype=torch.float32)), g


def test_nonfinite_shard_sends_the_group_to_fp32() -> None:
    model = mlp()
    v = nt.VirtualWorkers(model, 2, "g-binary")
    batch = (torch.randn(4, 5), torch.randint(3, (4,)))
    batch[0][3, 0] = float("nan")  # only the second shard's input
    v.step(batch)
    assert [(e.step, e.reason) for e in v.stats.events] == [(0, "nonfinite"), (0, "nonfinite")]
    assert torch.isnan(model[0].weight.grad).any()
    assert v.stats.history[0]["modes"] == {"head": "fp32", "backbone": "fp32"}


def test_error_feedback_closed_form() -> None:
    """e <- p - s (2b - 1), s = mean |p| over each tensor, p = g + e."""
    from nfabric.torch.core import Segments, ef_commit
    from nfabric.torch.groups import assign_groups
    a = assign_groups(mlp())
    seg = Segments(a.members("head"), [0, 21])
    g1, g2 = torch.randn(24), torch.randn(24)
    e = torch.zeros(24)
    ef_commit(g1.clone(), e, seg)
    want = torch.cat([t - t.abs().mean() * torch.where(t > 0, 1.0, -1.0) for t in (g1[:21], g1[21:])])
    assert torch.allclose(e, want, atol=1e-7)
    p = g2 + e
    ef_commit(p.clone(), e, seg)
    want2 = torch.cat([t - t.abs().mean() * torch.where(t > 0, 1.0, -1.0) for t in (p[:21], p[21:])])
    assert torch.allclose(e, want2, atol=1e-7)


def test_mode_switch_resets_momentum() -> None:
    from nfabric.torch import control
    model = mlp()
    v = nt.VirtualWorkers(model, 2, "g-binary", control=control.Warmup(1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    v.attach_optimizer(opt)
    batch = (torch.randn(4, 5), torch.randint(3, (4,)))
    for _ in range(2):
        opt.zero_grad()
        v.step(batch)
        if v.modes["head"] == Format.FP32:
            opt.step()
            assert all("momentum_buffer" in opt.state[p] for p in model.parameters())
    assert v.velocity_resets == 4  # every tensor switched FP32 -> G-Binary once
    assert all("momentum_buffer" not in opt.state[p] for p in model.parameters())
