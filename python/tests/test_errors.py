"""Bad input gets a clear error naming it, before any training step."""

from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import nfabric.torch as nt
from nfabric.policy import Policy, parse_rule_spec
from nfabric.torch.control import Warmup


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


class NoLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)

    def forward(self, x):
        return self.conv(x).mean((2, 3))


def test_default_groups_put_the_final_classifier_in_head() -> None:
    a = nt.assign_groups(mlp())
    assert [(p.name, p.group) for p in a.params] == [("0.weight", "backbone"), ("0.bias", "backbone"),
                                                     ("2.weight", "head"), ("2.bias", "head")]
    assert [p.flat_base for p in a.params] == [0, 32, 40, 64]
    assert "group head: 2 tensors, 27 elements" in a.report()


@pytest.mark.parametrize("model,groups,match", [
    (NoLinear(), None, "cannot find a final classifier"),
    (torch.nn.Linear(3, 2), None, "single Linear layer"),
    (mlp(), {"head": ["2"]}, r"parameters \['0.weight', '0.bias'\] match no group"),
    (mlp(), {"head": ["fc"], "backbone": ["*"]}, r"group\(s\) \['head'\] match no trainable parameter"),
    (mlp(), {"head": "2"}, "must be a non-empty list"),
])
def test_ungroupable_models(model, groups, match) -> None:
    with pytest.raises(nt.GroupError, match=match):
        nt.VirtualWorkers(model, 2, "g-binary", groups=groups)


@pytest.mark.parametrize("policy,match", [
    ("backbone=g-binary,classifier=fp32", r"unknown group\(s\) \['classifier'\]"),
    ("backbone=g-binary", r"no rule for group\(s\) \['head'\]"),
    ("backbone=g-binary,backbone=fp32", "given twice"),
    ("g-binary/margin:2", "a gate applies to g-ternary only"),
    ("g-ternary/margin:0", "threshold 0 out of range"),
    ("fp32+ef", "error feedback applies to g-binary and g-ternary"),
    ("g-binary@-1", "not a positive number"),
    ("majority-sign", "software baseline"),
    ("int4", "unknown format"),
])
def test_bad_policies(policy, match) -> None:
    with pytest.raises(ValueError, match=match):
        nt.VirtualWorkers(mlp(), 2, policy)


def test_world_size_above_the_layout_limit() -> None:
    with pytest.raises(ValueError, match="9 workers is more than the element-major layout carries"):
        nt.VirtualWorkers(mlp(), 9, Policy.parse("g-binary", layout="element-major"))
    with pytest.raises(ValueError, match="1025 workers is more than the worker-major layout"):
        nt.VirtualWorkers(mlp(), 1025, "g-binary")
    # FP32 everywhere and no controller: no payload layout limit applies.
    nt.VirtualWorkers(mlp(), 9, Policy.parse("fp32", layout="element-major"))


def test_backend_checks() -> None:
    from nfabric.torch.fabric import resolve_control
    with pytest.raises(ValueError, match="backend='controller' needs serve='ADDRESS'"):
        resolve_control("controller", None, None)
    with pytest.raises(ValueError, match="unknown backend 'nccl'"):
        resolve_control("nccl", None, None)


@pytest.fixture
def world1(tmp_path):
    dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp_path, "init"), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_register_checks_before_training(world1) -> None:
    ddp = DDP(mlp())
    with pytest.raises(ValueError, match="unknown group"):
        nt.register(ddp, "backbone=g-binary,tail=fp32")
    with pytest.raises(ValueError, match="backend='controller' needs serve="):
        nt.register(ddp, "g-binary", backend="controller")
    with pytest.raises(nt.serve.ServeError, match="unreachable|grpcio|nfabric._proto"):
        nt.register(ddp, "g-binary", control="/nonexistent/nfabric.sock")
    with pytest.raises(nt.serve.ServeError, match="unreachable|grpcio|nfabric._proto"):
        nt.register(ddp, "g-binary", backend="controller", serve="/nonexistent/nfabric.sock")
    with pytest.raises(TypeError, match="DistributedDataParallel"):
        nt.register(mlp(), "g-binary")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a controller"):
        nt.register(ddp, "g-binary", control=42)
    f = nt.register(ddp, "g-ternary")
    loss = ddp(torch.randn(4, 4)).sum()
    loss.backward()
    assert f.stats.steps == 1 and f.stats.summary()["low_bit_step_fraction"] == 1.0


def test_rule_spec_syntax_round_trips() -> None:
    for s in ["g-binary", "g-ternary/margin:2", "g-ternary/worker:0.5", "g-binary+ef@0.001", "fp32@0.05",
              "g-ternary/pattern:5"]:
        assert str(parse_rule_spec(s)) == s


def test_values_refused_at_construction() -> None:
    # Values a caller cannot mean are refused where they are given:
    # Warmup(nan) once meant no warm-up, a fractional worker
    # count failed only at the first step, and pattern:0 meant pattern:3.
    for bad in [float("nan"), 2.5, -1, True]:
        with pytest.raises(ValueError, match="warm-up steps"):
            Warmup(bad)
    assert Warmup(0).steps == 0 and Warmup(5).steps == 5
    for bad in [2.5, float("nan"), True]:
        with pytest.raises(ValueError, match="want a whole number"):
            nt.VirtualWorkers(mlp(), bad, "g-binary")
    with pytest.raises(ValueError, match="pattern period 0"):
        nt.VirtualWorkers(mlp(), 2, "g-ternary/pattern:0")
